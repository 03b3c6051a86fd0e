"""The gate: a small MLP from step features to a write logit, and its ``.npz`` checkpoint.

Write probability = sigmoid(logit). The hard policy writes iff logit > threshold (default 0).
"""
from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.learn.features import FEATURE_NAMES, N_FEATURES, UNPRIVILEGED_MASK

GATE_TRACKS = ("unprivileged", "privileged")
WEIGHT_NAMES = ("w_in", "b_in", "w_out", "b_out")


def init_gate(key, hidden: int = 32) -> dict:
    """Weights ``{"w_in": [D, H], "b_in": [H], "w_out": [H], "b_out": []}`` (D = N_FEATURES), float32."""
    key_in, key_out = jax.random.split(key)
    return {"w_in": jax.random.normal(key_in, (N_FEATURES, hidden)) / jnp.sqrt(N_FEATURES),
            "b_in": jnp.zeros(hidden),
            "w_out": jax.random.normal(key_out, (hidden,)) / jnp.sqrt(hidden),
            "b_out": jnp.zeros(())}


def gate_logit(weights: dict, features, track: str) -> jax.Array:
    """Write logit(s) for ``features: [..., D]``. The unprivileged gate never reads the priority
    (masked to zero whatever the input), so it cannot learn to depend on it."""
    if track == "unprivileged":
        features = features * UNPRIVILEGED_MASK
    hidden = jnp.tanh(features @ weights["w_in"] + weights["b_in"])
    return hidden @ weights["w_out"] + weights["b_out"]


def save_gate(path: str, weights: dict, track: str, meta: dict | None = None) -> None:
    """Write weights, track, feature names and ``meta`` (JSON-able: config, loss curve) to ``path``."""
    if track not in GATE_TRACKS:
        raise ValueError(f"track must be one of {', '.join(GATE_TRACKS)}; got {track!r}")
    arrays = {name: np.asarray(weights[name], np.float32) for name in WEIGHT_NAMES}
    info = {"format": "wpbjax-gate-v1", "track": track, "features": list(FEATURE_NAMES), **(meta or {})}
    with open(path, "wb") as handle:  # a file object: np.savez would append ".npz" to other names
        np.savez(handle, **arrays, info=np.asarray(json.dumps(info)))


def load_gate(path: str) -> tuple[dict, str, dict]:
    """``(weights, track, info)`` from a checkpoint; ValueError naming the file if it is missing or malformed."""
    if not os.path.isfile(path):
        raise ValueError(f"learned gate checkpoint {path!r}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            info = json.loads(str(data["info"]))
            weights = {name: jnp.asarray(data[name], jnp.float32) for name in WEIGHT_NAMES}
    except (OSError, KeyError, ValueError, json.JSONDecodeError) as err:
        raise ValueError(f"learned gate checkpoint {path!r} is malformed ({type(err).__name__}: {err}); "
                         "expected an .npz written by `wpbjax train`") from None
    if info.get("format") != "wpbjax-gate-v1" or info.get("track") not in GATE_TRACKS:
        raise ValueError(f"learned gate checkpoint {path!r}: not a wpbjax gate (format/track missing)")
    if list(info.get("features", [])) != list(FEATURE_NAMES):
        raise ValueError(f"learned gate checkpoint {path!r} was trained on features {info.get('features')}; "
                         f"this version computes {list(FEATURE_NAMES)}")
    hidden = weights["b_in"].shape
    shapes = {"w_in": (N_FEATURES,) + hidden, "b_in": hidden, "w_out": hidden, "b_out": ()}
    for name, shape in shapes.items():
        if weights[name].shape != shape:
            raise ValueError(f"learned gate checkpoint {path!r}: {name} has shape {weights[name].shape}, expected {shape}")
    return weights, info["track"], info
