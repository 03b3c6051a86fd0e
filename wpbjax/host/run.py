"""Run a Python policy: drive it on the host per (episode, budget, track), log its actions, and hand the
engine a replay policy under a name a sweep resolves (``py:MODULE:NAME``), so its rows come from the
same sweep code as any JAX policy's (F1, regret against the oracle, integrity, reads).

A sweep asks a policy's ``plan`` for its per-run inputs with the chunk's write costs and utilities, not its
episode numbers; the log is therefore looked up by the episode's content (its write costs and utilities on
the track), which holds across chunking, padding and episode order.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import importlib
import multiprocessing
import os
import warnings

import numpy as np

from wpbjax.common.tracks import TRACKS, cost_track
from wpbjax.host.drive import PolicyError, drive_episode
from wpbjax.host.replay import LOG_FIELDS, build_log, replay_policy, widen
from wpbjax.host.store import make_step
from wpbjax.runtime.progress import Progress

PREFIX = "py"
_POLICIES: dict[str, object] = {}  # "MODULE:NAME" -> replay Policy (the registry's "py" factory reads it)


@dataclasses.dataclass(frozen=True)
class HostRun:
    """How the host loop runs: ``workers`` processes over episodes (None: one per core, at most 8; 1: in
    this process), a progress bar unless ``quiet``."""

    workers: int | None = None
    quiet: bool = True


def load_policy(spec: str):
    """The object ``MODULE:NAME`` names (a class with ``select`` or a function); a PolicyError if none."""
    module_name, colon, attr = spec.rpartition(":")
    if not colon or not module_name or not attr:
        raise PolicyError(f"policy py:{spec}: expected py:MODULE:NAME")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise PolicyError(f"policy py:{spec}: cannot import {module_name!r} ({err})") from None
    policy = getattr(module, attr, None)
    if policy is None or not (isinstance(policy, type) or hasattr(policy, "select") or callable(policy)):
        raise PolicyError(f"policy py:{spec}: {module_name}.{attr} is not a class with select() or a function")
    return policy


def policy_label(policy) -> str:
    """``MODULE:NAME`` of a policy object (its ``py:`` name in results rows)."""
    module = getattr(policy, "__module__", None) or type(policy).__module__
    name = getattr(policy, "__qualname__", None) or type(policy).__qualname__
    return f"{module}:{name}"


def dict_episodes(source) -> list[dict]:
    """The dict episodes of an :class:`wpbjax.episodes.source.EpisodeSource`, in the order it encodes them."""
    from wpbjax.episodes.importers import changelog_episode, real_drift
    from wpbjax.episodes.jsonl import load_jsonl

    if source.files:
        labels = real_drift.labels(source.files)
        episodes = []
        for path in source.files:
            if real_drift.is_real(path):
                episodes += real_drift.load_spec(path, labels[path])
            elif changelog_episode.is_changelog(path):
                episodes += changelog_episode.load_spec(path)
            else:
                episodes += load_jsonl(path)
        return episodes
    if source.engine == "jax":
        from wpbjax.episodes.generators.decode import generate_episodes
    else:
        from wpbjax.episodes.generators.published_gen import generate_episodes
    return [episode for config in source.configs for episode in generate_episodes(config, source.n_episodes)]


def prepare_episodes(episodes=None, **generated) -> tuple:
    """(episodes for the host: an EpisodeSource or dict episodes, their encoding, what a sweep takes) of
    ``episodes``: JSONL paths / ``real:`` / ``changelog:`` specs, an EpisodeSource, a list of dict episodes,
    a :class:`wpbjax.sweeps.config.Generate` config, or None to generate (``generated``: modes, n_episodes,
    steps, seed, engine and generator knobs)."""
    from wpbjax.episodes.encode import encode_episodes
    from wpbjax.episodes.source import EpisodeSource
    from wpbjax.sweeps.config import Generate

    if isinstance(episodes, Generate):
        fields = {field.name: getattr(episodes, field.name) for field in dataclasses.fields(Generate)}
        episodes, generated = None, {**{k: v for k, v in fields.items() if k != "knobs"}, **fields["knobs"]}

    if isinstance(episodes, (list, tuple)) and episodes and all(isinstance(episode, dict) for episode in episodes):
        encoded = encode_episodes(list(episodes))
        return list(episodes), encoded, encoded
    if isinstance(episodes, EpisodeSource):
        source = episodes
    elif isinstance(episodes, (str, os.PathLike, list, tuple)) and episodes:
        source = EpisodeSource.from_files(episodes)
    elif episodes is None:
        source = EpisodeSource.generated(**generated)
    else:
        raise PolicyError(
            f"episodes: a Python policy needs episodes it can read step by step (files, real:/changelog: specs, "
            f"dict episodes or generator settings); got {type(episodes).__name__}"
        )
    return source, source.load(), source


def _drive_runs(task) -> list:
    policy, episode, budgets, track, episode_id = task
    views = [make_step(raw, track) for raw in episode["steps"]]
    return [drive_episode(policy, episode, int(budget), track, episode_id, views) for budget in budgets]


_FORKED: dict = {}  # what forked workers inherit instead of receiving it pickled (a policy defined anywhere)


def _drive_forked(n: int) -> list:
    return _FORKED["drive"](_FORKED["tasks"][n])


def host_programs(
    policy, episodes: list[dict], budgets, track: str, run: HostRun = HostRun(), progress=None, tasks=None, drive=None
) -> list:
    """[N][B] per-step call lists of ``policy`` on every (episode, budget), workers over episodes. ``tasks``,
    ``drive``: other per-episode work (``drive(task)`` -> that episode's B runs; a tiered run's,
    :mod:`wpbjax.host.tiers`)."""
    if tasks is None:
        tasks = [
            (policy, episode, budgets, track, episode.get("labels", {}).get("episode_id", n))
            for n, episode in enumerate(episodes)
        ]
    drive = drive or _drive_runs
    workers = run.workers or min(os.cpu_count() or 1, 8)
    if workers == 1 or len(tasks) < 2 * workers:
        programs = []
        for task in tasks:
            programs.append(drive(task))
            if progress is not None:
                progress.advance(len(budgets), track)
        return programs
    # fork: the workers inherit the policy and the episodes (a policy defined in a notebook, a script or an
    # exec'd block needs no import by name); they run only plain Python, never JAX, so the parent's JAX
    # threads are not used in them
    context = multiprocessing.get_context("fork")
    _FORKED["tasks"], _FORKED["drive"] = tasks, drive
    try:
        with warnings.catch_warnings(), concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)  # JAX's warning, see above
            programs = []
            chunk = max(len(tasks) // (4 * workers), 1)
            for result in pool.map(_drive_forked, range(len(tasks)), chunksize=chunk):
                programs.append(result)
                if progress is not None:
                    progress.advance(len(budgets), track)
    finally:
        _FORKED.clear()
    return programs


def episode_key(write_cost: np.ndarray, utility: np.ndarray, length: int) -> bytes:
    """What identifies an episode's runs to a sweep's ``plan``: its real steps' costs and utilities."""
    digest = hashlib.sha256(np.asarray(write_cost[:length], np.int64).tobytes())
    digest.update(np.asarray(utility[:length], np.float64).tobytes())
    return digest.digest()


