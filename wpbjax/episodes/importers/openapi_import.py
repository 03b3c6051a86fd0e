"""An OpenAPI spec's history -> one labelled JSON line per changed (version, endpoint), and its sidecar.

    lines, meta = import_history("path/to/openapi-repo", ["openapi/spec3.json", "openapi/spec2.json"])
    write_history("history.jsonl.gz", lines, meta)

Each line (sorted keys, ASCII; lines in version order, then endpoint order)::

    {"version": 41, "date": "2018-06-09T00:10:31Z", "commit": "...", "api_version": "2018-05-21",
     "endpoint": "POST /v1/charges",
     "request": [{"name", "in", "type", "required", "enum", "deprecated"}, ...],
     "response": [{"name", "type", "required", "enum", "deprecated"}, ...],
     "deprecated": false, "removed": false,
     "changes": [{"kind", "field", "level", "glitch", "detail"}, ...], "level": "breaking", "breaking": true}

``version`` counts the versions whose surface changed (the glitch window is in these; a commit that changed
only descriptions or examples is no version); ``api_version`` is the spec's ``info.version``; the first
version lists every endpoint as ``endpoint_added`` (the baseline). An endpoint is ``METHOD path`` with the
server's base path folded in (:mod:`wpbjax.episodes.importers.openapi_surface`), spelled as it first appeared.
``level`` is the worst level of the line's changes and ``breaking`` is ``level == "breaking"``
(:mod:`wpbjax.episodes.importers.drift_labels`). Versions are read and parsed in a pool of processes
(:mod:`wpbjax.episodes.importers.openapi_read`); the labels need the whole history (a glitch is known only once it is
undone), so they are computed after the walk.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import gzip
import hashlib
import json
import os
from collections.abc import Sequence
from typing import NamedTuple

from wpbjax.episodes.importers import drift_labels, openapi_history
from wpbjax.episodes.importers.openapi_history import SpecError
from wpbjax.episodes.importers.openapi_read import read_surfaces
from wpbjax.episodes.importers.openapi_surface import Field, Surface

IMPORTER = "wpbjax import-openapi"
IMPORTER_VERSION = 2  # bump when the lines an input gives change
SCHEMA = "wpbjax.openapi-history/2"

# --- versions -> labelled lines --------------------------------------------------------------------------------


def find_versions(source: str, patterns: Sequence[str]) -> tuple[list, bool]:
    """(versions, is git) of ``source``; SpecError for a source that is neither a git repository nor a
    directory of dated versions, or that has no version matching a pattern."""
    source = os.fspath(source)
    if not os.path.exists(source):
        raise SpecError(f"{source}: no such file or directory")
    is_git = os.path.isdir(source) and openapi_history.is_git_repository(source)
    if is_git:
        versions = openapi_history.git_versions(source, patterns)
    elif openapi_history.has_dated_versions(source):
        versions = openapi_history.directory_versions(source, patterns)
    else:
        raise SpecError(
            f"{source}: not a git repository, nor a directory of dated versions (subdirectories named YYYY-MM-DD...)"
        )
    if not versions:
        raise SpecError(
            f"{source}: no commit has a file matching --spec {','.join(patterns)} (as .json, .yaml or .yml)"
        )
    return versions, is_git


class _Walk:
    """What the walk over the versions gathers (module note): each endpoint's timeline of surfaces."""

    def __init__(self):
        self.readable = []  # openapi_history.Version of each surface-changing version, in order
        self.api_versions = []  # its info.version
        self.timelines = collections.defaultdict(list)  # key -> [(version index, Surface or None)]
        self.names = {}  # key -> "METHOD path" as first seen
        self.previous = {}  # the last version's surfaces
        self.digests = {}  # ... and their digests (openapi_read.VersionRead)
        self.versions = []  # every readable commit: [commit, date, api_version, version index or None]
        self.unreadable, self.fallbacks = [], collections.Counter()
        self.text_deprecations, self.stats = collections.Counter(), collections.Counter()

    def add(self, version, read, notes) -> None:
        if read is None:
            self.unreadable.append(version)
            return
        for kind in sorted({kind for kind, _, _ in notes}):
            self.fallbacks[kind] += 1  # versions read from a twin (a file missing / invalid), fragments unread
        for name, value in read.stats._asdict().items():
            self.stats[name] += value
        surfaces, text_only, digests = read.surfaces, read.text_only, read.digests
        changed = [key for key in self.digests.keys() | digests.keys() if self.digests.get(key) != digests.get(key)]
        if not changed:
            self.versions.append([version.commit, version.date, read.api_version, None])
            return
        index = len(self.readable)
        self.readable.append(version)
        self.api_versions.append(read.api_version)
        self.versions.append([version.commit, version.date, read.api_version, index])
        for key in sorted(changed):
            before, after = self.previous.get(key), surfaces.get(key)
            self.timelines[key].append((index, after))
            _count_text_deprecations(key, before, after, text_only, self.text_deprecations)
            if key not in self.names and after is not None:
                self.names[key] = f"{key[0]} {read.paths[key]}"
        self.previous, self.digests = surfaces, digests


