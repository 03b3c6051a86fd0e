"""What a command prints besides its results: note lines on stderr (the library hands them to a ``log``
callback and never prints)."""

from __future__ import annotations

import sys
from collections.abc import Callable


def stderr_log(line: str) -> None:
    """``line`` on stderr, at once (progress of long work)."""
    print(line, file=sys.stderr, flush=True)


def note_printer(prog: str) -> Callable[[str], None]:
    """A ``log`` callback that prints each note as ``PROG: note`` on stderr."""
    return lambda line: print(f"{prog}: {line}", file=sys.stderr)