class LogTable:
    """Per-run inputs by episode content (:func:`episode_key`) and budget; the replay policy's ``plan``."""

    def __init__(self, budgets):
        self.budgets = [int(budget) for budget in budgets]
        self.runs: dict[bytes, dict] = {}  # key -> name -> [B, T, ...]

    def add(self, key: bytes, inputs: dict, episode_id) -> None:
        known = self.runs.get(key)
        if known is not None and not all(np.array_equal(known[name], inputs[name]) for name in LOG_FIELDS):
            raise PolicyError(
                f"episode {episode_id}: another episode has the same write costs and utilities but the policy "
                f"acted differently on it; the replay cannot tell them apart"
            )
        self.runs[key] = inputs

    def __call__(self, write_cost, utility, length, budgets) -> dict:
        columns = []
        for budget in np.asarray(budgets).tolist():
            if int(budget) not in self.budgets:
                raise PolicyError(f"budget {budget}: the Python policy was run at {self.budgets} only")
            columns.append(self.budgets.index(int(budget)))
        out = {name: [] for name in LOG_FIELDS}
        for n in range(len(length)):
            runs = self.runs.get(episode_key(write_cost[n], utility[n], int(length[n])))
            if runs is None:
                raise PolicyError(f"episode {n} of the sweep: the Python policy was not run on it")
            for name in LOG_FIELDS:
                out[name].append(runs[name][columns])
        return {name: np.stack(value) for name, value in out.items()}


