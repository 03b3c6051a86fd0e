"""The versions of an OpenAPI spec over time, read from a git repository or a directory of dated copies.

A *pattern* names where the spec lives (``openapi/spec3.json``, ``specs/*.yaml``, ``api/**/openapi.json``):
``*`` and ``?`` match within one path segment, ``**/`` any run of directories. Its extension, if ``.json``,
``.yaml`` or ``.yml``, is dropped, so a pattern names a *stem* and its twins in every format; a version reads
each stem from JSON if it can, else from YAML. Patterns are listed in order of preference: a version's spec is
every stem the first matching pattern names in it (a spec split into several files is one pattern with a
wildcard; a spec moved or renamed over time is one pattern per place it has lived).

Git: the commits on the first-parent line that touch a matching file, oldest first; a commit whose chosen
files are unchanged from the version before is not a new version. Directory: the subdirectories whose names
start with a date (``2019-02-11``, ``2019-02-11T10:00:00Z``, ``2019-02-11_release``), in name order, each a
version whose files the patterns match inside it.

A file whose contents are absent (a blob the repository does not hold) is *missing*: the version is read from
its twin, or, with no twin, skipped as *unreadable* and counted. A file that is present but is not a JSON or
YAML OpenAPI / Swagger document is *invalid*: the twin is used when it reads, else it is an error
(:class:`SpecError`, naming the source, the commit and the file).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence

FORMATS = (".json", ".yaml", ".yml")  # order of preference among a stem's twins
DATED_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)Z?)?")
LICENCE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING")


class SpecError(ValueError):
    """Bad input to the importer: the message names the source, and the commit and file where there is one."""


@dataclasses.dataclass(frozen=True)
class SpecFile:
    """One stem of a version: its path without extension and, per format present, where its bytes are
    (a git blob id, or a file path for a directory source)."""

    stem: str
    forms: tuple  # ((extension, blob id or file path), ...) in FORMATS order


@dataclasses.dataclass(frozen=True)
class Version:
    """One version of the spec: ``commit`` (git commit id, or the dated subdirectory's name), ``date``
    (UTC, ISO-8601), the pattern it was found by and its files."""

    commit: str
    date: str
    pattern: str
    files: tuple  # SpecFile, sorted by stem


def parse_patterns(text: str | Sequence[str]) -> list[str]:
    """Comma-separated patterns (or a list of them), each stripped of a format extension; a ValueError
    for an empty list."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    patterns = [_stem(part.strip().lstrip("/")) for part in parts if part.strip()]
    if not patterns:
        raise SpecError("--spec: give at least one pattern (e.g. openapi/spec3.json)")
    return patterns


def _stem(path: str) -> str:
    for extension in FORMATS:
        if path.endswith(extension):
            return path[: -len(extension)]
    return path


def pattern_regex(pattern: str) -> re.Pattern:
    """A regex over stems: ``**/`` any directories, ``*`` within a segment, ``?`` one character."""
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:[^/]+/)*")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out) + r"\Z")


def choose_files(paths: dict, patterns: Sequence[str]) -> tuple[str, tuple] | None:
    """(pattern, SpecFiles) of the first pattern matching a stem among ``paths`` ({path: location}); None."""
    stems: dict = {}
    for path, location in paths.items():
        for extension in FORMATS:
            if path.endswith(extension):
                stems.setdefault(path[: -len(extension)], {})[extension] = location
    for pattern in patterns:
        regex = pattern_regex(pattern)
        matched = sorted(stem for stem in stems if regex.match(stem))
        if matched:
            files = tuple(
                SpecFile(stem, tuple((ext, stems[stem][ext]) for ext in FORMATS if ext in stems[stem]))
                for stem in matched
            )
            return pattern, files
    return None


# --- git ---------------------------------------------------------------------------------------------------


def is_git_repository(source: str) -> bool:
    done = subprocess.run(["git", "-C", source, "rev-parse", "--git-dir"], capture_output=True, text=True, check=False)
    return done.returncode == 0


