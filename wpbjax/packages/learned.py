"""Learned package writers: a streaming writer that sees only the arriving group, and its checkpoint.

At each group the writer reads, per candidate: its representation kind, its cost, and its coverage
row against the store written so far (the marginal value it would add, through the package's unit
weights and h), plus the budget left, the budget and how far through the stream it is. Nothing
from later groups, no OPT, no threshold tuned per package in hindsight (which is what makes
``oracle_gvt`` an oracle). A scoring network gives one logit per candidate and one for discarding
the group; the hard writer takes the argmax over {discard} and the affordable candidates, so a
store it writes is always feasible. Training (``wpbjax.packages.learned_train``) relaxes that argmax
to a softmax; the hard writer is what the exact scorer sees.

Shapes: one package's arrays are ``cost: [G, C]``, ``coverage: [G, C, R]``, ``weight: [R]``; the
writer's ``chosen: [P, nB, G] int32`` holds a candidate index per group, -1 for discard.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.files.weights import LAYERS, check_head_shapes, load_heads, save_heads  # noqa: F401 (learned.LAYERS)

FORMAT = "wpbjax-package-writer-v1"
CANDIDATE_FEATURES = (
    "gain",
    "singleton",
    "density",
    "gain_share",
    "density_share",
    "already_covered",
    "cost_over_budget",
    "cost_over_left",
)
STATE_FEATURES = (
    "left_share",
    "log2_groups_left",
    "last_group",
    "log2_budget",
    "log2_left",
    "seen_value_share",
    "best_gain",
    "best_density",
    "group_size",
)
HEADS = ("candidate", "discard")


def h_function(name: str):
    """The concave h as a jnp function (``min``: min(1, z); ``log1p``; ``linear``)."""
    table = {"min": lambda z: jnp.minimum(z, 1.0), "log1p": jnp.log1p, "linear": lambda z: z}
    if name not in table:
        raise ValueError(f"unknown h {name!r}; expected one of {', '.join(table)}")
    return table[name]


def n_inputs(n_kinds: int) -> dict[str, int]:
    """Input widths of the two heads: the candidate head reads kind one-hot + candidate + state
    features, the discard head the state features."""
    return {"candidate": n_kinds + len(CANDIDATE_FEATURES) + len(STATE_FEATURES), "discard": len(STATE_FEATURES)}


def init_writer(key, n_kinds: int, hidden: int = 32) -> dict:
    """``{head: {"w_in": [D, H], "b_in": [H], "w_out": [H], "b_out": []}}`` float32 for both heads.

    The candidate head's kind rows start at zero: a kind absent from training gets no gradient, so
    it stays exactly "unknown kind" (no random push) on packages that have it."""
    params = {}
    for head, head_key in zip(HEADS, jax.random.split(key)):
        width = n_inputs(n_kinds)[head]
        key_in, key_out = jax.random.split(head_key)
        w_in = jax.random.normal(key_in, (width, hidden)) / jnp.sqrt(width)
        if head == "candidate":
            w_in = w_in.at[:n_kinds].set(0.0)
        params[head] = {
            "w_in": w_in,
            "b_in": jnp.zeros(hidden),
            "w_out": jax.random.normal(key_out, (hidden,)) / jnp.sqrt(hidden),
            "b_out": jnp.zeros(()),
        }
    return params


def _mlp(layer: dict, inputs) -> jax.Array:
    return jnp.tanh(inputs @ layer["w_in"] + layer["b_in"]) @ layer["w_out"] + layer["b_out"]


def group_features(weight, totals, seen, left, budget, groups_left, cost, valid, kind_onehot, coverage, h):
    """Features of one arriving group against the store so far.

    ``weight: [R]``, ``totals: [R]`` coverage sums of the store, ``seen: [R]`` 1 for units some
    candidate so far (this group included) covers (the writer never reads the weight of a unit no
    candidate has shown it), ``left``/``budget``/``groups_left`` scalars (budget left, budget, groups
    still to arrive after this one: the stream's length is known, its content is not), ``cost: [C]``, ``valid: [C]``,
    ``kind_onehot: [C, K]``, ``coverage: [C, R]``. Returns ``(candidate: [C, K + Fc + Fs],
    state: [Fs], affordable: [C] float)``; ``affordable`` is ``valid`` times the share of a
    candidate's cost the budget left covers, clipped to [0, 1] (1 or 0 on a hard store)."""
    cost = cost.astype(jnp.float32)
    before = h(totals)
    gain = ((h(totals + coverage) - before) * weight).sum(-1)  # [C] marginal value
    singleton = (h(coverage) * weight).sum(-1)  # [C] F({u})
    density = gain / jnp.maximum(cost, 1.0)
    affordable = valid * jnp.clip(left - cost + 1.0, 0.0, 1.0)
    best_gain = jnp.max(gain * affordable, initial=0.0)
    best_density = jnp.max(density * affordable, initial=0.0)
    candidate = jnp.stack(
        [
            gain,
            singleton,
            density,
            gain / jnp.maximum(best_gain, 1e-6),
            density / jnp.maximum(best_density, 1e-6),
            1.0 - gain / jnp.maximum(singleton, 1e-6),
            cost / jnp.maximum(budget, 1.0),
            jnp.minimum(cost / jnp.maximum(left, 0.5), 4.0),
        ],
        -1,
    )
    seen_weight = jnp.maximum((weight * seen).sum(), 1e-6)
    state = jnp.stack(
        [
            left / jnp.maximum(budget, 1.0),
            jnp.log2(groups_left + 1.0),
            (groups_left == 0).astype(jnp.float32),
            jnp.log2(jnp.maximum(budget, 1.0)),
            jnp.log2(jnp.maximum(left, 0.0) + 1.0),
            (before * weight).sum() / seen_weight,
            best_gain,
            best_density,
            valid.sum() / 8.0,
        ]
    )
    broadcast = jnp.broadcast_to(state, (cost.shape[0], state.shape[0]))
    return jnp.concatenate([kind_onehot, candidate, broadcast], -1), state, affordable


def group_logits(params: dict, candidate_inputs, state) -> jax.Array:
    """``[1 + C]`` logits: discard first, then one per candidate (unmasked)."""
    return jnp.concatenate([_mlp(params["discard"], state)[None], _mlp(params["candidate"], candidate_inputs)])


def kind_onehot(kind, n_kinds: int) -> jax.Array:
    """``kind: [..., C] int32`` (-1 on padding, or an id this writer never saw) -> ``[..., C, K]``."""
    return jax.nn.one_hot(jnp.where(kind < n_kinds, kind, -1), n_kinds, dtype=jnp.float32)


def package_arrays(batch, n_kinds: int) -> dict:
    """The writer's float32 view of a PackageBatch: per package ``cost [G, C]``, ``valid [G, C]``,
    ``onehot [G, C, K]``, ``coverage [G, C, R]``, ``weight [R]``, ``groups_after [G]`` (groups with a
    candidate that arrive after this one)."""
    valid = np.asarray(batch.valid)
    nonempty = valid.any(-1).astype(np.int32)  # [P, G]
    return {
        "cost": jnp.asarray(np.asarray(batch.cost), jnp.int32),
        "valid": jnp.asarray(valid, jnp.float32),
        "onehot": kind_onehot(jnp.asarray(np.asarray(batch.kind)), n_kinds),
        "coverage": jnp.asarray(np.asarray(batch.coverage), jnp.float32),
        "weight": jnp.asarray(np.asarray(batch.weight), jnp.float32),
        "groups_after": jnp.asarray(np.cumsum(nonempty[:, ::-1], -1)[:, ::-1] - nonempty, jnp.float32),
    }


def hard_rollout(params: dict, package: dict, budget, h_name: str = "min") -> jax.Array:
    """One package, one budget: ``chosen: [G] int32`` (candidate index per group, -1 = discard)."""
    h = h_function(h_name)

    def step(carry, group):
        totals, seen, left = carry
        groups_left, cost, valid, onehot, coverage = group
        seen = jnp.maximum(seen, ((coverage * valid[:, None]) > 0).any(0))
        inputs, state, _ = group_features(
            package["weight"], totals, seen, left, budget, groups_left, cost, valid, onehot, coverage, h
        )
        allowed = jnp.concatenate([jnp.ones(1, bool), (valid > 0) & (cost <= left)])
        pick = jnp.argmax(jnp.where(allowed, group_logits(params, inputs, state), -jnp.inf)) - 1
        take = pick >= 0
        row = jnp.maximum(pick, 0)
        totals = totals + jnp.where(take, coverage[row], 0.0)
        left = left - jnp.where(take, cost[row], 0).astype(left.dtype)
        return (totals, seen, left), pick.astype(jnp.int32)

    groups = (package["groups_after"], package["cost"], package["valid"], package["onehot"], package["coverage"])
    start = (jnp.zeros_like(package["weight"]), jnp.zeros_like(package["weight"]), jnp.asarray(budget, jnp.float32))
    _, chosen = jax.lax.scan(step, start, groups)
    return chosen


@functools.partial(jax.jit, static_argnames=("h_name",))
def _run(params, arrays, budgets, h_name):
    per_budget = jax.vmap(functools.partial(hard_rollout, h_name=h_name), in_axes=(None, None, 0))
    return jax.vmap(per_budget, in_axes=(None, 0, None))(params, arrays, budgets)


def run_writer(params: dict, batch, budgets, n_kinds: int, h: str = "min", chunk: int = 8192) -> np.ndarray:
    """``chosen: [P, nB, G] int32`` of the hard writer on every package of ``batch`` at every budget
    (``batch.kind`` in the writer's kind ids), ``chunk`` packages per call (the last one padded, so
    one compile serves every chunk)."""
    budgets = jnp.asarray(np.asarray(budgets), jnp.float32)
    arrays = package_arrays(batch, n_kinds)
    n_packages = int(arrays["cost"].shape[0])
    size = min(chunk, n_packages)
    parts = []
    for start in range(0, n_packages, size):
        part = jax.tree_util.tree_map(lambda leaf, start=start: leaf[start : start + size], arrays)
        short = size - int(part["cost"].shape[0])
        if short:
            part = jax.tree_util.tree_map(
                lambda leaf, short=short: jnp.concatenate([leaf, jnp.zeros_like(leaf[:short])]), part
            )
        parts.append(np.asarray(_run(params, part, budgets, h))[: size - short])
    return np.concatenate(parts).astype(np.int32)


def kind_lookup(writer_kinds) -> np.ndarray:
    """Map this version's kind ids (``KINDS``) to the writer's one-hot rows: ``[len(KINDS)] int32``,
    -1 for a kind the writer was not built with (it then reads as "unknown kind")."""
    from wpbjax.packages.model import KINDS

    rows = {name: index for index, name in enumerate(writer_kinds)}
    return np.asarray([rows.get(name, -1) for name in KINDS], np.int32)


def write(path: str, batch, budgets, h: str = "min") -> tuple[object, np.ndarray]:
    """Stores of the learned writer in ``path`` (``method learned:PATH``) for every package and budget:
    ``(batch, chosen [P, nB, G] int32)``, the same contract as ``wpbjax.packages.writers.write``."""
    params, info = load_writer(path)
    kinds = np.asarray(batch.kind)
    mapped = np.where(kinds >= 0, kind_lookup(info["kinds"])[np.maximum(kinds, 0)], -1)
    view = _KindView(batch, mapped)
    return batch, run_writer(params, view, budgets, len(info["kinds"]), h)


class _KindView:
    """``batch`` with its kind ids replaced by the writer's (``package_arrays`` reads only these fields)."""

    def __init__(self, batch, kind):
        self.cost, self.valid, self.coverage, self.weight, self.kind = (
            batch.cost,
            batch.valid,
            batch.coverage,
            batch.weight,
            kind,
        )


def save_writer(path: str, params: dict, kinds: tuple[str, ...], meta: dict | None = None) -> None:
    """Weights, the kind names the one-hot was built from, feature names and ``meta`` (config, history)."""
    save_heads(
        path,
        params,
        {
            "format": FORMAT,
            "kinds": list(kinds),
            "candidate_features": list(CANDIDATE_FEATURES),
            "state_features": list(STATE_FEATURES),
            **(meta or {}),
        },
    )


def load_writer(path: str) -> tuple[dict, dict]:
    """``(params, info)``; ValueError naming the file if it is missing, malformed or from other features."""
    label = "learned package writer"
    params, info = load_heads(path, HEADS, label, "wpbjax packages train")
    if not isinstance(info, dict) or info.get("format") != FORMAT or not isinstance(info.get("kinds"), list):
        raise ValueError(f"{label} {path!r}: not a wpbjax package writer (format {FORMAT} expected)")
    if info.get("candidate_features") != list(CANDIDATE_FEATURES) or info.get("state_features") != list(STATE_FEATURES):
        raise ValueError(
            f"{label} {path!r} was trained on other features; retrain it with this version's `wpbjax packages train`"
        )
    check_head_shapes(params, n_inputs(len(info["kinds"])), label, path)
    return params, info
