"""Resuming a killed sweep (``wpbjax sweep ... --resume``).

While a sweep streams its table into the temporary file (``results.csv.partial``, see
:mod:`wpbjax.results_io`), a small manifest beside it (``results.csv.partial.manifest.json``)
records, after each chunk is on disk, how many chunks, rows and bytes the temporary file holds,
the running leaderboard sums, and the run's identity (its arguments, the episode files' SHA-256,
the device and core counts that set the chunk plan). The manifest is replaced atomically, and
only after its chunk's bytes were written, so whenever the process dies the manifest describes a
prefix of the temporary file. ``--resume`` cuts the file back to that prefix and runs the
remaining chunks; the finished table is byte for byte the one an uninterrupted run writes.
"""
from __future__ import annotations

import json
import os

import pandas as pd

from wpbjax.argument_errors import ArgumentError, arg
from wpbjax.results_io import partial_path, sha256

MANIFEST_SCHEMA = "wpbjax.resume-manifest/1"
# arguments that do not change the rows (or are this mechanism's own)
NOT_IDENTITY = frozenset({"run", "command", "resume", "quiet", "coordinator", "process_id"})


def manifest_path(out: str | os.PathLike) -> str:
    """``results.csv`` -> ``results.csv.partial.manifest.json``."""
    return partial_path(out) + ".manifest.json"


def run_identity(arguments: dict, n_devices: int) -> dict:
    """What must be equal for a resumed run to continue the same table: every row-shaping argument
    (``arguments``: the sweep's options, as :func:`wpbjax.api.sweep_to_file` was called), each episode
    file's SHA-256, and the counts that size the chunks (devices, cores)."""
    kept = {key: value for key, value in sorted(arguments.items()) if key not in NOT_IDENTITY}
    identity = json.loads(json.dumps(kept, default=_jsonable))  # as the manifest will hold it
    identity["episode_file_sha256"] = [sha256(path) for path in (arguments.get("episodes") or [])]
    identity["devices"] = n_devices
    identity["cores"] = len(os.sched_getaffinity(0))
    return identity


def _jsonable(value):
    """Arrays (a param's values, budgets) as lists, so that an identity compares by value; a long one
    (a fine --param range) as its length and SHA-256."""
    import hashlib

    import numpy as np

    if isinstance(value, np.ndarray) and value.size > 64:
        values = np.ascontiguousarray(value, np.float64)
        return {"values": int(values.size), "sha256": hashlib.sha256(values.tobytes()).hexdigest()}
    return value.tolist() if hasattr(value, "tolist") else str(value)


class Checkpoint:
    """The part of a sweep on disk: ``chunks`` chunks, ``rows`` rows in the first ``size`` bytes of
    the temporary file, and the leaderboard sums of those rows (``sums``: a frame or None)."""

    def __init__(self, chunks: int = 0, rows: int = 0, size: int = 0, sums: pd.DataFrame | None = None):
        self.chunks, self.rows, self.size, self.sums = chunks, rows, size, sums


def _describe(value) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) if value else "(none)"
    return "(none)" if value is None else str(value)


def differences(before: dict, now: dict) -> list[str]:
    """One phrase per identity entry that differs, each argument marked (:func:`arg`): e.g. ``budgets
    was 1024,2048, now 1024`` (``--budgets ...`` on the command line)."""
    phrases = []
    for key in dict.fromkeys([*before, *now]):
        if before.get(key) != now.get(key):
            if key == "episode_file_sha256":
                phrases.append(f"an {arg('episodes')} file's contents changed")
            elif key in ("devices", "cores"):
                phrases.append(f"{key} was {before.get(key)}, now {now.get(key)} (they set the chunk plan)")
            else:
                phrases.append(f"{arg(key)} was {_describe(before.get(key))}, now {_describe(now.get(key))}")
    return phrases


def start(out: str, identity: dict, resume: bool) -> Checkpoint | None:
    """The checkpoint to continue from (``--resume`` with an interrupted run's temporary file and
    manifest), or None to run the sweep from its first chunk. Raises an ArgumentError (naming what
    differs) when the interrupted run had other arguments."""
    path = manifest_path(out)
    if not resume:
        _remove(path)  # a fresh run: an older run's manifest no longer describes the file
        return None
    if not (os.path.exists(path) and os.path.exists(partial_path(out))):
        return None  # killed before its first chunk (or already finished): nothing on disk to keep
    try:
        with open(path) as handle:
            manifest = json.load(handle)
        if manifest.get("schema") != MANIFEST_SCHEMA:
            raise ValueError
    except (OSError, ValueError):
        raise ArgumentError(f"{arg('resume')}: {path}: not a wpbjax resume manifest; remove it to start over") from None
    changed = differences(manifest["identity"], identity)
    if changed:
        raise ArgumentError(f"{arg('resume')}: {out}: the interrupted run had other arguments ({'; '.join(changed)}); "
                            f"rerun it exactly, or drop {arg('resume')} to start over")
    if os.path.getsize(partial_path(out)) < manifest["size"]:
        raise ArgumentError(f"{arg('resume')}: {partial_path(out)} is shorter than its manifest records "
                            f"({manifest['size']} bytes); drop {arg('resume')} to start over")
    sums = pd.DataFrame(manifest["sums"]).set_index(["track", "policy", "budget_bytes"]) if manifest["sums"] else None
    return Checkpoint(manifest["chunks"], manifest["rows"], manifest["size"], sums)


def record(out: str, identity: dict, checkpoint: Checkpoint) -> None:
    """Replace the manifest (atomically) once ``checkpoint``'s bytes are in the temporary file."""
    sums = [] if checkpoint.sums is None else checkpoint.sums.reset_index().to_dict("records")
    manifest = {"schema": MANIFEST_SCHEMA, "identity": identity, "chunks": checkpoint.chunks,
                "rows": checkpoint.rows, "size": checkpoint.size, "sums": sums}
    path = manifest_path(out)
    with open(path + ".new", "w") as handle:
        json.dump(manifest, handle, default=lambda value: value.item() if hasattr(value, "item") else str(value))
    os.replace(path + ".new", path)


def finish(out: str) -> None:
    """The sweep is complete (or its temporary file gone): the manifest describes nothing any more."""
    _remove(manifest_path(out))


def _remove(path: str) -> None:
    for name in (path, path + ".new"):
        try:
            os.remove(name)
        except FileNotFoundError:
            pass