def import_history(
    source: str, patterns: Sequence[str] | str, processes: int = 0, progress: bool = False
) -> tuple[list, dict]:
    """(lines, sidecar record) of the spec's history in ``source`` (module note); the record's ``counts``
    say how many versions were unreadable and how many were read from a twin."""
    patterns = openapi_history.parse_patterns(patterns)
    versions, is_git = find_versions(source, patterns)
    walk = _Walk()
    with _no_cyclic_gc():
        for version, read, notes in read_surfaces(source, versions, is_git, processes, progress):
            walk.add(version, read, notes)
    if not walk.readable:
        first = walk.unreadable[0]
        raise SpecError(
            f"{source}: commit {first.commit}, file {first.files[0].stem}: no readable version (the "
            f"contents of every one of the {len(walk.unreadable)} versions are absent)"
        )
    with _no_cyclic_gc():
        lines = label_lines(_Versions.of(walk.readable, walk.api_versions), walk.timelines, unique_names(walk.names))
    return lines, _sidecar(source, patterns, is_git, walk, lines)


@contextlib.contextmanager
def _no_cyclic_gc():
    """The cyclic collector paused: the timelines and lines are trees of tuples and dicts, without cycles, and
    the collector, run by allocation counts, would only rescan them as they grow (a tenth of an import)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _count_text_deprecations(key, before, after, text_only: set, counter) -> None:
    """Deprecations that only the description's words show (no flag), as they appear."""
    if before is None or after is None:
        return
    if (key, None) in text_only and not before.deprecated:
        counter["endpoint"] += 1
    old = {(field.side, field.location, field.name): field for field in before.fields}
    for field in after.fields:
        was = old.get((field.side, field.location, field.name))
        if was is not None and (key, (field.side, field.location, field.name)) in text_only and not was.deprecated:
            counter[field.side] += 1


def unique_names(names: dict) -> dict:
    """{key: display name}, a name two keys share suffixed with its key's normalised path."""
    count = collections.Counter(names.values())
    return {key: name if count[name] == 1 else f"{name} [{key[1]}]" for key, name in names.items()}


def label_lines(
    versions,
    timelines: dict,
    names: dict,
    window: int = drift_labels.GLITCH_WINDOW,
    spec_wide: int = drift_labels.SPEC_WIDE,
) -> list[dict]:
    """The history's lines from each endpoint's timeline ({key: [(version, Surface or None)]}); ``versions``:
    version index -> an object with ``commit``, ``date`` and ``api_version``; ``names``: {key: endpoint}."""
    labelled = {key: drift_labels.label_timeline(timeline, window) for key, timeline in timelines.items()}
    transitions = collections.Counter(
        (version, change.field, change.detail)
        for points in labelled.values()
        for version, _, changes in points
        for change in changes
        if change.kind in ("request_type_narrowed", "response_type_changed") and not change.glitch
    )
    respelled = drift_labels.respelled(transitions, spec_wide)
    records: dict = {}  # Field -> its record, one dict per distinct field: an endpoint's lines repeat most
    rows = []
    for key, points in labelled.items():
        last = None
        for version, surface, changes in points:
            changes = [
                change._replace(kind="type_respelled")
                if (version, change.field, change.detail) in respelled
                and change.kind in ("request_type_narrowed", "response_type_changed")
                and not change.glitch
                else change
                for change in changes
            ]
            shown = surface if surface is not None else last
            rows.append(
                (
                    version,
                    names[key],
                    _line(versions[version], version, names[key], shown, surface is None, changes, records),
                )
            )
            last = shown
    rows.sort(key=lambda row: row[:2])
    return [line for _, _, line in rows]


def _field_record(field: Field) -> dict:
    record = {"name": field.name, "type": field.type, "required": field.required, "enum": list(field.enum)}
    if field.side == "request":
        record["in"] = field.location
    record["deprecated"] = field.deprecated
    return record


