"""An OpenAPI spec's history -> one labelled JSON line per changed (version, endpoint), and its sidecar.

    lines, meta = import_history("path/to/openapi-repo", ["openapi/spec3.json", "openapi/spec2.json"])
    write_history("history.jsonl.gz", lines, meta)

Each line (sorted keys, ASCII; lines in version order, then endpoint order)::

    {"version": 41, "date": "2018-06-09T00:10:31Z", "commit": "...", "endpoint": "POST /v1/charges",
     "params": [{"name", "in", "type", "required", "deprecated"}, ...], "deprecated": false, "removed": false,
     "changes": [{"kind", "param", "glitch", "detail"}, ...], "breaking": true}

``version`` counts the readable versions (the glitch window is in these); the first version lists every
endpoint as ``endpoint_added`` (the baseline). An endpoint is ``METHOD path``, or ``METHOD host+path`` for a
(method, path) that two hosts serve in one version somewhere in the history. ``breaking``: some change that
is breaking and not a glitch (:mod:`wpbjax.episodes.drift_labels`). Versions are read and parsed in a pool
of processes (one ``git cat-file --batch`` each); the labels need the whole history (a glitch is known only
once it is undone), so they are computed after the walk.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import json
import os
from collections.abc import Sequence

from wpbjax.episodes import drift_labels, openapi_history
from wpbjax.episodes.openapi_history import SpecError
from wpbjax.episodes.openapi_read import read_surfaces
from wpbjax.episodes.openapi_surface import Param, Surface, visible

IMPORTER = "wpbjax import-openapi"
IMPORTER_VERSION = 1  # bump when the lines an input gives change
SCHEMA = "wpbjax.openapi-history/1"

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


def import_history(
    source: str, patterns: Sequence[str] | str, processes: int = 0, progress: bool = False
) -> tuple[list, dict]:
    """(lines, sidecar record) of the spec's history in ``source`` (module note); the record's ``counts``
    say how many versions were unreadable and how many were read from a twin."""
    patterns = openapi_history.parse_patterns(patterns)
    versions, is_git = find_versions(source, patterns)
    readable, timelines, previous = [], collections.defaultdict(list), {}
    unreadable, fallbacks, text_deprecations = [], collections.Counter(), collections.Counter()
    for version, read, notes in read_surfaces(source, versions, is_git, processes, progress):
        if read is None:
            unreadable.append(version)
            continue
        for kind in sorted({kind for kind, _, _ in notes}):
            fallbacks[kind] += 1  # versions read from a twin because a file was missing / invalid
        surfaces, text_only = visible(read.surfaces)
        index = len(readable)
        readable.append(version)
        for key in previous.keys() | surfaces.keys():
            before, after = previous.get(key), surfaces.get(key)
            if before != after:
                timelines[key].append((index, after))
                _count_text_deprecations(key, before, after, text_only, text_deprecations)
        previous = surfaces
    if not readable:
        first = unreadable[0]
        raise SpecError(
            f"{source}: commit {first.commit}, file {first.files[0].stem}: no readable version (the "
            f"contents of every one of the {len(unreadable)} versions are absent)"
        )
    lines = label_lines(readable, timelines)
    meta = _sidecar(
        source,
        patterns,
        is_git,
        readable + unreadable,
        readable,
        unreadable,
        fallbacks,
        text_deprecations,
        timelines,
        lines,
    )
    return lines, meta


def _count_text_deprecations(key, before, after, text_only: set, counter) -> None:
    """Deprecations that only the description's words show (no flag), as they appear."""
    if before is None or after is None:
        return
    if (key, None) in text_only and not before.deprecated:
        counter["endpoint"] += 1
    old = {(param.location, param.name): param for param in before.params}
    for param in after.params:
        was = old.get((param.location, param.name))
        if was is not None and (key, (param.location, param.name)) in text_only and not was.deprecated:
            counter["param"] += 1


def endpoint_names(keys) -> dict:
    """{(host, METHOD, path): display name}: ``METHOD path``, with the host where another host serves the
    same (method, path)."""
    hosts = collections.defaultdict(set)
    for host, method, path in keys:
        hosts[(method, path)].add(host)
    return {
        (host, method, path): f"{method} {host}{path}" if len(hosts[(method, path)]) > 1 else f"{method} {path}"
        for host, method, path in keys
    }


def label_lines(
    readable: Sequence,
    timelines: dict,
    window: int = drift_labels.GLITCH_WINDOW,
    spec_wide: int = drift_labels.SPEC_WIDE,
) -> list[dict]:
    """The history's lines from each endpoint's timeline ({key: [(version, Surface or None)]})."""
    names = endpoint_names(timelines)
    labelled = {key: drift_labels.label_timeline(timeline, window) for key, timeline in timelines.items()}
    transitions = collections.Counter(
        (version, change.param, change.detail)
        for points in labelled.values()
        for version, _, changes in points
        for change in changes
        if change.kind == "type_changed" and not change.glitch
    )
    respelled = drift_labels.respelled(transitions, spec_wide)
    rows = []
    for key, points in labelled.items():
        last = None
        for version, surface, changes in points:
            changes = [
                change._replace(kind="type_respelled")
                if (version, change.param, change.detail) in respelled
                and change.kind == "type_changed"
                and not change.glitch
                else change
                for change in changes
            ]
            shown = surface if surface is not None else last
            rows.append(
                (version, names[key], _line(readable[version], version, names[key], shown, surface is None, changes))
            )
            last = shown
    rows.sort(key=lambda row: row[:2])
    return [line for _, _, line in rows]


