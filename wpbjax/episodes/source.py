"""Where a sweep's episodes come from, as a value: JSONL files, or a generator's configs.

A "file" ``real:NAME[:STEPS[:STRIDE]][:train|:test]`` names the windows of a real API history
(:mod:`wpbjax.episodes.importers.real_drift`; ``real:stripe`` is shipped), recorded with its history's SHA-256;
``changelog:NAME[:STEPS[:STRIDE]]`` the windows of a Markdown changelog (:mod:`wpbjax.episodes.importers.changelog_episode`).

An :class:`EpisodeSource` rebuilds the same encoded episodes wherever it is loaded: the sweep
records ``source.to_dict()`` in its sidecar, and the report (or a resumed sweep) rebuilds the
episodes with ``EpisodeSource.from_dict(meta["episodes"]).load()`` — files are checked against
their recorded SHA-256 first. Generator engines: ``python`` (the published generator, draw for
draw) and ``jax`` (on device, with the new regimes).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

ENGINES = ("python", "jax")
DEFAULT_MODES = ("default", "burst_drift", "redundancy", "burst_redundancy")


def check_engine(engine: str) -> str:
    """``engine`` if it is a generator engine, else a ValueError."""
    if engine not in ENGINES:
        raise ValueError(f"engine: unknown generator engine {engine!r}; expected one of {', '.join(ENGINES)}")
    return engine


def config_class(engine: str):
    """The generator config class of ``engine``: DriftConfig (python) or JaxGenConfig (jax)."""
    if check_engine(engine) == "jax":
        from wpbjax.episodes.generators.jax_gen import JaxGenConfig

        return JaxGenConfig
    from wpbjax.episodes.generators.published_gen import DriftConfig

    return DriftConfig


def generator_config(engine: str, mode: str, **knobs):
    """One mode's generator config; ``knobs`` are its fields (``seed``, ``steps``, ``drift_prob``, ...;
    the jax engine's extra knobs are ignored by the python engine, so one set serves both)."""
    from wpbjax.episodes.generators.jax_gen import JAX_MODES, JaxGenConfig
    from wpbjax.episodes.generators.published_gen import MODES

    engine = check_engine(engine)
    known = {field.name for field in dataclasses.fields(JaxGenConfig)} - {"mode"}
    if set(knobs) - known:
        raise ValueError(
            f"unknown generator setting {', '.join(sorted(set(knobs) - known))}; "
            f"expected some of {', '.join(sorted(known))}"
        )
    allowed = JAX_MODES if engine == "jax" else MODES
    if mode not in allowed:
        hint = " (the new regimes need the jax engine)" if mode in JAX_MODES else ""
        raise ValueError(f"unknown mode {mode!r} for the {engine} engine; expected some of {', '.join(allowed)}{hint}")
    cls = config_class(engine)
    fields = {field.name for field in dataclasses.fields(cls)} - {"mode"}
    return cls(mode=mode, **{name: value for name, value in knobs.items() if name in fields})


