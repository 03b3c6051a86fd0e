"""Run metadata: the sidecar ``RESULTS.meta.json`` that ``wpbjax sweep`` writes beside its results.

It records what a reader needs to trust and redo a run (spec §6): seeds, budgets, tracks, policies
and their params, the oracle, where the episodes came from (generator settings, or file paths with
their SHA-256), the package version, the git commit of the code (if it is a git checkout), the jax
version and the devices. ``wpbjax report`` reads it to label tables and to rebuild the episodes for
the per-step regret curve.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
import subprocess
import sys

import numpy as np

from wpbjax.files.results_io import SIDECAR_SCHEMA as SCHEMA  # noqa: F401


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
        return subprocess.run(
            ["git", "-C", os.fspath(source), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

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


def policy_params(plan: dict, overrides: dict | None = None, tiered: bool = False) -> dict:
    """Policy name -> the params it ran with (defaults updated by ``overrides`` [name -> {param: value}]);
    ``tiered``: the names are tier policies."""
    from wpbjax.policies import make
    from wpbjax.tiers.policies import get_tier_policy

    record = get_tier_policy if tiered else make
    names = dict.fromkeys(name for names in plan.values() for name in names)
    return {name: {**record(name).params, **(overrides or {}).get(name, {})} for name in names}


def sweep_metadata(
    plan, source=None, arguments: dict | None = None, params: dict | None = None, command=None, rows: int | None = None
) -> dict:
    """The sidecar of one sweep. ``plan``: its :class:`wpbjax.sweeps.SweepPlan`; ``source``: its
    :class:`wpbjax.episodes.source.EpisodeSource` (None for episodes given in memory, which cannot be
    rebuilt); ``arguments``: the options it was called with; ``params``: param name -> swept values;
    ``command``: the command line (default ``sys.argv``)."""
    command = list(command) if command is not None else [os.path.basename(sys.argv[0])] + sys.argv[1:]
    generated = source is not None and not source.files
    tiers = getattr(plan, "tiers", None)
    meta = {
        "schema": SCHEMA,
        "created_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command,
        "arguments": dict(arguments or {}),
        "seeds": {
            "generator": source.configs[0].seed if generated else None,
            "policy_key": 0,
            "policy_key_note": "jax.random.key(0) folded with each episode's index",
        },
        "budgets": [int(budget) for budget in plan.budgets],
        "tracks": {track: list(names) for track, names in plan.lineup.items()},
        "policy_params": policy_params(plan.lineup, tiered=tiers is not None),  # defaults; swept ones below
        "swept_params": {name: [float(v) for v in np.atleast_1d(values)] for name, values in (params or {}).items()},
        "oracle": plan.oracle,
        "episodes": source.to_dict() if source is not None else {"source": "in-memory"},
        "rows": rows,
        "environment": environment(plan.layout.devices),
    }
    if tiers is not None:  # a tiered sweep (docs/tiers.md): its budget pairs cross these with the budgets
        meta["journal_budgets"] = [int(budget) for budget in tiers.journal_budgets]
    return meta


def episodes_from_metadata(meta: dict):
    """Rebuild the run's episodes (EncodedEpisodes) from the sidecar's episode source: regenerated,
    or reloaded from the recorded files after checking their SHA-256. None for episodes the sweep
    was given in memory (nothing recorded to rebuild them from)."""
    from wpbjax.episodes.source import EpisodeSource

    record = meta.get("episodes")
    if isinstance(record, dict) and record.get("source") == "in-memory":
        return None
    return EpisodeSource.from_dict(record).load()
