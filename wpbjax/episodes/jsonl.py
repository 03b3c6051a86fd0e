"""Episode files: one JSON object per line, ``{"labels": {...}, "steps": [...]}`` (SEMANTICS §1).

Loading validates every line (:mod:`wpbjax.episodes.validate`) and raises
:class:`EpisodeFormatError` naming the file and line, so a malformed input never reaches the
engine. Files are UTF-8 text, optionally gzip-compressed (recognised by content, e.g. ``.jsonl.gz``).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable

from wpbjax.episodes.jsontext import parse_json, text_lines
from wpbjax.episodes.validate import MAX_NESTING, EpisodeFormatError, validate_episode
from wpbjax.files.atomic import atomic_file

__all__ = ["EpisodeFormatError", "dumps_episode", "load_jsonl", "save_jsonl", "validate_episode"]


def dumps_episode(episode: dict) -> str:
    """One episode as the published harness writes it: sorted keys, default separators, ASCII."""
    return json.dumps(episode, sort_keys=True)


def save_jsonl(episodes: Iterable[dict], path: str | os.PathLike) -> None:
    """Write episodes one per line (byte-identical to the published generator's files); gzip-compressed
    when ``path`` ends in ``.gz`` (no timestamp in the header: equal episodes, equal bytes). Atomic
    (:mod:`wpbjax.files.atomic`): an existing file is replaced only by a complete one."""
    if os.fspath(path).endswith(".gz"):
        # the header names the file as written to its final name (not the temporary one)
        name = os.path.basename(os.fspath(path))
        with atomic_file(path, "wb") as raw, gzip.GzipFile(name, mode="wb", fileobj=raw, mtime=0) as packed:
            packed.writelines((dumps_episode(episode) + "\n").encode("ascii") for episode in episodes)
        return
    with atomic_file(path, "w", encoding="ascii", newline="\n") as handle:
        for episode in episodes:
            handle.write(dumps_episode(episode) + "\n")


def load_jsonl(path: str | os.PathLike) -> list[dict]:
    """Read and validate every episode of a JSONL file; errors name ``file:line``."""
    path = os.fspath(path)
    episodes = []
    for line_number, line in text_lines(path, EpisodeFormatError, "episode file"):
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        episode = parse_json(line, where, EpisodeFormatError)
        # nesting is at most the count of opening brackets: walk only the lines that could be deep
        deep = line.count("[") + line.count("{") > MAX_NESTING
        episodes.append(validate_episode(episode, where, check_nesting=deep))
    if not episodes:
        raise EpisodeFormatError(f"{path}: no episodes (the file is empty)")
    return episodes