@dataclasses.dataclass(frozen=True)
class EpisodeSource:
    """Episodes from ``files`` (JSONL; one episode set per file), or ``n_episodes`` of each generator
    config in ``configs`` (one set per config) by ``engine``. Build one with :meth:`from_files` or
    :meth:`generated`."""

    files: tuple = ()  # JSONL paths
    sha256: tuple | None = None  # the files' recorded SHA-256 (checked by load), or None
    engine: str = "python"  # "python" | "jax"
    configs: tuple = ()  # DriftConfig / JaxGenConfig per mode
    n_episodes: int = 0  # generated episodes per config

    def __post_init__(self):
        if bool(self.files) == bool(self.configs):
            raise ValueError("episodes: give either episode files or generator configs")
        object.__setattr__(self, "engine", check_engine(self.engine))
        if self.configs and self.n_episodes < 1:
            raise ValueError(f"n_episodes must be >= 1; got {self.n_episodes}")

    @classmethod
    def from_files(cls, paths: Sequence[str | os.PathLike] | str | os.PathLike) -> EpisodeSource:
        paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        return cls(files=tuple(os.fspath(path) for path in paths))

    @classmethod
    def generated(
        cls, modes: Sequence[str] | str = DEFAULT_MODES, n_episodes: int = 10, engine: str = "python", **knobs
    ) -> EpisodeSource:
        """``n_episodes`` per mode; ``knobs``: ``seed``, ``steps`` and the generator's other fields."""
        modes = [mode for mode in (modes.split(",") if isinstance(modes, str) else modes) if mode]
        if not modes:
            raise ValueError("modes: give at least one mode")
        configs = tuple(generator_config(engine, mode, **knobs) for mode in modes)
        return cls(engine=engine, configs=configs, n_episodes=int(n_episodes))

    @property
    def kind(self) -> str:
        return "files" if self.files else "generated"

    def load(self):
        """The episodes, encoded (:class:`wpbjax.episodes.encode.EncodedEpisodes`)."""
        return self.load_sets()[0]

    def load_sets(self) -> tuple:
        """(encoded episodes, [N] int64 episode set of each episode: its file's or config's number)."""
        if self.files:
            return self._load_files()
        from wpbjax.episodes import cache

        episode_steps = len(self.configs) * self.n_episodes * max(config.steps for config in self.configs)
        # the python engine's sets are kept on disk for the next sweep of the set (the jax engine's are
        # made on device in a fraction of the time)
        if self.engine == "python" and episode_steps <= cache.MAX_GENERATED_EPISODE_STEPS:
            encoded = cache.cached({"kind": "generated", **self.to_dict()}, self._generate)
        else:
            encoded = self._generate()
        return encoded, np.repeat(np.arange(len(self.configs), dtype=np.int64), self.n_episodes)

    def _generate(self):
        """The generated episodes, encoded (config-major)."""
        if self.engine == "jax":  # generated on device, never through JSON
            import wpbjax.episodes.generators.jax_gen as jax_gen

            return jax_gen.generate_encoded(list(self.configs), self.n_episodes)
        from wpbjax.episodes.generators.parallel import generate_encoded

        return generate_encoded(list(self.configs), self.n_episodes)

    @property
    def n_total(self) -> int | None:
        """Episodes a generated source makes (configs x n_episodes); None for files."""
        return None if self.files else len(self.configs) * self.n_episodes

    def load_range(self, start: int, stop: int) -> tuple:
        """(encoded episodes, [n] set index) of the generated episodes numbered ``start .. stop-1``
        (config-major, as :meth:`load_sets` orders them); each is generated alone, from its own seed,
        so a range equals that slice of the whole set (up to the priority ranks' numbering, which
        keeps their order). The python engine only."""
        if self.files or self.engine != "python":
            raise ValueError("load_range: generated episodes of the python engine only")
        if not 0 <= start < stop <= self.n_total:
            raise ValueError(f"load_range: expected 0 <= start < stop <= {self.n_total}; got {start}, {stop}")
        from wpbjax.episodes.generators.parallel import generate_encoded

        encoded = generate_encoded(list(self.configs), self.n_episodes, start=start, stop=stop)
        return encoded, np.arange(start, stop, dtype=np.int64) // self.n_episodes

    def _load_files(self) -> tuple:
        from wpbjax.episodes.encode import concat_encoded, encode_episodes
        from wpbjax.episodes.importers import changelog_episode, real_drift
        from wpbjax.episodes.jsonl import load_jsonl
        from wpbjax.files.results_io import sha256

        for index, path in enumerate(self.files):
            if self.sha256 is not None:
                if changelog_episode.is_changelog(path):
                    if changelog_episode.spec_sha256(path) != self.sha256[index]:
                        raise ValueError(f"episodes {path}: its changelog changed since the sweep (SHA-256 differs)")
                    continue
                if real_drift.is_real(path):
                    if real_drift.spec_sha256(path) != self.sha256[index]:
                        raise ValueError(f"episodes {path}: its history changed since the sweep (SHA-256 differs)")
                    continue
                if not os.path.exists(path):
                    raise ValueError(f"episode file {path} (named in the run metadata) not found")
                if sha256(path) != self.sha256[index]:
                    raise ValueError(f"episode file {path} changed since the sweep (SHA-256 differs)")
        from wpbjax.episodes.validate import check_episode_ids, episode_ids

        labels = real_drift.labels(self.files)  # two history files of one name: distinct episode ids
        # a real spec's windows come encoded (validated, and cached on disk: wpbjax.episodes.cache); the rest
        # as dict episodes (load_jsonl validated them), encoded below to the sweep's common T
        sets = [
            real_drift.load_encoded(path, labels[path])
            if real_drift.is_real(path)
            else changelog_episode.load_spec(path)
            if changelog_episode.is_changelog(path)
            else load_jsonl(path)
            for path in self.files
        ]
        ids = [
            list(part.episode_id) if real_drift.is_real(path) else episode_ids(part)
            for path, part in zip(self.files, sets)
        ]
        real_drift.refuse_repeated_windows(self.files, ids)
        check_episode_ids(ids, list(self.files))
        n_steps = max(
            part.n_steps if real_drift.is_real(path) else max(len(episode["steps"]) for episode in part)
            for path, part in zip(self.files, sets)
        )
        encoded = concat_encoded(
            [
                (part if part.n_steps == n_steps else real_drift.load_encoded(path, labels[path], n_steps))
                if real_drift.is_real(path)
                else encode_episodes(part, source=path, n_steps=n_steps, validate=changelog_episode.is_changelog(path))
                for path, part in zip(self.files, sets)
            ]
        )
        return encoded, np.repeat(np.arange(len(sets), dtype=np.int64), [len(ids_of_set) for ids_of_set in ids])

    def to_dict(self) -> dict:
        """A JSON-able record (the sidecar's ``episodes``); files with their absolute path and SHA-256."""
        if self.files:
            from wpbjax.episodes.importers import changelog_episode, real_drift
            from wpbjax.files.results_io import sha256

            return {
                "source": "files",
                "files": [
                    {"path": path, "sha256": changelog_episode.spec_sha256(path)}
                    if changelog_episode.is_changelog(path)
                    else {"path": path, "sha256": real_drift.spec_sha256(path)}
                    if real_drift.is_real(path)
                    else {"path": os.path.abspath(path), "sha256": sha256(path)}
                    for path in self.files
                ],
            }
        return {
            "source": "generated",
            "generator": self.engine,
            "n_episodes": self.n_episodes,
            "configs": [dataclasses.asdict(config) for config in self.configs],
        }

    @classmethod
    def from_dict(cls, record: dict) -> EpisodeSource:
        """The source :meth:`to_dict` recorded (files are checked against their SHA-256 on load)."""
        if not isinstance(record, dict) or record.get("source") not in ("files", "generated"):
            raise ValueError("run metadata: 'episodes' is not an episode source record")
        if record["source"] == "files":
            files = record.get("files") or []
            return cls(files=tuple(entry["path"] for entry in files), sha256=tuple(entry["sha256"] for entry in files))
        engine = check_engine(record.get("generator", "python"))
        configs = tuple(generator_config(engine, **config) for config in record.get("configs", []))
        return cls(engine=engine, configs=configs, n_episodes=int(record.get("n_episodes", 0)))


