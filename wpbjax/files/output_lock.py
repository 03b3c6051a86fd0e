"""One live run per output: a lock file beside a sweep's results (``results.csv.lock``) holding its owner's pid.

The lock is an exclusive ``flock`` on that file, which the kernel drops when its process ends however
it ends: the lock file of a dead run (``kill -9``) is simply taken over by the next run; a second
live run on the same output is refused, naming the owner's pid, before it reads or writes anything
(its temporary file, its resume manifest). ``--resume`` takes the same lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from wpbjax.files.atomic import destination

LOCK_SUFFIX = ".lock"


def lock_path(out: str | os.PathLike) -> str:
    """``results.csv`` -> ``results.csv.lock`` (beside a symbolic link's target)."""
    return destination(out) + LOCK_SUFFIX


class OutputBusy(ValueError):
    """Another live process holds the output's lock (bad input: status 2 on the command line)."""


def _owner(handle) -> str:
    handle.seek(0)
    text = handle.read(32).strip()
    return f"pid {text}" if text.isdigit() else "another process"


@contextlib.contextmanager
def output_lock(out: str | os.PathLike) -> Iterator[str]:
    """Hold ``out``'s lock for the block; an OutputBusy naming the owner if a live process holds it."""
    path = lock_path(out)
    while True:
        handle = open(path, "a+")  # noqa: SIM115 (held open for as long as the lock is)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _owner(handle)
            handle.close()
            raise OutputBusy(
                f"{os.fspath(out)}: another wpbjax run ({owner}) is writing it (lock {path}); wait "
                f"for it to finish, or choose another output"
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:  # else its owner removed it as we opened it: lock the file now at the path
            break
        handle.close()
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield path
    finally:
        try:
            os.remove(path)  # still holding the lock: nobody else can have it
        except FileNotFoundError:
            pass
        handle.close()
