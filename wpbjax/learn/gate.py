"""The gate: two small MLPs over step features, and its ``.npz`` checkpoint.

Write probability p = sigmoid(detect) * sigmoid(afford): a *detection* head reads what the step is
(new api, version jump, changed fields, priority) and an *afford* head reads what writing it costs
now (its cost, relative cost, the budget and what is left of it). Factorised so that a detection
logit driven large by the F1 objective cannot saturate away the gradient that teaches the
budget trade-off. The hard policy writes iff p > sigmoid(threshold), i.e. logit(p) > threshold
(default 0: p > 1/2).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.files.weights import check_head_shapes, load_heads, save_heads
from wpbjax.learn.features import (
    BUDGET_FEATURES,
    DETECT_FEATURES,
    FEATURE_NAMES,
    N_FEATURES,
    FeatureState,
    step_features,
)

GATE_TRACKS = ("unprivileged", "privileged")
HEADS = ("detect", "afford")
AFFORD_BIAS = 2.0  # the afford head starts out near "yes" (sigmoid(2) = 0.88) so detection learns first
_HEAD_MASKS = {
    "detect": np.asarray([name in DETECT_FEATURES for name in FEATURE_NAMES], np.float32),
    "afford": np.asarray([name in BUDGET_FEATURES for name in FEATURE_NAMES], np.float32),
}
_NO_PRIORITY = np.asarray([name != "priority" for name in FEATURE_NAMES], np.float32)


def init_gate(key, hidden: int = 32) -> dict:
    """Weights ``{head: {"w_in": [D, H], "b_in": [H], "w_out": [H], "b_out": []}}`` for both heads, float32."""
    weights = {}
    for head, head_key in zip(HEADS, jax.random.split(key)):
        key_in, key_out = jax.random.split(head_key)
        weights[head] = {
            "w_in": jax.random.normal(key_in, (N_FEATURES, hidden)) / jnp.sqrt(N_FEATURES),
            "b_in": jnp.zeros(hidden),
            "w_out": jax.random.normal(key_out, (hidden,)) / jnp.sqrt(hidden),
            "b_out": jnp.asarray(AFFORD_BIAS if head == "afford" else 0.0),
        }
    return weights


def _head(layer: dict, features) -> jax.Array:
    return jnp.tanh(features @ layer["w_in"] + layer["b_in"]) @ layer["w_out"] + layer["b_out"]


def detect_logit(weights: dict, features, track: str) -> jax.Array:
    """The detection head's logit for ``features: [..., D]``. The unprivileged gate never reads the
    priority (masked to zero whatever the input), so it cannot learn to depend on it."""
    if track == "unprivileged":
        features = features * _NO_PRIORITY
    return _head(weights["detect"], features * _HEAD_MASKS["detect"])


def afford_logit(weights: dict, features, track: str) -> jax.Array:
    """The afford head's logit (reads only cost and budget features, on either track)."""
    return _head(weights["afford"], features * _HEAD_MASKS["afford"])


def gate_log_prob(weights: dict, features, track: str) -> jax.Array:
    """log p(write) = log sigmoid(detect) + log sigmoid(afford), for ``features: [..., D]``."""
    return _log_prob(detect_logit(weights, features, track), afford_logit(weights, features, track))


def _log_prob(detect, afford) -> jax.Array:
    return jax.nn.log_sigmoid(detect) + jax.nn.log_sigmoid(afford)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class GateOutput:
    """What the gate makes of one step."""

    features: jax.Array  # [D] float32 the step's features
    detect: jax.Array  # []  float32 detection logit
    afford: jax.Array  # []  float32 afford logit

    @property
    def log_prob(self) -> jax.Array:
        """[] log p(write)."""
        return _log_prob(self.detect, self.afford)


def gate_step(weights: dict, track: str, state: FeatureState, episode, pos, budget, remaining, since_write):
    """One step of a gate: the step's features (and the running state after it) and both heads'
    logits. ``(GateOutput, FeatureState)``. The one gate step of the hard policy, the soft
    relaxation and REINFORCE; ``remaining``/``since_write`` come from whichever store they run
    (exact bytes, or the soft store's expectation). ``weights=None`` gives the features alone
    (the RL environment's observation; logits 0)."""
    features, state = step_features(state, episode, pos, budget, remaining, since_write, track == "privileged")
    if weights is None:
        zero = jnp.zeros((), jnp.float32)
        return GateOutput(features=features, detect=zero, afford=zero), state
    return GateOutput(
        features=features, detect=detect_logit(weights, features, track), afford=afford_logit(weights, features, track)
    ), state


def gate_prob(weights: dict, features, track: str) -> jax.Array:
    return jnp.exp(gate_log_prob(weights, features, track))


def gate_logit(weights: dict, features, track: str) -> jax.Array:
    """logit(p) = log p - log(1 - p) (+inf when p rounds to 1)."""
    log_p = gate_log_prob(weights, features, track)
    return log_p - jnp.log(-jnp.expm1(log_p))


def save_gate(path: str, weights: dict, track: str, meta: dict | None = None) -> None:
    """Write weights, track, feature names and ``meta`` (JSON-able: config, loss curve) to ``path``."""
    if track not in GATE_TRACKS:
        raise ValueError(f"track must be one of {', '.join(GATE_TRACKS)}; got {track!r}")
    save_heads(
        path, weights, {"format": "wpbjax-gate-v1", "track": track, "features": list(FEATURE_NAMES), **(meta or {})}
    )


def load_gate(path: str) -> tuple[dict, str, dict]:
    """``(weights, track, info)`` from a checkpoint; ValueError naming the file if it is missing or malformed."""
    weights, info = load_heads(path, HEADS, "learned gate checkpoint", "wpbjax train")
    if not isinstance(info, dict) or info.get("format") != "wpbjax-gate-v1" or info.get("track") not in GATE_TRACKS:
        raise ValueError(f"learned gate checkpoint {path!r}: not a wpbjax gate (format/track missing)")
    if list(info.get("features", [])) != list(FEATURE_NAMES):
        raise ValueError(
            f"learned gate checkpoint {path!r} was trained on features {info.get('features')}; "
            f"this version computes {list(FEATURE_NAMES)}"
        )
    check_head_shapes(weights, {head: N_FEATURES for head in HEADS}, "learned gate checkpoint", path)
    return weights, info["track"], info
