"""Reading a spec's versions: each version's files parsed and its endpoint surfaces computed, in a pool of
worker processes (one ``git cat-file --batch`` each), yielded in version order.

A worker reads a version's entry files (:func:`wpbjax.episodes.importers.openapi_history.read_files`) and hands
:func:`wpbjax.episodes.importers.openapi_surface.endpoint_surfaces` a loader for any other file of that version (a
``$ref`` into a fragment file): ``COMMIT:PATH`` through the same git process, or the file under the
version's directory; parsed as JSON or YAML by its extension, cached for the version; None when it is
absent, does not parse to a mapping, or lies outside the repository, each such file a note
``("fragment_unreadable", path, reason)``.

Which git candidates are versions (:mod:`wpbjax.episodes.importers.openapi_history` module note) is decided here, in
order: a candidate whose chosen files changed is one; a candidate that changed only other files is one if
a file the previous version loaded now has another blob. Candidates likely to be versions (they change a
file some version loaded) are read ahead in the pool; the others only once they are known to be versions.

Interrupts: workers ignore SIGINT (the parent takes the Ctrl-C and ends the pool) and are killed with their
parent (Linux's parent-death signal), so neither a Ctrl-C nor a killed parent makes a worker print a
traceback; git runs in its own process group and is closed by whoever started it.
"""

from __future__ import annotations

import collections
import gc
import hashlib
import json
import multiprocessing
import os
import posixpath
import signal
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes.importers import openapi_history, openapi_surface

FRAGMENT_UNREADABLE = "fragment_unreadable"  # a note's kind: a $ref'd file that could not be read
READ_AHEAD = 4  # versions in flight per worker process
PARSED_KEPT = 16384  # fragment documents a worker keeps parsed (DigitalOcean's spec has ~2,900 files)


class VersionRead(NamedTuple):
    """What one version gave (``endpoint_surfaces``, then ``openapi_surface.visible`` of its surfaces):
    ``paths`` {key: display path}; ``surfaces`` {key: Surface as a line records it}; ``digests`` {key: 16-byte
    BLAKE2b of that surface's JSON}, so that the importer finds the endpoints a version changed without
    comparing every field of every endpoint; ``text_only``: the deprecations only words show; ``stats``
    (:class:`wpbjax.episodes.importers.openapi_surface.SurfaceStats`); ``api_version``: ``info.version`` of its first
    entry document, as text ("" when absent). A worker sends each distinct surface once (``new``, by digest)
    and :func:`read_surfaces` fills ``surfaces`` back in: a version changes a few of hundreds."""

    paths: dict
    digests: dict
    text_only: frozenset
    stats: tuple
    api_version: str
    new: dict  # digest -> Surface, the surfaces this worker had not sent before
    surfaces: dict | None = None


class _Fragments:
    """The loader of one version's other files: ``load(path) -> dict | None``; ``seen`` {path: blob id,
    or None when absent} of the git paths it was asked for, ``notes`` the files it could not read."""

    def __init__(self, version: openapi_history.Version, source: str, reader, parsed: dict | None = None):
        self.version, self.source, self.reader = version, source, reader
        # {(blob id, extension): document or the reason it is none}, kept by the worker across versions: a
        # fragment mostly has the same blob from one version to the next (the surfaces never change a document)
        self.parsed = {} if parsed is None else parsed
        self.cache: dict = {}
        self.seen: dict = {}
        self.notes: list = []

    def load(self, path: str) -> dict | None:
        normal = posixpath.normpath(str(path))
        if normal not in self.cache:
            self.cache[normal] = self._read(normal)
        return self.cache[normal]

    def _read(self, path: str) -> dict | None:
        if path.startswith(("/", "../")) or path in (".", "..") or "\n" in path:
            return self._unreadable(path, "outside the repository")
        extension = posixpath.splitext(path)[1].lower()
        if self.reader is not None:
            oid, data, problem = self.reader.lookup(f"{self.version.commit}:{path}")
            self.seen[path] = oid
        else:
            (data, problem), oid = self._read_file(path), None
        if data is None:
            return self._unreadable(path, problem or "absent")
        key = (oid, extension)
        document = self.parsed.get(key) if oid is not None else None
        if document is None:
            document = _parse_fragment(data, extension)
            if oid is not None:
                if len(self.parsed) >= PARSED_KEPT:
                    self.parsed.pop(next(iter(self.parsed)))  # the oldest
                self.parsed[key] = document
        return self._unreadable(path, document) if isinstance(document, str) else document

    def _read_file(self, path: str) -> tuple:
        root = os.path.realpath(os.path.join(self.source, self.version.commit))
        full = os.path.realpath(os.path.join(root, *path.split("/")))
        if os.path.commonpath([root, full]) != root:
            return None, "outside the version's directory"
        data = openapi_history.read_file_bytes(full) if os.path.isfile(full) else None
        return data, "" if data is not None else "absent"

    def _unreadable(self, path: str, reason: str) -> None:
        self.notes.append((FRAGMENT_UNREADABLE, path, reason))
        return None


