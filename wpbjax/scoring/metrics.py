"""Scoring from the final store (SEMANTICS §4).

On device: exact integer counts per run (:class:`Counts`). On host: the published ratios in
float64 from those counts, and policy utility as an exact float64 sum over the retained steps.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.state.store import STILL_HELD, StoreState


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Counts:
    """Exact integers describing one run's final store."""

    retained: jax.Array  # [ceil(T/8)] uint8 bit-packed W (retained steps), for exact utility sums
    n_retained: jax.Array  # [] int32 |W|
    n_hit: jax.Array  # [] int32 |W ∩ R|
    bytes_used: jax.Array  # [] int32 every present item, orphan deltas included
    staleness_sum: jax.Array  # [] int32 Σ_{t∈W} (t_last − t)
    write_actions: jax.Array  # [] int32
    expire_actions: jax.Array  # [] int32
    merge_actions: jax.Array  # [] int32
    n_present: jax.Array  # [] int32 items present, orphan deltas included (provenance, wpbjax.scoring.integrity)
    # The store's history, for reads (wpbjax.scoring.reads; only from a store that records it, else None):
    left_at: jax.Array | None = None  # [T] int32 step whose EXPIRE removed the slot's item; STILL_HELD if it is
    #   present at the end, -1 if the slot never held one
    written_at: jax.Array | None = None  # [T] int32 step that added it (WRITE_PAST; None: the slot itself)
    parent: jax.Array | None = None  # [T] int32 the parent slot of a slot that held a delta, else -1


def retained_mask(store: StoreState, episode: EpisodeBatch) -> jax.Array:
    """W: base items, plus deltas whose parent is a present base item and whose own step and
    parent step carry equal *string* apis (orphan deltas keep their bytes but do not count)."""
    base = store.present & ~store.is_delta
    parent = jnp.maximum(store.parent, 0)
    delta_counts = (
        store.present
        & store.is_delta
        & base[parent]
        & episode.api_is_str
        & episode.api_is_str[parent]
        & (episode.api_id == episode.api_id[parent])
    )
    return base | delta_counts


def count(store: StoreState, episode: EpisodeBatch) -> Counts:
    kept = retained_mask(store, episode)
    return Counts(
        n_present=store.present.sum(dtype=jnp.int32),
        retained=jnp.packbits(kept),
        n_retained=kept.sum(dtype=jnp.int32),
        n_hit=(kept & episode.critical).sum(dtype=jnp.int32),
        bytes_used=store.used,
        staleness_sum=jnp.where(kept, episode.t_last - episode.step_t, 0).sum(dtype=jnp.int32),
        write_actions=store.write_actions,
        expire_actions=store.expire_actions,
        merge_actions=store.merge_actions,
        **history(store),
    )


def history(store: StoreState) -> dict:
    """The history fields of :class:`Counts` (empty unless the store records its history)."""
    if store.expired_at is None:
        return {}
    left = jnp.where(store.present, STILL_HELD, jnp.where(store.expired_at == STILL_HELD, -1, store.expired_at))
    return dict(left_at=left, written_at=store.written_at, parent=store.parent)


def f1_from_counts(hits, retained, n_critical):
    """F1 = 2·|W ∩ R| / (|W| + |R|), the harmonic mean of precision and recall, from counts (0 when
    both sets are empty). numpy (float64) or JAX arrays, exact or expected (soft) counts: hits <= |R|
    and |R| is a whole number, so the floor of 1 only ever meets a zero numerator."""
    xp = jnp if any(isinstance(value, jax.Array) for value in (hits, retained, n_critical)) else np
    if xp is np:
        hits, retained, n_critical = (np.asarray(value, np.float64) for value in (hits, retained, n_critical))
    return 2.0 * hits / xp.maximum(retained + n_critical, 1)


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, np.float64), np.asarray(denominator, np.float64)
    return np.divide(
        numerator, denominator, out=np.zeros(np.broadcast(numerator, denominator).shape), where=denominator != 0
    )