@dataclasses.dataclass(frozen=True)
class HostPolicy:
    """One Python policy of a call: ``policy`` (an object, or a ``MODULE:NAME`` string) on ``tracks``
    (None: the call's), under ``name`` (None: its ``MODULE:NAME``)."""

    policy: object
    tracks: tuple | None = None
    name: str | None = None


def prepare(policy, source, encoded, budgets, tracks, name: str | None = None, run: HostRun = HostRun()) -> str:
    """Drive ``policy`` (an object, or a ``MODULE:NAME`` string) over ``source``'s episodes (an EpisodeSource
    whose encoding is ``encoded``) at ``budgets`` on ``tracks``, and register its replay; returns the policy
    name a sweep runs (``py:MODULE:NAME``)."""
    return prepare_all([HostPolicy(policy, tuple(tracks), name)], source, encoded, budgets, tracks, run)[0]


def resolve_entries(policies, tracks) -> list[tuple[str, object, list]]:
    """(label, policy object, its tracks) of each of ``policies`` (:class:`HostPolicy`, objects or
    ``MODULE:NAME`` strings; tracks default to ``tracks``)."""
    resolved = []
    for entry in policies:
        entry = entry if isinstance(entry, HostPolicy) else HostPolicy(entry)
        policy, label = entry.policy, entry.name
        if isinstance(policy, str):
            label = label or policy.removeprefix(f"{PREFIX}:")
            policy = load_policy(policy.removeprefix(f"{PREFIX}:"))
        label = label or policy_label(policy)
        on = list(tracks if entry.tracks is None else entry.tracks)
        unknown = [track for track in on if track not in TRACKS]
        if unknown:
            raise PolicyError(f"tracks: a Python policy runs on {', '.join(TRACKS)}; got {', '.join(unknown)}")
        resolved.append((label, policy, on))
    return resolved


def prepare_all(policies, source, encoded, budgets, tracks, run: HostRun = HostRun(), tiers=None) -> list[str]:
    """:func:`prepare` for several policies (:class:`HostPolicy`, or plain policies on ``tracks``) of one
    call: their logs are padded to one shape, so a sweep of them all compiles one replay per track and
    shape (the replay policies are equal as static arguments, :class:`wpbjax.host.replay.ReplayPolicy`).
    ``tiers``: a :class:`wpbjax.sweeps.config.Tiers` config: tiered runs, ``budgets`` the checkpoint's
    (:mod:`wpbjax.host.tiers`). Returns their sweep names, in order."""
    episodes = dict_episodes(source) if not isinstance(source, list) else source
    if len(episodes) != encoded.n_episodes:
        raise PolicyError(f"episodes: {len(episodes)} dict episodes but {encoded.n_episodes} encoded")
    entries = resolve_entries(policies, tracks)
    if tiers is not None:
        return prepare_tiered(entries, episodes, encoded, budgets, tiers, run)
    logs = []
    for label, policy, on in entries:
        with Progress(len(episodes) * len(budgets) * len(on), enabled=not run.quiet) as progress:
            programs = [row for track in on for row in host_programs(policy, episodes, budgets, track, run, progress)]
        logs.append((label, on, build_log(programs, encoded.n_steps)))
    shape = tuple(max(log.expire.shape[-2 + axis] for _, _, log in logs) for axis in (0, 1))
    names = []
    for label, on, log in logs:
        inputs = widen(log, shape).run_inputs()
        table = LogTable(budgets)
        for number, track in enumerate(on):
            costs = encoded.track_costs(cost_track(track))
            for n in range(len(episodes)):
                length = int(encoded.arrays.length[n])
                run_inputs = {field: value[number * len(episodes) + n] for field, value in inputs.items()}
                table.add(episode_key(costs[n], encoded.utility64[n], length), run_inputs, encoded.episode_id[n])
        _POLICIES[label] = replay_policy(f"{PREFIX}:{label}", tuple(on), plan=table)
        names.append(f"{PREFIX}:{label}")
    return names