def _parse_fragment(data: bytes, extension: str) -> dict | str:
    """A fragment file's mapping, or why it is none."""
    try:
        document = openapi_history.parse_data(data, extension)
    except ValueError as err:
        return str(err)
    return document if isinstance(document, dict) else "not a mapping"


# --- one version, in a worker ----------------------------------------------------------------------------------

_worker: dict = {}


def _start_worker(source: str, is_git: bool, parent: int | None = None) -> None:
    """Set up a reader; ``parent``: the pid of the process that started the pool (a pool worker)."""
    if parent is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent acts
        _die_with(parent)
    reader = openapi_history.BlobReader(source) if is_git else None
    _worker.update(source=source, reader=reader, parsed={}, sent={}, shown=ShownSurfaces())


def _die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (Linux; elsewhere a worker ends at its next read of the task queue)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # died before the signal was armed
        os._exit(0)


def _stop_worker() -> None:
    if _worker.get("reader") is not None:
        _worker["reader"].close()
    _worker.clear()


def _read_version(version: openapi_history.Version, order: int = 0) -> tuple:
    """(VersionRead or None when unreadable, notes, {path: blob id} of the fragments read) of one version,
    the ``order``-th candidate (a worker may read candidates out of order; see ``new`` below)."""
    # the cyclic collector paused: parsing a spec makes hundreds of thousands of containers and no cycle, and
    # the collector, run by allocation counts, would scan the growing document again and again
    paused = gc.isenabled()
    gc.disable()
    try:
        return _read(version, order)
    finally:
        if paused:
            gc.enable()


def _read(version: openapi_history.Version, order: int) -> tuple:
    reader, source = _worker["reader"], _worker["source"]
    outcome = openapi_history.read_files(
        version.files,
        reader.read if reader else openapi_history.read_file_bytes,
        f"{source}: commit {version.commit}",
    )
    if outcome.documents is None:
        return None, outcome.notes, {}
    fragments = _Fragments(version, source, reader, _worker["parsed"])
    documents = {stem: document for stem, _, document in outcome.documents}
    surfaces, stats = openapi_surface.endpoint_surfaces(documents, fragments.load)
    shown, text_only, digests = _worker["shown"].of({key: surface for key, (_, surface) in surfaces.items()})
    # A surface is left out when this worker sent it with an earlier candidate's read: the importer takes in
    # every read it started in candidate order, so it has that surface by now. ``sent``: digest -> the
    # earliest candidate whose read carried it.
    sent = _worker["sent"]
    new = {digests[key]: surface for key, surface in shown.items() if sent.get(digests[key], order) >= order}
    for digest in new:
        sent[digest] = min(sent.get(digest, order), order)
    paths = {key: path for key, (path, _) in surfaces.items()}
    read = VersionRead(paths, digests, frozenset(text_only), stats, api_version(outcome.documents[0][2]), new)
    return read, outcome.notes + fragments.notes, fragments.seen


class ShownSurfaces:
    """What a line records of each surface (:func:`openapi_surface.visible`) and its digest, remembered from
    one version to the next: a version changes a few of hundreds of surfaces, and encoding every surface as
    JSON for its digest cost as much as a tenth of an import.

    ``of({key: Surface})`` -> (shown {key: Surface}, text_only {(key, None or (side, location, name))},
    digests {key: bytes}), as ``visible`` and :func:`_digest` give them. A surface is looked up by its value
    (a tuple of tuples of strings and booleans: equal values are equal surfaces, whatever objects hold
    them); what the last ``kept`` calls used is kept."""

    def __init__(self, kept: int = 2):
        self.generations: list = [{} for _ in range(max(1, kept))]  # newest first: {Surface: (shown, marks, digest)}

    def of(self, surfaces: dict) -> tuple[dict, set, dict]:
        newest: dict = {}
        shown, text_only, digests = {}, set(), {}
        for key, surface in surfaces.items():
            found = newest.get(surface)
            if found is None:
                for generation in self.generations:
                    found = generation.get(surface)
                    if found is not None:
                        break
                else:
                    folded, marks = openapi_surface.visible({None: surface})
                    found = (folded[None], tuple(mark for _, mark in marks), _digest(folded[None]))
                newest[surface] = found
            shown[key], marks, digests[key] = found
            text_only.update((key, mark) for mark in marks)
        self.generations = [newest, *self.generations[:-1]]
        return shown, text_only, digests


