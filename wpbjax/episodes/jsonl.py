"""Episode files: one JSON object per line, ``{"labels": {...}, "steps": [...]}`` (SEMANTICS §1).

Loading validates every line (:mod:`wpbjax.episodes.validate`) and raises
:class:`EpisodeFormatError` naming the file and line, so a malformed input never reaches the
engine. Files are UTF-8 text, optionally gzip-compressed (recognised by content, e.g. ``.jsonl.gz``).
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from typing import Iterable, Iterator

from wpbjax.episodes.validate import MAX_NESTING, EpisodeFormatError, validate_episode

__all__ = ["EpisodeFormatError", "dumps_episode", "load_jsonl", "save_jsonl", "validate_episode"]

GZIP_MAGIC = b"\x1f\x8b"


def dumps_episode(episode: dict) -> str:
    """One episode as the published harness writes it: sorted keys, default separators, ASCII."""
    return json.dumps(episode, sort_keys=True)


def save_jsonl(episodes: Iterable[dict], path: str | os.PathLike) -> None:
    """Write episodes one per line (byte-identical to the published generator's files); gzip-compressed
    when ``path`` ends in ``.gz`` (no timestamp in the header: equal episodes, equal bytes)."""
    if os.fspath(path).endswith(".gz"):
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
            packed.writelines((dumps_episode(episode) + "\n").encode("ascii") for episode in episodes)
        return
    with open(path, "w", encoding="ascii", newline="\n") as handle:
        for episode in episodes:
            handle.write(dumps_episode(episode) + "\n")


def _text_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, gunzipped if it is gzip; errors name the file (and line)."""
    try:
        handle = open(path, "rb")
        if handle.read(2) == GZIP_MAGIC:
            handle.close()
            handle = gzip.open(path, "rb")
        else:
            handle.seek(0)
    except OSError as err:
        raise EpisodeFormatError(f"{path}: cannot open episode file ({err.strerror or err})") from None
    with handle:
        line_number = 0
        try:
            for line_number, raw in enumerate(handle, start=1):
                try:
                    yield line_number, raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise EpisodeFormatError(f"{path}:{line_number}: not UTF-8 text (byte 0x{raw[err.start]:02x} at "
                                             f"column {err.start + 1}); episode files are UTF-8 JSON lines") from None
        except (OSError, EOFError, zlib.error) as err:  # a cut or corrupt gzip stream, a read error
            raise EpisodeFormatError(f"{path}:{line_number + 1}: cannot read episode file ({err})") from None


def _parse_line(text: str, where: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise EpisodeFormatError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise EpisodeFormatError(f"{where}: not valid JSON (nested too deeply for the parser)") from None
    except ValueError as err:  # an integer of more than 4,300 digits (Python's limit; its advice is for code)
        raise EpisodeFormatError(f"{where}: not valid JSON ({str(err).split(';')[0]})") from None


def load_jsonl(path: str | os.PathLike) -> list[dict]:
    """Read and validate every episode of a JSONL file; errors name ``file:line``."""
    path = os.fspath(path)
    episodes = []
    for line_number, line in _text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        episode = _parse_line(line, where)
        # nesting is at most the count of opening brackets: walk only the lines that could be deep
        deep = line.count("[") + line.count("{") > MAX_NESTING
        episodes.append(validate_episode(episode, where, check_nesting=deep))
    if not episodes:
        raise EpisodeFormatError(f"{path}: no episodes (the file is empty)")
    return episodes