def prepare_tiered(entries: list, episodes: list[dict], encoded, budgets, tiers, run) -> list[str]:
    """Drive each of ``entries`` ((label, policy, tracks), :func:`wpbjax.host.run.resolve_entries`) over
    ``episodes`` in tiered runs at every (checkpoint budget of ``budgets``, journal budget of ``tiers``) pair,
    checkpoint-major as a tiered sweep pairs them, and register each replay as a tier policy ``py:LABEL``."""
    from wpbjax.host.tiers import (
        TierLogTable,
        TierRules,
        build_tier_log,
        consolidation_period,
        crash_mask,
        drive_tiered,
        replay_tier_policy,
        tier_log_width,
    )
    from wpbjax.sweeps.plan import check_tiers
    from wpbjax.tiers.engine import compute_budget, labelled_crashes, tier_budgets
    from wpbjax.tiers.policies import register_tier_policy

    settings = check_tiers(tiers)
    checkpoint = tier_budgets(budgets, "budgets").tolist()
    journal = [int(budget) for budget in settings.journal_budgets]
    pairs = [(c, j) for c in checkpoint for j in journal]
    fact_key = None if encoded.arrays.fact_key is None else np.asarray(encoded.arrays.fact_key)  # numpy: see crash_mask
    if fact_key is None:
        raise PolicyError("episodes: tiered runs need fact tables (episodes with apis or a facts label)")
    valid = encoded.arrays.valid
    crashes = crash_mask(encoded.n_steps, settings.crash_rate, settings.crash_seed, np.arange(len(episodes)), valid,
                         labelled_crashes(encoded.crash_pos, valid.shape))  # fmt: skip
    rate, burst = (float(value) for value in np.asarray(compute_budget(settings.calls_per_step, settings.call_burst)))
    names, logs = [], []
    for label, policy, on in entries:
        every = consolidation_period(policy, label)
        rules = [TierRules(c, j, every, rate, burst) for c, j in pairs]
        runs = []
        with Progress(len(episodes) * len(pairs) * len(on), enabled=not run.quiet) as progress:
            for track in on:
                tasks = [
                    (policy, episode, rules, track, fact_key[n, :, 0], crashes[n],
                     episode.get("labels", {}).get("episode_id", n))
                    for n, episode in enumerate(episodes)
                ]  # fmt: skip
                runs.append(host_programs(policy, episodes, pairs, track, run, progress, tasks, drive_tiered))
        logs.append((label, on, runs, every))
    width = max(tier_log_width(row) for _, _, runs, _ in logs for row in runs)
    for label, on, runs, every in logs:
        table = TierLogTable(pairs, episode_key)
        for track, programs in zip(on, runs):
            log = build_tier_log(programs, encoded.n_steps, every, width)
            costs = encoded.track_costs(cost_track(track))
            for n in range(len(episodes)):
                key = episode_key(costs[n], encoded.utility64[n], int(encoded.arrays.length[n]))
                table.add(key, {name: value[n] for name, value in log.items()}, encoded.episode_id[n])
        register_tier_policy(replay_tier_policy(f"{PREFIX}:{label}", table))
        names.append(f"{PREFIX}:{label}")
    return names


def prepare_named(policies: str, episodes, grid, quiet: bool = True, tiers=None) -> None:
    """``wpbjax sweep --policies ...,py:MODULE:NAME,...``: drive each ``py:`` policy over the sweep's
    ``episodes`` (files or a Generate config) at the budgets and tracks of its ``grid`` (a Grid config);
    ``tiers``: a tiered sweep's :class:`wpbjax.sweeps.config.Tiers` (the runs are tiered runs)."""
    named = [name for name in policies.split(",") if name.startswith(f"{PREFIX}:")]
    host_episodes, encoded, _ = prepare_episodes(episodes)
    tracks = [track for track in grid.tracks if track in TRACKS]  # as a JAX policy: the asked tracks it supports
    if not tracks:
        raise PolicyError(
            f"policy {named[0]}: a Python policy runs on {', '.join(TRACKS)} (its steps carry no utility); "
            f"got --tracks {','.join(grid.tracks)}"
        )
    prepare_all(named, host_episodes, encoded, grid.budgets, tracks, run=HostRun(quiet=quiet), tiers=tiers)


def registered(label: str):
    """The registry's ``py`` factory: the replay policy :func:`prepare` made for ``MODULE:NAME``."""
    if label not in _POLICIES:
        raise PolicyError(
            f"policy {PREFIX}:{label}: a Python policy runs through wj.run_python_policy or wpbjax sweep "
            f"--policies {PREFIX}:MODULE:NAME (it is driven on the host first)"
        )
    return _POLICIES[label]


def _register_factory() -> None:
    from wpbjax.policies.registry import register_factory

    register_factory(PREFIX, registered, replace=True)


_register_factory()