_SURFACE_JSON = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":"))


def _digest(surface) -> bytes:
    """16-byte BLAKE2b of a surface's JSON (its tuples as arrays: equal surfaces, equal text)."""
    return hashlib.blake2b(_SURFACE_JSON.encode(surface).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def api_version(document: dict) -> str:
    """``info.version`` as text ("" when absent; an integer of any length)."""
    info = document.get("info")
    version = info.get("version") if isinstance(info, dict) else None
    if version is None:
        return ""
    with openapi_history.unlimited_digits():
        return str(version)


# --- every version, in order -------------------------------------------------------------------------------------


class _InProcess:
    """A read done here, when it is asked for (``--processes 1``)."""

    def __init__(self, version, order: int):
        self.version, self.order = version, order

    def get(self):
        return _read_version(self.version, self.order)


class _Readers:
    """Reads of versions: in a pool of ``processes`` workers, or here (1)."""

    def __init__(self, source: str, is_git: bool, processes: int):
        self.pool = None
        if processes == 1:
            _start_worker(source, is_git)
            return
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        self.pool = context.Pool(processes, initializer=_start_worker, initargs=(source, is_git, os.getpid()))

    def submit(self, version, order: int):
        if self.pool is None:
            return _InProcess(version, order)
        return self.pool.apply_async(_read_version, (version, order))

    def close(self) -> None:
        if self.pool is None:
            _stop_worker()
        else:
            self.pool.terminate()  # SIGTERM: a worker busy on a version is not waited for
            self.pool.join()


def read_surfaces(
    source: str, versions: Sequence, is_git: bool, processes: int = 0, progress: bool = False
) -> Iterator[tuple]:
    """Yield (version, VersionRead or None when unreadable, notes) of each version in order (the git
    candidates that are versions, module note); ``processes`` workers (0: one per core, fewer when there are
    few versions; 1: in this process)."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 0:
        raise ArgumentError(f"{arg('processes')}: expected 0 (one per core) or a number of processes; got {processes}")
    processes = processes or min(os.cpu_count() or 1, max(1, len(versions) // 4))
    bar = _bar(len(versions), progress)
    readers = _Readers(source, is_git, processes)
    try:
        queue: collections.deque = collections.deque()  # (candidate, its number, its read if started ahead)
        upcoming = enumerate(versions)
        tree: dict = {}  # path -> blob id of the files under the candidates' directories
        loaded: dict = {}  # {path: blob id} the previous version's fragments had
        ever_loaded: set = set()
        known: dict = {}  # digest -> Surface, every distinct surface the workers sent
        ahead = 1 if readers.pool is None else READ_AHEAD * processes
        while True:
            while len(queue) < ahead:
                order, version = next(upcoming, (None, None))
                if version is None:
                    break
                likely = version.entry_changed or any(path in ever_loaded for path, _ in version.changes)
                queue.append((version, order, readers.submit(version, order) if likely and readers.pool else None))
            if not queue:
                break
            version, order, pending = queue.popleft()
            for path, blob in version.changes:
                tree[path] = blob
            if version.entry_changed or _fragment_changed(version, loaded, tree):
                read, notes, loaded = (pending or readers.submit(version, order)).get()
                ever_loaded |= loaded.keys()
                if read is not None:
                    known.update(read.new)
                    read = read._replace(new={}, surfaces={key: known[digest] for key, digest in read.digests.items()})
                yield version, read, notes
            elif pending is not None:
                # read ahead and not a version after all: its worker counts the surfaces it sent as sent, so
                # they are kept for the versions that name them by digest alone
                read = pending.get()[0]
                if read is not None:
                    known.update(read.new)
            bar.update(1)
    finally:
        readers.close()
        bar.close()


def _fragment_changed(version, loaded: dict, tree: dict) -> bool:
    """Whether a file the previous version loaded, under this candidate's directories, has another blob."""
    return any(version.scope(path) and tree.get(path) != blob for path, blob in loaded.items())


def _bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, unit=" versions", dynamic_ncols=True, leave=False)
