"""The versions of an OpenAPI spec over time, read from a git repository or a directory of dated copies.

A *pattern* names where the spec lives (``openapi/spec3.json``, ``specs/*.yaml``, ``api/**/openapi.json``):
``*`` and ``?`` match within one path segment, ``**/`` any run of directories. Its extension, if ``.json``,
``.yaml`` or ``.yml``, is dropped, so a pattern names a *stem* and its twins in every format; a version reads
each stem from JSON if it can, else from YAML. Patterns are listed in order of preference: a version's spec is
every stem the first matching pattern names in it (a spec split into several files is one pattern with a
wildcard; a spec moved or renamed over time is one pattern per place it has lived).

Git: the commits on the first-parent line that touch a matching file or any ``.json`` / ``.yaml`` / ``.yml``
file under the directory of a matching file (recursively: a spec kept in fragment files, DigitalOcean's
``specification/resources/**``, changes without touching its entry file), oldest first (paths read with
``-z``: a directory named ``spécs`` is found). Such a commit is a *candidate*; it is a new version if its
chosen files differ from the previous version's (as blobs), or, its chosen files unchanged, if a file under
their directories that the previous version read through a ``$ref`` (a fragment) now has another blob — a
commit that changes only files no version reads (Stripe's ``fixtures3.json`` beside ``spec3.json``) is no
new version, so the fragments never add versions to a one-file spec. The second test needs the previous
version read; :func:`wpbjax.episodes.importers.openapi_read.read_surfaces` applies it from each candidate's
``entry_changed`` and ``changes``. A chosen file that is a symbolic link (mode 120000) is read from the
file it points to in the same commit; one pointing outside the repository, or at nothing, is *invalid*
(the message says where it points). Directory: the subdirectories whose names
start with a date (``2019-02-11``, ``2019-02-11T10:00:00Z``, ``2019-02-11_release``), in name order, each a
version whose files the patterns match inside it.

A file whose contents are absent (a blob the repository does not hold) is *missing*: the version is read from
its twin, or, with no twin, skipped as *unreadable* and counted. A file that is present but is not a JSON or
YAML OpenAPI / Swagger document is *invalid*: the twin is used when it reads, else it is an error
(:class:`SpecError`, naming the source, the commit and the file). YAML anchors, aliases and merge keys
(``<<: *base``, explicit keys winning) are resolved; integers of any length are read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import posixpath
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence

FORMATS = (".json", ".yaml", ".yml")  # order of preference among a stem's twins
DATED_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)Z?)?")
LICENCE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING")
SYMLINK_MODE = "120000"  # git's mode of a symbolic link
BROKEN_LINK = "symlink-to:"  # a location that is a symbolic link leading nowhere readable: the rest is its target


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
    """One version of the spec (or a git candidate, module note): ``commit`` (git commit id, or the dated
    subdirectory's name), ``date`` (UTC, ISO-8601), the pattern it was found by and its files;
    ``entry_changed``: its files differ from the previous candidate's (always, for a directory source);
    ``changes``: ((path, blob id or None when deleted), ...) of the files under the chosen files' directories
    since the previous candidate."""

    commit: str
    date: str
    pattern: str
    files: tuple  # SpecFile, sorted by stem
    entry_changed: bool = True
    changes: tuple = ()

    def scope(self, path: str) -> bool:
        """Whether a change to ``path`` can make a new version: a .json/.yaml/.yml file under the
        directory of one of this version's files."""
        if not path.endswith(FORMATS):
            return False
        directories = {posixpath.dirname(spec_file.stem) for spec_file in self.files}
        return any(not directory or path.startswith(directory + "/") for directory in directories)


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


def source_roots(source: str) -> list[str]:
    """The directories an import reads: ``source``, and for git its git directory (outside ``source`` for a
    subdirectory of a work tree, or a ``.git`` file pointing elsewhere)."""
    roots = [os.path.realpath(source)]
    if os.path.isdir(source) and is_git_repository(source):
        done = subprocess.run(
            ["git", "-C", source, "rev-parse", "--absolute-git-dir"],
            capture_output=True,
            text=True,
            check=False,
        )
        roots += [os.path.realpath(line) for line in done.stdout.splitlines() if line.strip()]
    return roots


def refuse_output_inside(out: str, source: str) -> None:
    """SpecError when ``out`` or its sidecar would be written inside the source (links followed): an output
    there could overwrite a spec file, a file of the work tree or git's own files."""
    from wpbjax.files.atomic import destination

    for path in (out, out + ".meta.json"):
        real = os.path.realpath(destination(path))
        for root in source_roots(source):
            if os.path.commonpath([real, root]) == root:
                raise SpecError(f"{path}: inside the source {source} ({root}); write the history elsewhere")


def _utc(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scope_pathspecs(patterns: Sequence[str]) -> list[str]:
    """Git pathspecs of every file a candidate may touch: the patterns' files, and the .json/.yaml/.yml
    files under each pattern's directory (a superset of the chosen files' directories)."""
    specs = [f":(glob){pattern}{extension}" for pattern in patterns for extension in FORMATS]
    for pattern in patterns:
        directory = posixpath.dirname(pattern)
        specs += [f":(glob){directory + '/' if directory else ''}**/*{extension}" for extension in FORMATS]
    return list(dict.fromkeys(specs))


def _log_changes(source: str, patterns: Sequence[str], ref: str) -> list[tuple]:
    """[(commit, epoch, [(path, blob, mode, status)])] of the first-parent commits touching the pathspecs,
    oldest first; read with -z so that a path is never quoted."""
    done = subprocess.run(
        [
            "git", "-C", source, "-c", "core.quotePath=false", "log", ref, "--first-parent", "-m", "--root",
            "--no-renames", "--raw", "-z", "--no-abbrev", "--format=%x01%H %ct", "--", *_scope_pathspecs(patterns),
        ],
        capture_output=True,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SpecError(f"{source}: git log failed: {lines[-1] if lines else ''}")
    tokens = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    commits, index = [], 0
    while index < len(tokens):
        token = tokens[index].lstrip("\n")
        index += 1
        if token.startswith("\x01"):
            commit, epoch = token[1:].split()
            commits.append((commit, int(epoch), []))
        elif token.startswith(":") and commits:
            fields = token[1:].split()
            commits[-1][2].append((tokens[index], fields[3], fields[1], fields[4]))  # path, blob, mode, status
            index += 1
    commits.reverse()
    return commits


def git_versions(source: str, patterns: Sequence[str], ref: str = "HEAD") -> list[Version]:
    """The candidate versions of the spec on ``ref``'s first-parent line, oldest first (module note)."""
    tree: dict = {}  # path -> (blob, mode)
    versions, previous, pending = [], None, {}
    links = _LinkResolver(source)
    try:
        for commit, epoch, changes in _log_changes(source, patterns, ref):
            for path, blob, mode, status in changes:
                if status.startswith("D"):
                    tree.pop(path, None)
                    pending[path] = None
                else:
                    tree[path] = (blob, mode)
                    pending[path] = blob
            chosen = choose_files({path: blob for path, (blob, _) in tree.items()}, patterns)
            if chosen is None:
                continue
            chosen = (chosen[0], links.resolve(commit, chosen[1], tree))
            version = Version(commit, _utc(epoch), chosen[0], chosen[1], chosen != previous)
            if not version.entry_changed and not any(version.scope(path) for path in pending):
                continue
            versions.append(dataclasses.replace(version, changes=tuple(sorted(pending.items()))))
            previous, pending = chosen, {}
    finally:
        links.close()
    return versions


class _LinkResolver:
    """A chosen file that is a symbolic link, as the blob it leads to in its commit (``git cat-file
    --follow-symlinks``), or ``BROKEN_LINK + target`` when it leads outside the repository or to nothing."""

    def __init__(self, source: str):
        self.source, self.reader = source, None

    def resolve(self, commit: str, files: tuple, tree: dict) -> tuple:
        out = []
        for spec_file in files:
            forms = []
            for extension, blob in spec_file.forms:
                path = spec_file.stem + extension
                if tree[path][1] == SYMLINK_MODE:
                    blob = self._follow(commit, path, blob)
                forms.append((extension, blob))
            out.append(SpecFile(spec_file.stem, tuple(forms)))
        return tuple(out)

    def _follow(self, commit: str, path: str, link_blob: str) -> str:
        if self.reader is None:
            self.reader = BlobReader(self.source)
        oid, _, problem = self.reader.lookup(f"{commit}:{path}", contents=False)
        if oid is not None:
            return oid
        target = self.reader.read(link_blob)
        target = target.decode("utf-8", "replace") if target is not None else "?"
        return f"{BROKEN_LINK}{target} ({problem})"

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


class BlobReader:
    """Objects of one repository through one ``git cat-file --batch --follow-symlinks`` process:
    ``read(name)`` is a blob's bytes, or None for one the repository does not hold; ``name`` is a blob id
    or ``COMMIT:PATH``. The process runs in its own process group, so a Ctrl-C at the terminal reaches
    only Python, which closes it."""

    def __init__(self, source: str):
        self.process = subprocess.Popen(
            ["git", "-C", source, "cat-file", "--batch", "--follow-symlinks"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            process_group=0,
        )

    def lookup(self, name: str, contents: bool = True) -> tuple:
        """(blob id or None, bytes or None, problem): problem "" for a blob, else why there is none
        ("missing", "a tree", "outside the repository", "absent", ...)."""
        if "\n" in name:
            return None, None, "a name with a line break"
        self.process.stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
        self.process.stdin.flush()
        header = self.process.stdout.readline().rstrip(b"\n")
        if not header or header.endswith(b" missing") or header.endswith(b" ambiguous"):
            return None, None, "missing"
        fields = header.split(b" ")
        if fields[0] in (b"symlink", b"dangling", b"loop", b"notdir"):  # "<kind> <size>", then the path
            self.process.stdout.read(int(fields[1]) + 1)
            kind = fields[0].decode()
            return None, None, {"symlink": "outside the repository", "dangling": "absent"}.get(kind, kind)
        oid, kind, size = fields[0].decode(), fields[1], int(fields[2])
        data = self.process.stdout.read(size)
        self.process.stdout.read(1)  # the newline after the contents
        if kind != b"blob":
            return None, None, f"a {kind.decode()}"
        return oid, data if contents else None, ""

    def read(self, name: str) -> bytes | None:
        return self.lookup(name)[1]

    def close(self) -> None:
        """End the process quietly, even mid-answer (after a Ctrl-C) or when it is gone already."""
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):  # BrokenPipeError when git has gone
                stream.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
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
                paths[os.path.relpath(full, root).replace(os.sep, "/")] = _followed(full, root)
        chosen = choose_files(paths, patterns)
        if chosen is not None:
            versions.append(Version(name, date, chosen[0], chosen[1]))
    return versions


def _followed(path: str, root: str) -> str:
    """``path``, or ``BROKEN_LINK + target`` for a symbolic link leading outside ``root`` or to nothing."""
    if not os.path.islink(path):
        return path
    real, top = os.path.realpath(path), os.path.realpath(root)
    if os.path.isfile(real) and os.path.commonpath([real, top]) == top:
        return path
    where = "absent" if not os.path.exists(real) else "outside the version's directory"
    return f"{BROKEN_LINK}{os.readlink(path)} ({where})"


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
    document = parse_data(data, extension)
    if not isinstance(document, dict) or not ("openapi" in document or "swagger" in document):
        raise ValueError("not an OpenAPI or Swagger document (no 'openapi' or 'swagger' key at the top)")
    return document


def parse_data(data: bytes, extension: str):
    """A file's bytes as JSON (``.json``) or YAML (any other extension); None for an empty YAML document;
    a ValueError saying why it is neither."""
    if extension == ".json":
        try:
            return _json_loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"not valid JSON ({err})") from None
        except RecursionError:
            raise ValueError("not valid JSON (nested too deeply for the parser)") from None
    return _load_yaml(data)


@contextlib.contextmanager
def unlimited_digits():
    """No limit on an integer's decimal digits within the block (Python's 4,300 guards code from a hostile
    input's quadratic conversion; a spec's 5,000-digit example value is data to read, once)."""
    saved = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(saved)


def _json_loads(text: str | bytes):
    with unlimited_digits():
        return json.loads(text)


# a merge key (``<<:``) somewhere: only then is the tree walked to put merge keys first (see _merge_first)
MERGE_KEY = re.compile(rb"<<\s*:")


def _load_yaml(data: bytes):
    """YAML -> Python through rapidyaml's JSON emitter (faster than PyYAML's C loader on large specs:
    docs/performance.md, "Figures behind choices in the code"), anchors and aliases resolved
    (``Tree.resolve``); the first document of a stream, None when there is none. rapidyaml writes its parse
    errors to file descriptor 2, so that is caught."""
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
            if MERGE_KEY.search(data):
                _merge_first(tree, ryml.NONE)
            tree.resolve()
            root = tree.root_id()
            node = tree.first_child(root) if tree.is_stream(root) and tree.num_children(root) else root
            emitted = ryml.emit_json_malloc(tree, node)
            failed = None
        except Exception:  # rapidyaml's ExceptionParse / ExceptionVisit (its message went to fd 2)
            failed = True
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if failed:
            caught.seek(0)
            lines = [line for line in caught.read().decode("utf-8", "replace").splitlines() if "ERROR" in line]
            message = lines[0].split("ERROR:", 1)[-1].strip() if lines else "parse error"
            raise ValueError(f"not valid YAML ({message})")
    if not emitted or not emitted.strip():
        return None  # an empty file, or a stream of no document
    try:
        return _json_loads(emitted)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid YAML (not a JSON-like document: {err})") from None
    except RecursionError:
        raise ValueError("not valid YAML (nested too deeply for the parser)") from None


def _merge_first(tree, none: int) -> None:
    """Make rapidyaml's merge follow YAML's: it applies a mapping's entries in order, a later key winning,
    so each merge key is moved first (the mapping's own keys then win) and the aliases of a merge list
    reversed (the first listed wins)."""
    for node in range(tree.size()):
        if not tree.has_key(node) or tree.is_key_quoted(node) or bytes(tree.key(node)) != b"<<":
            continue
        if tree.is_seq(node):
            child, children = tree.first_child(node), []
            while child != none:
                children.append(child)
                child = tree.next_sibling(child)
            for child in children:
                tree.move(child, none)  # each to the front: the list reversed
        tree.move(node, none)


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
            if location.startswith(BROKEN_LINK):
                reason = f"a symbolic link to {location[len(BROKEN_LINK) :]}"
                notes.append(("invalid", spec_file.stem + extension, reason))
                invalid = invalid or (spec_file.stem + extension, reason)
                continue
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