def _git(source: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", source, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SpecError(f"{source}: git {args[0]} failed: {done.stderr.strip().splitlines()[-1:] or ['']}")
    return done.stdout


def _utc(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_versions(source: str, patterns: Sequence[str], ref: str = "HEAD") -> list[Version]:
    """The versions of the spec on ``ref``'s first-parent line, oldest first (module note)."""
    pathspecs = [f":(glob){pattern}{extension}" for pattern in patterns for extension in FORMATS]
    log = _git(
        source,
        "log",
        ref,
        "--first-parent",
        "-m",
        "--root",
        "--no-renames",
        "--raw",
        "--no-abbrev",
        "--format=%x00%H %ct",
        "--",
        *pathspecs,
    )
    commits = []
    for block in log.split("\x00")[1:]:
        lines = block.strip("\n").split("\n")
        commit, epoch = lines[0].split()
        changes = []
        for line in lines[1:]:
            if line.startswith(":"):
                meta, path = line.split("\t", 1)
                fields = meta.split()
                changes.append((path, fields[3], fields[4]))  # path, new blob, status
        commits.append((commit, int(epoch), changes))
    commits.reverse()
    tree: dict = {}
    versions, previous = [], None
    for commit, epoch, changes in commits:
        for path, blob, status in changes:
            if status.startswith("D"):
                tree.pop(path, None)
            else:
                tree[path] = blob
        chosen = choose_files(tree, patterns)
        if chosen is None or chosen == previous:
            continue
        previous = chosen
        versions.append(Version(commit, _utc(epoch), chosen[0], chosen[1]))
    return versions


class BlobReader:
    """Blobs of one repository through one ``git cat-file --batch`` process: ``read(blob)`` is the bytes,
    or None for a blob the repository does not hold."""

    def __init__(self, source: str):
        self.process = subprocess.Popen(
            ["git", "-C", source, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, blob: str) -> bytes | None:
        self.process.stdin.write(blob.encode() + b"\n")
        self.process.stdin.flush()
        header = self.process.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None  # "<id> missing"
        data = self.process.stdout.read(int(header[2]))
        self.process.stdout.read(1)  # the newline after the contents
        return data

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait()


def git_licence(source: str, commit: str) -> dict | None:
    """The licence file at ``commit`` (its first match among LICENCE_NAMES at the root): {path, commit, text}."""
    names = set(_git(source, "ls-tree", "--name-only", commit).split("\n"))
    for name in LICENCE_NAMES:
        if name in names:
            return {"path": name, "commit": commit, "text": _git(source, "show", f"{commit}:{name}")}
    return None


# --- a directory of dated versions -----------------------------------------------------------------------


def _dated(name: str) -> str | None:
    match = DATED_NAME.match(name)
    if match is None:
        return None
    clock = match.group(2) or "00:00:00"
    clock = clock if clock.count(":") == 2 else clock + ":00"
    try:
        datetime.datetime.fromisoformat(f"{match.group(1)}T{clock}")
    except ValueError:
        return None
    return f"{match.group(1)}T{clock}Z"


def directory_versions(source: str, patterns: Sequence[str]) -> list[Version]:
    """The dated subdirectories of ``source`` whose files match a pattern, in name order."""
    versions = []
    for name in sorted(os.listdir(source)):
        root = os.path.join(source, name)
        date = _dated(name)
        if date is None or not os.path.isdir(root):
            continue
        paths = {}
        for directory, _, files in os.walk(root):
            for file in files:
                full = os.path.join(directory, file)
                paths[os.path.relpath(full, root).replace(os.sep, "/")] = full
        chosen = choose_files(paths, patterns)
        if chosen is not None:
            versions.append(Version(name, date, chosen[0], chosen[1]))
    return versions


def has_dated_versions(source: str) -> bool:
    return os.path.isdir(source) and any(
        _dated(name) and os.path.isdir(os.path.join(source, name)) for name in os.listdir(source)
    )


def directory_licence(source: str) -> dict | None:
    for name in LICENCE_NAMES:
        path = os.path.join(source, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                return {"path": name, "commit": None, "text": handle.read()}
    return None


# --- parsing ------------------------------------------------------------------------------------------------


def parse_document(data: bytes, extension: str) -> dict:
    """A spec file's bytes as a dict (JSON, or YAML through rapidyaml); a ValueError when it is not a JSON /
    YAML mapping with an ``openapi`` or ``swagger`` version."""
    if extension == ".json":
        try:
            document = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"not valid JSON ({err})") from None
    else:
        document = _load_yaml(data)
    if not isinstance(document, dict) or not ("openapi" in document or "swagger" in document):
        raise ValueError("not an OpenAPI or Swagger document (no 'openapi' or 'swagger' key at the top)")
    return document


def _load_yaml(data: bytes):
    """YAML -> Python through rapidyaml's JSON emitter (10x PyYAML's C loader on a 4 MB spec); the first
    document of a stream. rapidyaml writes its parse errors to file descriptor 2, so that is caught."""
    import ryml

    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"not valid YAML (not UTF-8: {err})") from None
    with tempfile.TemporaryFile() as caught:
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            tree = ryml.parse_in_arena(data)
            root = tree.root_id()
            node = tree.first_child(root) if tree.is_stream(root) and tree.num_children(root) else root
            emitted = ryml.emit_json_malloc(tree, node)
            failed = None
        except Exception:  # rapidyaml's ExceptionParse (its message went to fd 2)
            failed = True
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if failed:
            caught.seek(0)
            lines = [line for line in caught.read().decode("utf-8", "replace").splitlines() if "ERROR" in line]
            raise ValueError(f"not valid YAML ({lines[0].strip() if lines else 'parse error'})")
    try:
        return json.loads(emitted)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid YAML (not a JSON-like document: {err})") from None


@dataclasses.dataclass
class ReadOutcome:
    """What reading a version's files gave: documents (stem, extension, dict), or None when unreadable;
    ``notes``: (kind, file, detail) with kind ``missing`` (absent bytes) or ``invalid`` (twin used)."""

    documents: list | None
    notes: list


def read_files(files: Sequence[SpecFile], fetch, where: str) -> ReadOutcome:
    """Each stem from its first readable form; ``fetch(location)`` gives bytes or None (absent).
    A stem with a present but invalid form and no readable twin raises SpecError (``where``: source, commit)."""
    documents, notes = [], []
    for spec_file in files:
        document, invalid = None, None
        for extension, location in spec_file.forms:
            data = fetch(location)
            if data is None:
                notes.append(("missing", spec_file.stem + extension, "contents absent"))
                continue
            try:
                document = parse_document(data, extension)
            except ValueError as err:
                notes.append(("invalid", spec_file.stem + extension, str(err)))
                invalid = invalid or (spec_file.stem + extension, str(err))
                continue
            documents.append((spec_file.stem, extension, document))
            break
        if document is None:
            if invalid is not None:
                raise SpecError(f"{where}, file {invalid[0]}: {invalid[1]}")
            return ReadOutcome(None, notes)
    return ReadOutcome(documents, notes)


def read_file_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def iter_outcomes(source: str, versions: Sequence[Version], is_git: bool) -> Iterator[ReadOutcome]:
    """Read each version in order in this process (the importer's pool does the same per worker)."""
    reader = BlobReader(source) if is_git else None
    try:
        for version in versions:
            yield read_files(
                version.files, reader.read if reader else read_file_bytes, f"{source}: commit {version.commit}"
            )
    finally:
        if reader is not None:
            reader.close()
