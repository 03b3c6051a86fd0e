"""Writing output files and directories atomically: the one writer every command's output goes through.

A file is written under a temporary name beside its destination (``.partial-PID-TOKEN-NAME``: hidden,
unique to the run, the destination's extensions kept for writers that choose a format by them) and
renamed onto the destination only once complete; on any failure, Ctrl-C included, the temporary
file is removed and an existing destination is left byte for byte. ``os.replace`` is atomic within
one directory, which is why the temporary lives beside its destination. A destination that is a
symbolic link is written through: the link's target is replaced, the link stays.

A report directory is built the same way (:func:`atomic_directory`): a temporary directory renamed
into place when complete, a previous report swapped out only then.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator

TEMPORARY_PREFIX = ".partial-"


def destination(path: str | os.PathLike) -> str:
    """Where writing ``path`` lands: the file a symbolic link points to (followed to the end), else ``path``."""
    path = os.fspath(path)
    return os.path.realpath(path) if os.path.islink(path) else path


def temporary_name(path: str | os.PathLike) -> str:
    """A fresh temporary name beside ``path`` (its directory, its extensions), unique to this process and call."""
    directory, name = os.path.split(os.fspath(path))
    return os.path.join(directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{name}")


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (links and ``./`` followed), existing or not."""
    a, b = os.fspath(a), os.fspath(b)
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def refuse_inputs(out: str | os.PathLike, inputs: Iterable, what: str = "output") -> None:
    """ValueError if ``out`` names one of the files ``inputs`` (links and ``./`` followed)."""
    out = os.fspath(out)
    for source in map(os.fspath, inputs):
        if same_file(source, out):
            raise ValueError(f"{out} would overwrite {source}, an input of this command; choose another {what}")


def check_writable(out: str | os.PathLike) -> str:
    """ValueError naming ``out`` unless it can be written: its directory exists and is writable and it
    is not a directory. Touches nothing."""
    out = os.fspath(out)
    target = destination(out)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise ValueError(f"{out}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"{out}: directory {directory} is not writable")
    if os.path.isdir(target):
        raise ValueError(f"{out}: is a directory")
    return out


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary path to write ``path``'s content to (by any writer); on leaving the block
    without an error it is renamed onto ``path`` (through a symbolic link), else removed."""
    target = destination(path)
    temporary = temporary_name(target)
    try:
        yield temporary
        if not os.path.exists(temporary):
            raise FileNotFoundError(f"{path}: nothing was written")
        os.replace(temporary, target)
    except BaseException:  # Ctrl-C too: the destination stays as it was
        _remove(temporary)
        raise


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w", **open_args):
    """``open(path, mode)`` as :func:`atomic_path` writes it: a handle on the temporary file, renamed
    onto ``path`` once the block ends and the handle is closed."""
    if not set(mode) & set("wx"):
        raise ValueError(f"atomic_file: mode {mode!r} does not write a new file")
    with atomic_path(path) as temporary, open(temporary, mode.replace("x", "w"), **open_args) as handle:
        yield handle


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> str:
    """Write ``text`` to ``path`` atomically; returns the path."""
    with atomic_file(path, "w", encoding=encoding, newline="\n") as handle:
        handle.write(text)
    return os.fspath(path)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, replaceable: Callable[[str], bool]) -> Iterator[str]:
    """Yield a temporary directory beside ``path`` to fill; when the block ends without an error it
    becomes ``path``. An existing ``path`` is replaced only if it is empty or ``replaceable(path)``
    says it is one we may (a previous report), else a ValueError is raised before any work; missing
    parent directories are made. On a failure the temporary directory is removed and ``path`` stays
    as it was."""
    path = os.fspath(path)
    target = destination(path.rstrip("/" + os.sep) or path)  # "report/" is the directory "report"
    if os.path.exists(target):
        if not os.path.isdir(target):
            raise ValueError(f"{path}: exists and is not a directory")
        if os.listdir(target) and not replaceable(target):
            raise ValueError(
                f"{path}: exists and holds other files than a previous report; choose a new or empty directory"
            )
    parent = os.path.dirname(os.path.abspath(target))
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise ValueError(f"{path}: {parent} is not a directory")
    os.makedirs(parent, exist_ok=True)  # as `mkdir -p`: a report may go to a new directory of directories
    temporary = temporary_name(target)
    os.mkdir(temporary)
    old = None
    try:
        yield temporary
        if os.path.exists(target):  # the old report goes aside only now, and is removed once the new one is in
            old = temporary_name(target)
            os.rename(target, old)
        os.rename(temporary, target)
    except BaseException:
        if old is not None and not os.path.exists(target):
            os.rename(old, target)
            old = None
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
