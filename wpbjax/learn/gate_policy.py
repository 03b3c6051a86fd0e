"""``learned_gate:PATH``: a trained gate as a hard policy in the exact simulator.

It writes the incoming step iff the detection head's logit exceeds ``threshold`` and the afford
head's logit exceeds ``afford_threshold`` (traced params; defaults 0 and the value calibrated at
training time, stored in the checkpoint). The store accepts the write iff it fits (store rules
unchanged); the gate never merges or expires. The unprivileged gate runs on both tracks (it never
reads the priority); a privileged gate only there. ``afford_threshold=-1e9`` turns the budget
trade-off off (a budget-blind detector that writes every step it flags, first come first served).
"""

from __future__ import annotations

import os

from wpbjax.learn.features import init_state, steps_since_write
from wpbjax.learn.gate import gate_step, load_gate
from wpbjax.policies.base import Policy, once_per_file_version
from wpbjax.state import actions, store as store_lib

PREFIX = "learned_gate:"
BUDGET_BLIND = -1e9  # an afford_threshold that every logit exceeds
_CACHE: dict = {}  # (path, mtime, size) -> Policy, so one file compiles once per process


def gate_policy(weights: dict, track: str, name: str = "learned_gate", afford_threshold: float = 0.0) -> Policy:
    """A Policy from gate weights trained for ``track``."""
    privileged = track == "privileged"

    def init(params, episode, key):
        return init_state(episode)

    def act(params, state, store, episode, pos, budget):
        gate, state = gate_step(
            weights,
            track,
            state,
            episode,
            pos,
            budget,
            store_lib.remaining(store, budget),
            steps_since_write(store.newest, pos),
        )
        write = (gate.detect > params["threshold"]) & (gate.afford > params["afford_threshold"])
        return actions.write_if(write), state

    tracks = ("privileged",) if privileged else ("unprivileged", "privileged")
    return Policy(
        name,
        act,
        tracks,
        {"threshold": 0.0, "afford_threshold": float(afford_threshold)},
        init=init,
        emits=frozenset({"write"}),
        layout=frozenset(),
        doc=f"learned {track} write gate: writes iff detect logit > threshold and afford logit > afford_threshold",
    )


def load_gate_policy(path: str) -> Policy:
    """The policy named ``learned_gate:PATH`` (cached per file version)."""
    if not os.path.isfile(path):
        raise ValueError(f"policy {PREFIX}{path}: checkpoint file {path!r} not found")
    return once_per_file_version(_CACHE, path, _gate_policy_from_file)


def _gate_policy_from_file(path: str) -> Policy:
    weights, track, info = load_gate(path)
    afford_threshold = info.get("afford_threshold", 0.0)
    if not isinstance(afford_threshold, (int, float)):
        raise ValueError(f"learned gate checkpoint {path!r}: afford_threshold must be a number")
    return gate_policy(weights, track, name=PREFIX + path, afford_threshold=afford_threshold)