def generate(
    modes: Sequence[str] | str = DEFAULT_MODES,
    n_episodes: int = 10,
    steps: int = 200,
    seed: int = 0,
    engine: str = "python",
    **knobs,
):
    """``n_episodes`` of each mode, encoded (:class:`wpbjax.episodes.encode.EncodedEpisodes`);
    ``knobs``: the generator's other settings (``drift_prob``, ``api_pool``, ..., docs/generators.md)."""
    return EpisodeSource.generated(modes, n_episodes, engine, steps=steps, seed=seed, **knobs).load()


def load(paths: Sequence[str | os.PathLike] | str | os.PathLike):
    """Episodes from JSONL file(s), checked (errors name file and line) and encoded together."""
    return EpisodeSource.from_files(paths).load()


def write_generated(
    path: str | os.PathLike,
    mode: str = "default",
    n_episodes: int = 10,
    steps: int = 200,
    seed: int = 0,
    engine: str = "python",
    **knobs,
) -> int:
    """Write ``n_episodes`` generated episodes of ``mode`` to a JSONL file (the python engine's are
    byte-identical to the published generator's); returns the number written."""
    from wpbjax.episodes.jsonl import save_jsonl

    config = generator_config(engine, mode, steps=steps, seed=seed, **knobs)
    if check_engine(engine) == "jax":
        from wpbjax.episodes.generators.decode import generate_episodes
    else:
        from wpbjax.episodes.generators.published_gen import generate_episodes
    episodes = generate_episodes(config, n_episodes)
    save_jsonl(episodes, path)
    return len(episodes)


def episode_file_sha256(path: str) -> str:
    """SHA-256 of an episode file, or of the history a ``real:`` spec reads."""
    from wpbjax.episodes.importers import changelog_episode, real_drift

    if changelog_episode.is_changelog(path):
        return changelog_episode.spec_sha256(path)
    if real_drift.is_real(path):
        return real_drift.spec_sha256(path)
    from wpbjax.files.results_io import sha256

    return sha256(path)


def real(name: str = "stripe", steps: int = 200, stride: int | None = None, split: str | None = None):
    """The windows of a real API history (``stripe`` is shipped; or a history file from
    ``wpbjax import-openapi``), encoded: ``steps`` per window, ``stride`` apart (default ``steps // 2``),
    ``split`` ``"train"`` / ``"test"`` for the temporal split (:mod:`wpbjax.episodes.importers.real_drift`); the
    encoded windows are kept on disk (:mod:`wpbjax.episodes.cache`), as a sweep's are."""
    from wpbjax.episodes.importers import real_drift

    if steps < 1 or (stride is not None and stride < 1):
        raise ValueError(f"steps and stride must be >= 1; got {steps}, {stride}")
    if split not in (None, *real_drift.SPLITS):
        raise ValueError(f"split must be one of {', '.join(real_drift.SPLITS)} or None; got {split!r}")
    counts = [str(steps)] + ([str(stride)] if stride is not None else [])
    return real_drift.load_encoded(real_drift.PREFIX + ":".join([name, *counts] + ([split] if split else [])))
