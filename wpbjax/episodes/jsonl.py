"""Episode files: one JSON object per line, ``{"labels": {...}, "steps": [...]}`` (SEMANTICS §1).

Loading validates every line and raises :class:`EpisodeFormatError` naming the file and line,
so a malformed input never reaches the engine.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable


class EpisodeFormatError(ValueError):
    """An episode file or dict does not follow the episode format."""


def dumps_episode(episode: dict) -> str:
    """One episode as the published harness writes it: sorted keys, default separators, ASCII."""
    return json.dumps(episode, sort_keys=True)


def save_jsonl(episodes: Iterable[dict], path: str | os.PathLike) -> None:
    """Write episodes one per line (byte-identical to the published generator's files)."""
    with open(path, "w", encoding="ascii", newline="\n") as handle:
        for episode in episodes:
            handle.write(dumps_episode(episode) + "\n")


def validate_episode(episode: Any, where: str) -> dict:
    """Check the shape the engine relies on; ``where`` names the source in errors."""
    if not isinstance(episode, dict):
        raise EpisodeFormatError(f"{where}: an episode must be a JSON object, got {type(episode).__name__}")
    if "steps" not in episode:
        raise EpisodeFormatError(f"{where}: missing 'steps'")
    steps = episode["steps"]
    if not isinstance(steps, list):
        raise EpisodeFormatError(f"{where}: 'steps' must be a list, got {type(steps).__name__}")
    if not steps:
        raise EpisodeFormatError(f"{where}: 'steps' is empty")
    labels = episode.get("labels", {})
    if not isinstance(labels, dict):
        raise EpisodeFormatError(f"{where}: 'labels' must be an object")
    previous_t = None
    for index, step in enumerate(steps):
        here = f"{where}: step {index}"
        if not isinstance(step, dict):
            raise EpisodeFormatError(f"{here}: a step must be an object")
        if "t" not in step:
            raise EpisodeFormatError(f"{here}: missing 't'")
        t = step["t"]
        if isinstance(t, bool) or not isinstance(t, int):
            raise EpisodeFormatError(f"{here}: 't' must be an integer, got {t!r}")
        if not -(2**31) < t < 2**31:
            raise EpisodeFormatError(f"{here}: 't' = {t} does not fit in int32")
        if previous_t is not None and t <= previous_t:
            raise EpisodeFormatError(f"{here}: 't' must increase strictly (got {t} after {previous_t})")
        previous_t = t
        metadata = step.get("metadata", {})
        if not isinstance(metadata, dict):
            raise EpisodeFormatError(f"{here}: 'metadata' must be an object")
        priority = metadata.get("priority")
        if priority is not None and (not isinstance(priority, (int, float))):
            raise EpisodeFormatError(f"{here}: metadata 'priority' must be a number, got {priority!r}")
    for key in ("critical_steps",):
        value = labels.get(key, [])
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise EpisodeFormatError(f"{where}: labels '{key}' must be a list of integers")
    utility = labels.get("utility_by_step", {})
    if not isinstance(utility, dict):
        raise EpisodeFormatError(f"{where}: labels 'utility_by_step' must be an object keyed by t")
    for key, value in utility.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise EpisodeFormatError(f"{where}: labels 'utility_by_step'[{key!r}] must be a number, got {value!r}")
    drift = labels.get("total_drift_events", 0)
    if isinstance(drift, bool) or not isinstance(drift, int):
        raise EpisodeFormatError(f"{where}: labels 'total_drift_events' must be an integer")
    return episode


def load_jsonl(path: str | os.PathLike) -> list[dict]:
    """Read and validate every episode of a JSONL file; errors name ``file:line``."""
    path = os.fspath(path)
    try:
        handle = open(path, "r", encoding="utf-8")
    except OSError as err:
        raise EpisodeFormatError(f"{path}: cannot open episode file ({err.strerror})") from None
    episodes = []
    with handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                episode = json.loads(line)
            except json.JSONDecodeError as err:
                raise EpisodeFormatError(f"{path}:{line_number}: not valid JSON ({err.msg} at column {err.colno})") from None
            episodes.append(validate_episode(episode, f"{path}:{line_number}"))
    if not episodes:
        raise EpisodeFormatError(f"{path}: no episodes (the file is empty)")
    return episodes