def policy_utility(retained_bits: np.ndarray, utility64: np.ndarray) -> np.ndarray:
    """Σ_{t∈W} u_t in float64. ``retained_bits``: [..., ceil(T/8)] uint8; ``utility64``: [..., T]
    (the two broadcast against each other)."""
    if _sums_exact(utility64):
        return _policy_utility_by_nibbles(retained_bits, utility64)
    n_steps = utility64.shape[-1]
    kept = np.unpackbits(retained_bits, axis=-1, count=n_steps).astype(bool)
    return np.where(kept, utility64, 0.0).sum(axis=-1)


EXACT_QUANTUM = 2.0**-16  # utilities that are multiples of this (0.5, 1, 5, 6: the paper's) ...


def _sums_exact(utility64: np.ndarray) -> bool:
    """Whether every sum of some of each row's utilities is exact in float64, whatever the order of the
    additions: all are integer multiples of EXACT_QUANTUM, and a row's absolute total is below 2^53
    of them (so every partial sum is an integer number of quanta that float64 holds exactly)."""
    scaled = utility64 / EXACT_QUANTUM
    return bool(np.all(scaled == np.round(scaled)) and np.abs(scaled).sum(axis=-1).max(initial=0) < 2.0**53)


_NIBBLE_BITS = (np.arange(16)[:, None] >> np.arange(3, -1, -1)) & 1  # [16 values, 4 steps]: first step = high bit


def _policy_utility_by_nibbles(retained_bits: np.ndarray, utility64: np.ndarray) -> np.ndarray:
    """:func:`policy_utility` for utilities whose sums are exact in any order (:func:`_sums_exact`):
    each group of 4 steps' 16 possible sums is tabled once per episode, and a run adds one entry per
    half byte of its retained bits -- T/4 additions instead of T, and no [..., T] float table per run
    (a quarter of a large sweep's host time went to the unpacked sum)."""
    n_bytes = retained_bits.shape[-1]
    steps = np.zeros(utility64.shape[:-1] + (8 * n_bytes,))
    steps[..., : utility64.shape[-1]] = utility64  # steps past T add 0 whatever their bits
    sums = steps.reshape(steps.shape[:-1] + (2 * n_bytes, 4)) @ _NIBBLE_BITS.T.astype(np.float64)  # [..., 2J, 16]
    # one flat table: row r's half byte i of value v at (r * 2J + i) * 16 + v
    rows = np.arange(np.prod(sums.shape[:-2], dtype=np.intp)).reshape(sums.shape[:-2])
    lead = np.broadcast_shapes(retained_bits.shape[:-1], sums.shape[:-2])
    index = np.empty(lead + (2 * n_bytes,), np.intp)
    index[..., 0::2] = retained_bits >> 4  # a byte's first 4 steps are its high half
    index[..., 1::2] = retained_bits & 15
    index += 16 * (np.broadcast_to(rows, lead)[..., None] * (2 * n_bytes) + np.arange(2 * n_bytes))
    return sums.reshape(-1).take(index).sum(axis=-1) + 0.0  # (+ 0.0: no -0.0)


def score(
    counts: dict, utility: np.ndarray, oracle: np.ndarray, n_critical, total_drift_events, n_steps, budget
) -> dict:
    """The published metric columns from host arrays of counts (all broadcastable, one entry per run)."""
    n_hit, n_retained = counts["n_hit"], counts["n_retained"]
    bytes_used = np.asarray(counts["bytes_used"], np.int64)
    recall = _ratio(n_hit, n_critical)
    precision = _ratio(n_hit, n_retained)
    f1 = f1_from_counts(n_hit, n_retained, n_critical)
    regret = np.maximum(0.0, np.asarray(oracle, np.float64) - utility)
    return {
        "avg_staleness": _ratio(counts["staleness_sum"], n_retained),
        "bytes_used": bytes_used,
        "drift_coverage": _ratio(n_hit, total_drift_events),
        "expire_actions": np.asarray(counts["expire_actions"], np.int64),
        "expire_rate": _ratio(counts["expire_actions"], counts["write_actions"]),
        "f1": f1,
        "oracle_utility": np.asarray(oracle, np.float64),
        "policy_utility": utility,
        "precision": precision,
        "recall": recall,
        "regret": regret,
        "regret_write_only": regret,
        "utility_per_kb": _ratio(utility, bytes_used / 1024.0),
        "utilization": _ratio(bytes_used, budget),
        "write_actions": np.asarray(counts["write_actions"], np.int64),
        "write_density": _ratio(n_retained, n_steps),
    }
