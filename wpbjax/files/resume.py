"""Resuming a killed sweep (``wpbjax sweep ... --resume``).

While a sweep streams its table into the temporary file (``results.csv.partial``, see
:mod:`wpbjax.files.results_io`), a small manifest beside it (``results.csv.partial.manifest.json``)
records, after each chunk is on disk, how many chunks, rows and bytes the temporary file holds,
the end offset and SHA-256 of each chunk's bytes, the running leaderboard sums, and the run's
identity (its arguments, the episode files' SHA-256, the device and core counts that set the chunk plan). The manifest is replaced atomically, and
only after its chunk's bytes were written, so whenever the process dies the manifest describes a
prefix of the temporary file. ``--resume`` checks every recorded chunk's bytes (an edited or damaged
prefix is refused, naming the chunk), cuts the file back to that prefix and runs the remaining
chunks; the finished table is byte for byte the one an uninterrupted run writes.

A run that fails or is interrupted (Ctrl-C) removes its temporary file and so its manifest too;
only a run killed outright (``kill -9``, a lost machine) leaves them, for ``--resume``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os

import pandas as pd

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.files.atomic import atomic_file
from wpbjax.files.results_io import partial_path, sha256

MANIFEST_SCHEMA = "wpbjax.resume-manifest/2"  # /2: a checksum per chunk
# arguments that do not change the rows (or are this mechanism's own)
NOT_IDENTITY = frozenset({"run", "command", "resume", "quiet", "coordinator", "process_id"})


def manifest_path(out: str | os.PathLike) -> str:
    """``results.csv`` -> ``results.csv.partial.manifest.json``."""
    return partial_path(out) + ".manifest.json"


def run_identity(arguments: dict, n_devices: int, episode_sha256: list | None = None) -> dict:
    """What must be equal for a resumed run to continue the same table: every row-shaping argument
    (``arguments``: the sweep's options, as :func:`wpbjax.api.sweep` was called), each episode
    file's SHA-256 (``episode_sha256``, default: of each file ``arguments["episodes"]`` names), and the
    counts that size the chunks (devices, cores)."""
    kept = {key: value for key, value in sorted(arguments.items()) if key not in NOT_IDENTITY}
    identity = json.loads(json.dumps(kept, default=_jsonable))  # as the manifest will hold it
    if episode_sha256 is None:
        episode_sha256 = [sha256(path) for path in (arguments.get("episodes") or [])]
    identity["episode_file_sha256"] = list(episode_sha256)
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


class ResumePoint:
    """The part of a sweep on disk: ``chunks`` chunks, ``rows`` rows in the first ``size`` bytes of
    the temporary file, the leaderboard sums of those rows (``sums``: a frame or None), and each
    chunk's end offset and the SHA-256 of its bytes (``ends``, ``checksums``; the first chunk's bytes
    include the header)."""

    def __init__(
        self,
        chunks: int = 0,
        rows: int = 0,
        size: int = 0,
        sums: pd.DataFrame | None = None,
        ends: list[int] | None = None,
        checksums: list[str] | None = None,
    ):
        self.chunks, self.rows, self.size, self.sums = chunks, rows, size, sums
        self.ends, self.checksums = list(ends or []), list(checksums or [])

    def add_chunk(self, temporary: str, rows: int, size: int, sums: pd.DataFrame | None) -> None:
        """The temporary file now holds one more chunk, up to byte ``size``: checksum its bytes."""
        self.checksums.append(_sha256_of_range(temporary, self.size, size))
        self.ends.append(size)
        self.chunks, self.rows, self.size, self.sums = self.chunks + 1, rows, size, sums


def _sha256_of_range(path: str, start: int, end: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(start)
        left = end - start
        while left > 0:
            block = handle.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


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


def start(out: str, identity: dict, resume: bool) -> ResumePoint | None:
    """The point to continue from (``--resume`` with an interrupted run's temporary file and
    manifest), or None to run the sweep from its first chunk. Raises an ArgumentError when the
    manifest is not one, when the interrupted run had other arguments (naming what differs), or when
    the temporary file is not the bytes the manifest records (naming the first chunk that differs)."""
    path = manifest_path(out)
    if not resume:
        _remove(path)  # a fresh run: an older run's manifest no longer describes the file
        return None
    if not (os.path.exists(path) and os.path.exists(partial_path(out))):
        return None  # killed before its first chunk (or already finished): nothing on disk to keep
    point, before = _read_manifest(path)
    changed = differences(before, identity)
    if changed:
        raise ArgumentError(
            f"{arg('resume')}: {out}: the interrupted run had other arguments ({'; '.join(changed)}); "
            f"rerun it exactly, or drop {arg('resume')} to start over"
        )
    _verify_prefix(partial_path(out), point)
    return point


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _read_manifest(path: str) -> tuple[ResumePoint, dict]:
    """(point, identity) of a resume manifest, every field checked (ArgumentError naming it)."""

    def refuse(why: str):
        return ArgumentError(
            f"{arg('resume')}: {path}: not a valid wpbjax resume manifest ({why}); remove it, or "
            f"drop {arg('resume')}, to start over"
        )

    try:
        with open(path) as handle:
            manifest = json.load(handle)
    except (OSError, ValueError, RecursionError) as err:
        raise refuse(f"cannot read it as JSON: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise refuse(f"expected schema {MANIFEST_SCHEMA!r}")
    for key in ("chunks", "rows", "size"):
        if not _is_count(manifest.get(key)):
            raise refuse(f"{key!r} must be a whole number >= 0, got {manifest.get(key)!r}")
    if not isinstance(manifest.get("identity"), dict):
        raise refuse("'identity' missing or not an object")
    ends, checksums, sums = manifest.get("chunk_ends"), manifest.get("chunk_sha256"), manifest.get("sums")
    chunks = manifest["chunks"]
    if not (
        isinstance(ends, list)
        and len(ends) == chunks
        and all(map(_is_count, ends))
        and all(a < b for a, b in itertools.pairwise(ends))
        and (ends[-1] if ends else 0) == manifest["size"]
    ):
        raise refuse(f"'chunk_ends' must list {chunks} increasing byte offsets ending at 'size' {manifest['size']}")
    if not (
        isinstance(checksums, list)
        and len(checksums) == chunks
        and all(isinstance(value, str) and len(value) == 64 for value in checksums)
    ):
        raise refuse(f"'chunk_sha256' must list {chunks} SHA-256 digests")
    if not (isinstance(sums, list) and all(isinstance(row, dict) for row in sums)):
        raise refuse("'sums' must be a list of objects")
    try:
        frame = pd.DataFrame(sums)
        frame = frame.set_index([column for column in frame if column not in ("sum", "count")]) if sums else None
    except (KeyError, ValueError, TypeError) as err:
        raise refuse(f"'sums': {err}") from None
    return ResumePoint(chunks, manifest["rows"], manifest["size"], frame, ends, checksums), manifest["identity"]


def _verify_prefix(temporary: str, point: ResumePoint) -> None:
    """ArgumentError unless ``temporary`` begins with the recorded chunks, byte for byte."""
    if os.path.getsize(temporary) < point.size:
        raise ArgumentError(
            f"{arg('resume')}: {temporary} is shorter than its manifest records "
            f"({point.size} bytes); drop {arg('resume')} to start over"
        )
    start = 0
    for number, (end, expected) in enumerate(zip(point.ends, point.checksums)):
        if _sha256_of_range(temporary, start, end) != expected:
            raise ArgumentError(
                f"{arg('resume')}: {temporary}: chunk {number + 1} of {point.chunks} (bytes "
                f"{start}..{end - 1}) differs from what the interrupted run wrote; drop "
                f"{arg('resume')} to start over"
            )
        start = end


def record(out: str, identity: dict, point: ResumePoint) -> None:
    """Replace the manifest (atomically) once ``point``'s bytes are in the temporary file."""
    sums = [] if point.sums is None else point.sums.reset_index().to_dict("records")
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "identity": identity,
        "chunks": point.chunks,
        "rows": point.rows,
        "size": point.size,
        "chunk_ends": point.ends,
        "chunk_sha256": point.checksums,
        "sums": sums,
    }
    with atomic_file(manifest_path(out)) as handle:
        json.dump(manifest, handle, default=lambda value: value.item() if hasattr(value, "item") else str(value))


def finish(out: str) -> None:
    """The sweep is complete (or its temporary file gone): the manifest describes nothing any more."""
    _remove(manifest_path(out))


def _remove(path: str) -> None:
    for name in (path, path + ".new"):  # (".new": an older wpbjax's temporary manifest)
        try:
            os.remove(name)
        except FileNotFoundError:
            pass
