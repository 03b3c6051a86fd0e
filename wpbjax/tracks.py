"""Tracks: which metadata a policy may see, and so what a write costs (SEMANTICS §2).

The metadata *view* keeps only the allowed keys; a step therefore has one write cost per track.
"""
from __future__ import annotations

TRACK_VIEW_KEYS = {
    "unprivileged": ("mode",),
    "privileged": ("mode", "priority"),
}
TRACKS = tuple(TRACK_VIEW_KEYS)


def check_track(track: str) -> str:
    if track not in TRACK_VIEW_KEYS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(TRACKS)}")
    return track


def view_metadata(metadata: dict, track: str) -> dict:
    """The metadata a policy on ``track`` sees (and pays for)."""
    return {key: metadata[key] for key in TRACK_VIEW_KEYS[check_track(track)] if key in metadata}


def sees_priority(track: str) -> bool:
    return "priority" in TRACK_VIEW_KEYS[check_track(track)]
