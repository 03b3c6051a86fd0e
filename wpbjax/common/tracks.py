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


# --- Information tracks (policy zoo, docs/policies.md) --------------------------------------------
# Two more tracks grade what a policy may know of the hidden utility u_t. They see the metadata the
# unprivileged track sees and pay its write costs (so their rows compare with unprivileged ones):
#   feedback: u_t is revealed after the decision at step t, i.e. a policy acting at step t' may read
#             u_t for every t < t' (never its own step's utility nor a later one);
#   oracle:   u_t of every step, past and future (cheating references: utility_greedy, oracle_optimal).
# On unprivileged and privileged, policies never see utility (sweeps hand them zeros).
INFO_TRACK_COST = {"feedback": "unprivileged", "oracle": "unprivileged"}
ALL_TRACKS = TRACKS + tuple(INFO_TRACK_COST)
UTILITY_ACCESS = {"unprivileged": "none", "privileged": "none", "feedback": "after_decision", "oracle": "full"}


def check_any_track(track: str) -> str:
    """``track`` if it is a cost track or an information track, else a ValueError naming them."""
    if track not in ALL_TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(ALL_TRACKS)}")
    return track


def cost_track(track: str) -> str:
    """The track whose metadata view (and so write costs) ``track`` uses."""
    return INFO_TRACK_COST.get(check_any_track(track), track)


def sees_utility(track: str) -> bool:
    """Whether policies on ``track`` may read the utility array at all (see UTILITY_ACCESS)."""
    return UTILITY_ACCESS[check_any_track(track)] != "none"