def _line(
    version, index: int, endpoint: str, surface: Surface, removed: bool, changes: Sequence, records: dict
) -> dict:
    fields = () if removed else surface.fields
    for field in fields:
        if field not in records:
            records[field] = _field_record(field)
    level = drift_labels.worst_level(change.level for change in changes)
    return {
        "version": index,
        "date": version.date,
        "commit": version.commit,
        "api_version": version.api_version,
        "endpoint": endpoint,
        "request": [records[field] for field in fields if field.side == "request"],
        "response": [records[field] for field in fields if field.side == "response"],
        "deprecated": bool(surface.deprecated) and not removed,
        "removed": removed,
        "changes": [
            {
                "kind": change.kind,
                "field": change.field,
                "level": change.level,
                "glitch": change.glitch,
                "detail": change.detail,
            }
            for change in changes
        ],
        "level": level,
        "breaking": level == "breaking",
    }


# --- lines -> timelines again (for re-deriving the labels) -------------------------------------------------------


def surface_of(line: dict) -> Surface | None:
    """The surface a line records (None for a removed endpoint)."""
    if line["removed"]:
        return None
    fields = [
        Field(
            "request",
            record["in"],
            record["name"],
            record["type"],
            record["required"],
            tuple(record["enum"]),
            record["deprecated"],
            False,
        )
        for record in line["request"]
    ] + [
        Field(
            "response",
            "body",
            record["name"],
            record["type"],
            record["required"],
            tuple(record["enum"]),
            record["deprecated"],
            False,
        )
        for record in line["response"]
    ]
    return Surface(bool(line["deprecated"]), False, tuple(sorted(fields, key=lambda f: (f.side, f.location, f.name))))


def timelines_from_lines(lines: Sequence[dict]) -> tuple[dict, dict]:
    """({version: line}, {endpoint: [(version, Surface or None)]}) of a history's lines: what
    :func:`label_lines` needs to label them again (the endpoint name is the key)."""
    versions: dict = {}
    timelines = collections.defaultdict(list)
    for line in lines:
        versions[line["version"]] = line
        timelines[line["endpoint"]].append((line["version"], surface_of(line)))
    return versions, timelines


def relabel(lines: Sequence[dict]) -> list[dict]:
    """The lines labelled again from their own surfaces (equal to ``lines`` for an importer's output)."""
    versions, timelines = timelines_from_lines(lines)
    return label_lines(_Versions(versions), timelines, {name: name for name in timelines})


class _Versions:
    """version index -> an object with ``commit``, ``date`` and ``api_version``."""

    def __init__(self, versions: dict):
        self.versions = versions  # index -> a dict with commit, date, api_version

    @classmethod
    def of(cls, readable: Sequence, api_versions: Sequence) -> _Versions:
        return cls(
            {
                index: {"commit": version.commit, "date": version.date, "api_version": api_version}
                for index, (version, api_version) in enumerate(zip(readable, api_versions))
            }
        )

    def __getitem__(self, index: int):
        record = self.versions[index]
        return _Version(record["commit"], record["date"], record.get("api_version", ""))


class _Version(NamedTuple):
    commit: str
    date: str
    api_version: str


# --- the sidecar and the files ------------------------------------------------------------------------------------


def _sidecar(source, patterns, is_git, walk: _Walk, lines) -> dict:
    kinds: dict = collections.Counter()
    levels: dict = collections.Counter(line["level"] for line in lines)
    for line in lines:
        for change in line["changes"]:
            kinds[change["kind"] + (" (glitch)" if change["glitch"] else "")] += 1
    readable = walk.readable
    licence = (
        openapi_history.git_licence(source, readable[-1].commit)
        if is_git
        else openapi_history.directory_licence(source)
    )
    origin = None
    if is_git:
        import subprocess

        done = subprocess.run(
            ["git", "-C", source, "config", "--get", "remote.origin.url"], capture_output=True, text=True, check=False
        )
        origin = done.stdout.strip() or None
    timelines = walk.timelines
    first = {key for key, timeline in timelines.items() if timeline[0][0] == 0}
    last = {key for key, timeline in timelines.items() if timeline[-1][1] is not None}
    unreadable = walk.unreadable
    return {
        "schema": SCHEMA,
        "importer": {
            "name": IMPORTER,
            "version": IMPORTER_VERSION,
            "glitch_window": drift_labels.GLITCH_WINDOW,
            "spec_wide": drift_labels.SPEC_WIDE,
        },
        "source": os.fspath(source),
        "origin": origin,
        "kind": "git" if is_git else "directory",
        "spec": list(patterns),
        "commits": {
            "first": readable[0].commit,
            "first_date": readable[0].date,
            "last": readable[-1].commit,
            "last_date": readable[-1].date,
        },
        "licence": licence,
        "counts": {
            "versions": len(walk.versions) + len(walk.unreadable),  # candidates that were versions
            "readable": len(walk.versions),
            "surface_versions": len(readable),
            "unreadable": len(unreadable),
            "unreadable_commits": (
                [[unreadable[0].commit, unreadable[0].date], [unreadable[-1].commit, unreadable[-1].date]]
                if unreadable
                else None
            ),
            "read_from_twin_missing": walk.fallbacks.get("missing", 0),
            "read_from_twin_invalid": walk.fallbacks.get("invalid", 0),
            "fragment_unreadable": walk.fallbacks.get("fragment_unreadable", 0),
            "surface": dict(sorted(walk.stats.items())),
            "endpoints_ever": len(timelines),
            "endpoints_first": len(first),
            "endpoints_last": len(last),
            "lines": len(lines),
            "breaking_lines": levels.get("breaking", 0),
            "levels": dict(sorted(levels.items())),
            "glitch_changes": sum(change["glitch"] for line in lines for change in line["changes"]),
            "text_only_deprecations": dict(sorted(walk.text_deprecations.items())),
            "changes": dict(sorted(kinds.items())),
        },
        # every readable commit: [commit, date, info.version, version index or null (no surface change)]
        "versions": walk.versions,
    }


