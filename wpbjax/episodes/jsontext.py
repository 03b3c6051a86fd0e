"""UTF-8 JSON files (plain or gzip-compressed, recognised by content), read with errors naming the file
and line: episode files (JSON lines), WRIT scenarios (one document), package directories and exported
stores (:mod:`wpbjax.packages.io`) all say the same about bad bytes, bad JSON and nesting too deep for
the parser. ``error``: the ValueError subclass a caller raises (EpisodeFormatError, PackageFormatError);
``what``: how a message names the kind of file ("episode file").
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator

GZIP_MAGIC = b"\x1f\x8b"


def _open(path: str, error: type[ValueError], what: str):
    """A binary handle on ``path``'s (gunzipped) bytes."""
    try:
        handle = open(path, "rb")
        # peek, not read + seek: a pipe or FIFO (a scenario streamed in) cannot seek
        if handle.peek(2)[:2] == GZIP_MAGIC:
            unzipped = gzip.GzipFile(fileobj=handle, mode="rb")
            unzipped.myfileobj = handle  # closed with it, as gzip.open(path) does
            return unzipped
        return handle
    except OSError as err:
        raise error(f"{path}: cannot open {what} ({err.strerror or err})") from None


def _not_utf8(where: str, raw: bytes, err: UnicodeDecodeError, what: str) -> str:
    return (
        f"{where}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1}); a {what} must be UTF-8 text"
    )


def text_lines(path: str | os.PathLike, error: type[ValueError], what: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a UTF-8 file (a BOM is dropped), gunzipped if it is gzip."""
    path = os.fspath(path)
    with _open(path, error, what) as handle:
        line_number = 0
        try:
            for line_number, raw in enumerate(handle, start=1):
                try:
                    yield line_number, raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise error(_not_utf8(f"{path}:{line_number}", raw, err, what)) from None
        except (OSError, EOFError, zlib.error) as err:  # a cut or corrupt gzip stream, a read error
            raise error(f"{path}:{line_number + 1}: cannot read {what} ({err})") from None


def parse_json(text: str, where: str, error: type[ValueError], document: bool = False):
    """``text`` as JSON; ``error`` naming ``where`` if it is not JSON a program can hold. ``document``:
    ``text`` is a whole file of several lines (``where`` its path), so a syntax error names its line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        at = f"{where}:{err.lineno}" if document else where
        raise error(f"{at}: not valid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise error(f"{where}: not valid JSON (nested too deeply for the parser)") from None
    except ValueError as err:  # an integer of more than 4,300 digits (Python's limit; its advice is for code)
        raise error(f"{where}: not valid JSON ({str(err).split(';')[0]})") from None


def read_json(path: str | os.PathLike, error: type[ValueError], what: str):
    """A whole file as one JSON document; errors name the file (and the line, where the parser says)."""
    path = os.fspath(path)
    return parse_json("".join(line for _, line in text_lines(path, error, what)), path, error, document=True)