def _line(version, index: int, endpoint: str, surface: Surface, removed: bool, changes: Sequence) -> dict:
    return {
        "version": index,
        "date": version.date,
        "commit": version.commit,
        "endpoint": endpoint,
        "params": []
        if removed
        else [
            {
                "name": param.name,
                "in": param.location,
                "type": param.type,
                "required": param.required,
                "deprecated": param.deprecated,
            }
            for param in surface.params
        ],
        "deprecated": bool(surface.deprecated) and not removed,
        "removed": removed,
        "changes": [
            {"kind": change.kind, "param": change.param, "glitch": change.glitch, "detail": change.detail}
            for change in changes
        ],
        "breaking": any(drift_labels.is_breaking(change) for change in changes),
    }


# --- lines -> timelines again (for re-deriving the labels) -------------------------------------------------------


def timelines_from_lines(lines: Sequence[dict]) -> tuple[list, dict]:
    """(versions [(commit, date)], {endpoint name: [(version, Surface or None)]}) of a history's lines: what
    :func:`label_lines` needs to label them again."""
    versions: dict = {}
    timelines = collections.defaultdict(list)
    for line in lines:
        versions[line["version"]] = (line["commit"], line["date"])
        surface = (
            None
            if line["removed"]
            else Surface(
                bool(line["deprecated"]),
                False,
                tuple(
                    Param(param["name"], param["in"], param["type"], param["required"], param["deprecated"], False)
                    for param in line["params"]
                ),
            )
        )
        timelines[("", line["endpoint"].split(" ", 1)[0], line["endpoint"].split(" ", 1)[1])].append(
            (line["version"], surface)
        )
    return versions, timelines


def relabel(lines: Sequence[dict]) -> list[dict]:
    """The lines labelled again from their own surfaces (equal to ``lines`` for an importer's output)."""
    versions, timelines = timelines_from_lines(lines)
    readable = _Versions(versions)
    return label_lines(readable, timelines)


class _Versions:
    """version index -> an object with ``commit`` and ``date`` (from the lines)."""

    def __init__(self, versions: dict):
        self.versions = versions

    def __getitem__(self, index: int):
        commit, date = self.versions[index]
        return openapi_history.Version(commit, date, "", ())


# --- the sidecar and the files ------------------------------------------------------------------------------------


def _sidecar(
    source, patterns, is_git, versions, readable, unreadable, fallbacks, text_deprecations, timelines, lines
) -> dict:
    kinds: dict = collections.Counter()
    for line in lines:
        for change in line["changes"]:
            kinds[change["kind"] + (" (glitch)" if change["glitch"] else "")] += 1
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
    first = {key for key, timeline in timelines.items() if timeline[0][0] == 0}
    last = {key for key, timeline in timelines.items() if timeline[-1][1] is not None}
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
            "versions": len(versions),
            "readable": len(readable),
            "unreadable": len(unreadable),
            "unreadable_commits": (
                [[unreadable[0].commit, unreadable[0].date], [unreadable[-1].commit, unreadable[-1].date]]
                if unreadable
                else None
            ),
            "read_from_twin_missing": fallbacks.get("missing", 0),
            "read_from_twin_invalid": fallbacks.get("invalid", 0),
            "endpoints_ever": len(timelines),
            "endpoints_first": len(first),
            "endpoints_last": len(last),
            "lines": len(lines),
            "breaking_lines": sum(line["breaking"] for line in lines),
            "glitch_changes": sum(change["glitch"] for line in lines for change in line["changes"]),
            "text_only_deprecations": dict(text_deprecations),
            "changes": dict(sorted(kinds.items())),
        },
    }


def dumps_line(line: dict) -> str:
    return json.dumps(line, sort_keys=True)


def write_history(out: str | os.PathLike, lines: Sequence[dict], meta: dict) -> dict:
    """Write the lines (gzip when ``out`` ends in .gz, no timestamp: equal lines, equal bytes) and the sidecar
    ``out + ".meta.json"`` (``meta`` + file, rows, sha256) as one commit: both written under temporary names,
    then renamed into place, the old history kept aside until the sidecar is in, and put back if it cannot
    be (a failure leaves the old pair, or none). Refuses an ``out`` inside ``meta["source"]`` (an input).
    Returns the sidecar record."""
    from wpbjax.atomic import check_writable, destination

    out = os.fspath(check_writable(out))
    if meta.get("source"):
        openapi_history.refuse_output_inside(out, meta["source"])
    data = "".join(dumps_line(line) + "\n" for line in lines).encode("ascii")
    if out.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    meta = dict(meta, file=os.path.basename(out), rows=len(lines), sha256=hashlib.sha256(data).hexdigest())
    sidecar = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode("utf-8")
    _commit_pair([(destination(out), data), (destination(sidecar_path(out)), sidecar)])
    return meta


def _commit_pair(files: Sequence[tuple]) -> None:
    """Write each (path, bytes) under a temporary name, then rename them into place in order; if a rename
    fails (or is interrupted), the ones already in place are put back as they were."""
    from wpbjax.atomic import temporary_name

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


def read_history(path: str | os.PathLike) -> list[dict]:
    """The lines of a history file (gzip or not; UTF-8): each a JSON object; an EpisodeFormatError naming
    the file and line of one that is not, and the file when it has no line."""
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
    return lines
