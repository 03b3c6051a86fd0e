"""Crash events from an episode's labels: ``"crashes": [t, ...]``, the steps just before which a session
ended abruptly (each the ``t`` of one of the episode's steps after its first). Tiered runs (wpbjax.core.tiers)
crash there as well as at their drawn crashes (``crash_rate``). Episodes without the label crash only
by draw."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wpbjax.episodes.validate import EpisodeFormatError


def from_labels(episodes: Sequence[dict], source: str) -> np.ndarray | None:
    """[N, C] int32 the positions (step indices) of each episode's labelled crashes, -1 padding; None when
    no episode has the label. Errors name the episode and the entry."""
    if not any("crashes" in episode.get("labels", {}) for episode in episodes):
        return None
    rows = []
    for index, episode in enumerate(episodes):
        where = f"{source}: episode {index}: labels.crashes"
        crashes = episode.get("labels", {}).get("crashes", [])
        if not isinstance(crashes, list):
            raise EpisodeFormatError(f"{where}: expected a list of step t's; got {crashes!r}")
        position = {step["t"]: pos for pos, step in enumerate(episode["steps"])}
        row = []
        for number, t in enumerate(crashes):
            pos = position.get(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
            if not pos:  # not a step's t, or the first step's (no session before it to end)
                raise EpisodeFormatError(f"{where}[{number}]: expected the t of a step after the first; got {t!r}")
            row.append(pos)
        rows.append(sorted(set(row)))
    out = np.full((len(rows), max(len(row) for row in rows) or 1), -1, np.int32)
    for index, row in enumerate(rows):
        out[index, : len(row)] = row
    return out
