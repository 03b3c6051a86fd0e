"""Run metadata: the sidecar ``RESULTS.meta.json`` that ``wpbjax sweep`` writes beside its results.

It records what a reader needs to trust and redo a run (spec §6): seeds, budgets, tracks, policies
and their params, the oracle, where the episodes came from (generator settings, or file paths with
their SHA-256), the package version, the git commit of the code (if it is a git checkout), the jax
version and the devices. ``wpbjax report`` reads it to label tables and to rebuild the episodes for
the per-step regret curve.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import pathlib
import platform
import subprocess
import sys

from wpbjax.results_io import SIDECAR_SCHEMA as SCHEMA, read_sidecar, sha256, sidecar_path, write_sidecar  # noqa: F401


def package_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("wpbjax")
    except metadata.PackageNotFoundError:
        return "unknown"


def git_commit() -> dict | None:
    """The commit of the checkout the running ``wpbjax`` code lives in (None outside git), and
    whether its working tree has uncommitted changes."""
    source = pathlib.Path(__file__).resolve().parents[1]

    def git(*args) -> str:
        return subprocess.run(["git", "-C", os.fspath(source), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def environment(devices=None) -> dict:
    """Package version, git commit, Python / jax versions and the devices the run used."""
    import jax

    devices = devices if devices is not None else jax.local_devices()
    return {
        "wpbjax_version": package_version(),
        "git": git_commit(),
        "python": platform.python_version(),
        "jax_version": jax.__version__,
        "jaxlib_version": _dist_version("jaxlib"),
        "platform": devices[0].platform,
        "devices": [f"{device.platform}:{device.id} ({device.device_kind})" for device in devices],
        "host": platform.node(),
    }


def _dist_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def policy_params(plan: dict, overrides: dict | None = None) -> dict:
    """Policy name -> the params it ran with (defaults updated by ``overrides`` [name -> {param: value}])."""
    from wpbjax.policies import make

    names = dict.fromkeys(name for names in plan.values() for name in names)
    return {name: {**make(name).params, **(overrides or {}).get(name, {})} for name in names}


def sweep_metadata(args, plan: dict, devices=None, rows: int | None = None) -> dict:
    """The sidecar for one ``wpbjax sweep`` invocation. ``args``: its parsed arguments;
    ``plan``: track -> policy names (:func:`wpbjax.sweep.resolve_policies`)."""
    from wpbjax.episodes.reference_gen import DriftConfig

    if getattr(args, "episodes", None):
        files = [{"path": os.path.abspath(path), "sha256": sha256(path)} for path in args.episodes]
        episodes = {"source": "files", "files": files}
    elif getattr(args, "engine", "reference") == "jax":  # the JAX generator (docs/generators.md)
        from wpbjax.episodes.jax_gen import JaxGenConfig

        configs = [dataclasses.asdict(JaxGenConfig.from_args(args, mode)) for mode in args.modes]
        episodes = {"source": "generated", "generator": "jax", "n_episodes": args.n_episodes, "configs": configs}
    else:
        configs = [dataclasses.asdict(DriftConfig.from_args(args, mode)) for mode in args.modes]
        episodes = {"source": "generated", "generator": getattr(args, "generator", "reference"), "n_episodes": args.n_episodes,
                    "configs": configs}
    arguments = {key: value for key, value in vars(args).items() if key != "run"}
    return {
        "schema": SCHEMA,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [os.path.basename(sys.argv[0])] + sys.argv[1:],
        "arguments": arguments,
        "seeds": {"generator": None if getattr(args, "episodes", None) else args.seed,
                  "policy_key": 0, "policy_key_note": "jax.random.key(0) folded with each episode's index"},
        "budgets": [int(budget) for budget in args.budgets],
        "tracks": {track: list(names) for track, names in plan.items()},
        "policy_params": policy_params(plan),  # defaults; swept ones below
        "swept_params": {name: [float(v) for v in values] for name, values in (getattr(args, "param", None) or [])},
        "oracle": args.oracle,
        "episodes": episodes,
        "rows": rows,
        "environment": environment(devices),
    }


def episodes_from_metadata(meta: dict):
    """Rebuild the run's episodes (EncodedEpisodes) from the sidecar, through the same code path as
    ``wpbjax sweep`` (its recorded arguments over today's defaults): regenerated, or reloaded from
    the recorded files after checking their SHA-256."""
    from wpbjax import cli

    args = cli.build_parser().parse_args(["sweep"])
    recorded = meta.get("arguments")
    if not isinstance(recorded, dict):
        raise ValueError("run metadata has no sweep arguments to rebuild the episodes from")
    vars(args).update({key: value for key, value in recorded.items() if key != "command"})
    source = meta.get("episodes", {})
    if source.get("source") == "files":
        for entry in source["files"]:
            path = entry["path"]
            if not os.path.exists(path):
                raise ValueError(f"episode file {path} (named in the run metadata) not found")
            if sha256(path) != entry["sha256"]:
                raise ValueError(f"episode file {path} changed since the sweep (SHA-256 differs)")
        args.episodes = [entry["path"] for entry in source["files"]]  # absolute: the report may run elsewhere
    encoded, _ = cli._encoded_sets(args)
    return encoded
