"""``learned_gate:PATH``: a trained gate as a hard policy in the exact simulator.

It writes the incoming step iff the gate's logit exceeds ``threshold`` (a traced param, default 0);
the store accepts the write iff it fits (store rules unchanged). It never merges or expires. The
unprivileged gate runs on both tracks (it never reads the priority); a privileged gate only there.
"""
from __future__ import annotations

import os

import jax.numpy as jnp

from wpbjax import actions, store as store_lib
from wpbjax.learn.features import init_state, step_features
from wpbjax.learn.gate import gate_logit, load_gate
from wpbjax.policies.base import Policy

PREFIX = "learned_gate:"
_CACHE: dict = {}  # (path, mtime, size) -> Policy, so one file compiles once per process


def gate_policy(weights: dict, track: str, name: str = "learned_gate") -> Policy:
    """A Policy from gate weights trained for ``track``."""
    privileged = track == "privileged"

    def init(params, episode, key):
        return init_state(episode)

    def act(params, state, store, episode, pos, budget):
        remaining = store_lib.remaining(store, budget)
        since_write = jnp.where(store.newest >= 0, pos - store.newest, pos + 1)
        features, state = step_features(state, episode, pos, budget, remaining, since_write, privileged)
        return actions.write_if(gate_logit(weights, features, track) > params["threshold"]), state

    tracks = ("privileged",) if privileged else ("unprivileged", "privileged")
    return Policy(name, act, tracks, {"threshold": 0.0}, init=init, kinds=frozenset({"write"}),
                  doc=f"learned {track} write gate (MLP over online features), writes iff logit > threshold")


def load_gate_policy(path: str) -> Policy:
    """The policy named ``learned_gate:PATH`` (cached per file version)."""
    if not os.path.isfile(path):
        raise ValueError(f"policy {PREFIX}{path}: checkpoint file {path!r} not found")
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        weights, track, _ = load_gate(path)
        _CACHE[key] = gate_policy(weights, track, name=PREFIX + path)
    return _CACHE[key]