def dumps_line(line: dict) -> str:
    return json.dumps(line, sort_keys=True)


# --- on disk: each surface stored as its change from the endpoint's line before -------------------------------
# A line's surface is hundreds of fields of which a version changes a few, and an endpoint's lines lie far
# apart in the file (beyond gzip's window), so the file keeps the first line's surface whole and every later
# one as {"set": [records new or changed], "drop": [keys gone]}; read_history puts the lines back whole.

SIDES = ("request", "response")


def _record_key(record: dict) -> str:
    return f"{record['in']}.{record['name']}" if "in" in record else record["name"]


def pack_lines(lines: Sequence[dict]) -> list[dict]:
    """The lines as stored (module note above): ``request`` / ``response`` replaced, after an endpoint's first
    line, by ``request_delta`` / ``response_delta``."""
    last: dict = {}  # endpoint -> ({key: record} of its last line, per side)
    packed = []
    for line in lines:
        before = last.get(line["endpoint"])
        out = dict(line)
        keyed = tuple(_keyed(line[side]) for side in SIDES)
        if before is not None:
            for side, old, new in zip(SIDES, before, keyed):
                del out[side]
                # most records are the very dicts of the line before (label_lines makes one per field)
                out[side + "_delta"] = {
                    "set": [
                        record
                        for key, record in new.items()
                        if (known := old.get(key)) is not record and known != record
                    ],
                    "drop": sorted(old.keys() - new.keys()),
                }
        last[line["endpoint"]] = keyed
        packed.append(out)
    return packed


def _keyed(records: Sequence[dict]) -> dict:
    """{_record_key(record): record}, without a call per record."""
    return {f"{record['in']}.{record['name']}" if "in" in record else record["name"]: record for record in records}


def unpack_lines(packed: Sequence[dict], where: str = "history") -> list[dict]:
    """The whole lines of a stored history (:func:`pack_lines` undone)."""
    last: dict = {}  # endpoint -> side -> ({key: record}, [keys in order])
    order_of: dict = {}  # record key -> its sort key (a key's ``in`` and ``name`` never change)
    lines = []
    for number, stored in enumerate(packed, start=1):
        line = dict(stored)
        endpoint = line.get("endpoint")
        state = last.setdefault(endpoint, {})
        for side in SIDES:
            delta = line.pop(side + "_delta", None)
            if delta is None:
                if side in line:
                    records = line[side]
                    fields = {_record_key(record): record for record in records}
                    order_of.update((key, _sort_key(record)) for key, record in fields.items())
                    state[side] = fields, sorted(fields, key=order_of.__getitem__)
                continue
            if side not in state:
                raise ValueError(
                    f"{where}: line {number} changes endpoint {endpoint!r}'s surface before any line gives it"
                )
            fields, order = state[side]
            fields, added = apply_delta(fields, delta, _record_key)
            for record in delta["set"]:
                order_of.setdefault(_record_key(record), _sort_key(record))
            if added:
                order = sorted(fields, key=order_of.__getitem__)
            elif delta["drop"]:
                order = [key for key in order if key in fields]
            state[side] = fields, order
            line[side] = [fields[key] for key in order]
        lines.append(line)
    return lines


def apply_delta(before: dict, delta: dict, key_of, value_of=None) -> tuple[dict, bool]:
    """(a new {key: value} map: ``before`` with ``delta``'s ``drop`` keys gone and its ``set`` records put
    in, each under ``key_of(record)`` as ``value_of(record)`` (the record itself by default), whether a key
    was added)."""
    after = dict(before)
    for key in delta["drop"]:
        after.pop(key, None)
    added = False
    for record in delta["set"]:
        key = key_of(record)
        added |= key not in after
        after[key] = record if value_of is None else value_of(record)
    return after, added


def _sort_key(record: dict) -> tuple:
    return (record.get("in", ""), record["name"])


def write_history(out: str | os.PathLike, lines: Sequence[dict], meta: dict) -> dict:
    """Write the lines (gzip when ``out`` ends in .gz, no timestamp: equal lines, equal bytes) and the sidecar
    ``out + ".meta.json"`` (``meta`` + file, rows, sha256) as one commit: both written under temporary names,
    then renamed into place, the old history kept aside until the sidecar is in, and put back if it cannot
    be (a failure leaves the old pair, or none). Refuses an ``out`` inside ``meta["source"]`` (an input).
    Returns the sidecar record."""
    from wpbjax.files.atomic import check_writable, destination

    out = os.fspath(check_writable(out))
    if meta.get("source"):
        openapi_history.refuse_output_inside(out, meta["source"])
    data = "".join(dumps_line(line) + "\n" for line in pack_lines(lines)).encode("ascii")
    if out.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    meta = dict(meta, file=os.path.basename(out), rows=len(lines), sha256=hashlib.sha256(data).hexdigest())
    meta["rebuild"] = rebuild_command(meta)
    sidecar = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode("utf-8")
    _commit_pair([(destination(out), data), (destination(sidecar_path(out)), sidecar)])
    return meta


def rebuild_command(meta: dict) -> str:
    """The commands that make this history again, byte for byte, from a clone of its origin."""
    origin = meta.get("origin") or meta["source"]
    return (
        f"git clone {origin} source && wpbjax import-openapi source --spec {','.join(meta['spec'])} "
        f"--origin {origin} --out {meta['file']}"
    )


def _commit_pair(files: Sequence[tuple]) -> None:
    """Write each (path, bytes) under a temporary name, then rename them into place in order; if a rename
    fails (or is interrupted), the ones already in place are put back as they were."""
    from wpbjax.files.atomic import temporary_name

    temporaries, backups, placed = {}, {}, []
    try:
        for path, data in files:
            temporaries[path] = temporary_name(path)
            with open(temporaries[path], "wb") as handle:
                handle.write(data)
        for path, _ in files:
            if os.path.exists(path):
                backups[path] = temporary_name(path)
                os.link(path, backups[path])  # the old file stays reachable until the whole pair is in
            os.replace(temporaries[path], path)
            del temporaries[path]
            placed.append(path)
    except BaseException:  # Ctrl-C too
        for path in reversed(placed):
            if path in backups:
                os.replace(backups.pop(path), path)
            else:
                os.remove(path)
        raise
    finally:
        for leftover in [*temporaries.values(), *backups.values()]:
            if os.path.exists(leftover):
                os.remove(leftover)


def sidecar_path(path: str | os.PathLike) -> str:
    return os.fspath(path) + ".meta.json"


def read_history(path: str | os.PathLike, packed: bool = False) -> list[dict]:
    """The lines of a history file (gzip or not; UTF-8): each a JSON object, whole (``packed``: as stored,
    :func:`pack_lines`); an EpisodeFormatError naming the file and line of one that is not, and the file
    when it has no line."""
    from wpbjax.episodes.jsonl import EpisodeFormatError
    from wpbjax.episodes.jsontext import parse_json, text_lines

    path = os.fspath(path)
    lines = []
    for number, text in text_lines(path, EpisodeFormatError, "history file"):
        if text.strip():
            line = parse_json(text, f"{path}:{number}", EpisodeFormatError)
            if not isinstance(line, dict):
                raise EpisodeFormatError(f"{path}:{number}: not a history line (a JSON object)")
            lines.append(line)
    if not lines:
        raise EpisodeFormatError(f"{path}: an empty history (no lines); write one with wpbjax import-openapi")
    try:
        return lines if packed else unpack_lines(lines, path)
    except (KeyError, TypeError, AttributeError) as err:
        raise EpisodeFormatError(f"{path}: not an imported OpenAPI history (a line lacks {err})") from None
    except ValueError as err:
        raise EpisodeFormatError(str(err)) from None
