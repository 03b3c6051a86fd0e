"""Write-integrity metrics (WRIT-style) from a run's final store, exact, for every run.

With W the retained set (SEMANTICS §4: base items, plus deltas whose parent is a present base item with
the same string api) and held(k, v) iff a step of W carries fact k at version v (facts:
:mod:`wpbjax.episodes.facts`; only facts that should persist count, except in over-retention):

* ``update_fidelity``  = #{facts k seen: held(k, latest version of k)} / #{facts seen}
* ``history_coverage`` = #{(k, v) observed: held(k, v)} / #{(k, v) observed}
* ``stale_rate``       = among facts with some version held, the fraction whose newest held version is not
  the latest (a reader taking the newest stored value gets a stale one)
* ``detectability``    = among version changes k: v -> v', the fraction with both v and v' held
* ``temporal_accuracy`` = as-of replay: over probe times tau (8 evenly spaced steps, plus the episode's
  ``probe_steps``, WRIT's ``as_of``) and facts seen by tau, the fraction whose version current at tau is held
* ``provenance_completeness`` = fraction of stored items whose source is intact (base items, and deltas whose
  parent is present with the same api: |W| / items present; orphan deltas still cost bytes)
* ``over_retention``   = fraction of should-not-persist steps (every fact they carry should not persist:
  WRIT ``non_memory``, retracted, expired) still in W

On device (:func:`count`): the numerators, as exact int32 per run. On host (:func:`columns`): ratios in
float64 against the episodes' denominators; NaN (a blank cell) where the denominator is 0.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.episodes import facts
from wpbjax.episodes.batch import EpisodeBatch

COLUMNS = ("update_fidelity", "history_coverage", "stale_rate", "detectability", "temporal_accuracy",
           "provenance_completeness", "over_retention")
COUNT_FIELDS = ("n_present", "n_latest_held", "n_pairs_held", "n_stale", "n_facts_held", "n_changes_held",
                "n_probes_held", "n_transient_held")


def by_slot_name(table: jax.Array) -> jax.Array:
    """[T, K] per-slot table -> [T*K] indexed by the slot name k*T + pos (wpbjax.episodes.facts)."""
    return table.T.reshape(-1)


def count(kept: jax.Array, present: jax.Array, episode: EpisodeBatch) -> dict:
    """[] int32 numerators of one run. ``kept``: [T] bool W; ``present``: [T] bool items in the store."""
    zero = jnp.zeros((), jnp.int32)
    counts = dict.fromkeys(COUNT_FIELDS, zero)
    counts["n_present"] = present.sum(dtype=jnp.int32)
    if episode.fact_pair is None:
        return counts
    n_steps, width = episode.fact_pair.shape
    size = n_steps * width
    pair = by_slot_name(episode.fact_pair)
    # held[s]: the pair first observed at slot s has an observation in W (NO_ID slots drop out of the scatter)
    carried = jnp.tile(kept, width)
    held = jnp.zeros(size, bool).at[jnp.where(pair >= 0, pair, size)].max(carried, mode="drop")
    first = held & (pair == jnp.arange(size))  # held pairs, once each (at their first slot)
    latest, prev = by_slot_name(episode.fact_latest), by_slot_name(episode.fact_prev)
    key = jnp.where(first, by_slot_name(episode.fact_key), size)
    fact_held = jnp.zeros(size, bool).at[key].set(True, mode="drop")
    fact_current = jnp.zeros(size, bool).at[jnp.where(latest, key, size)].set(True, mode="drop")
    total = lambda mask: mask.sum(dtype=jnp.int32)  # noqa: E731
    counts.update(
        n_latest_held=total(first & latest), n_pairs_held=total(first),
        n_facts_held=total(fact_held), n_stale=total(fact_held & ~fact_current),
        n_changes_held=total(first & (prev >= 0) & held[jnp.maximum(prev, 0)]),
        n_probes_held=jnp.where(first, by_slot_name(episode.fact_probes), 0).sum(dtype=jnp.int32),
        n_transient_held=total(kept & episode.transient))
    return counts


def _ratio(numerator, denominator) -> np.ndarray:
    numerator, denominator = np.asarray(numerator, np.float64), np.asarray(denominator, np.float64)
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    return np.divide(numerator, denominator, out=np.full(numerator.shape, np.nan), where=denominator != 0)


def columns(host: dict, batch: EpisodeBatch, indices, n_retained) -> dict:
    """The integrity columns ([n, B] float64, NaN = blank) from host counts ([n, B] each) of the episodes
    ``indices`` of a host ``batch`` (an encoding's arrays)."""
    if batch.fact_pair is None:
        return {name: np.full(np.shape(n_retained), np.nan) for name in COLUMNS}
    totals = {name: value[:, None] for name, value in facts.denominators(batch, indices).items()}
    return {
        "update_fidelity": _ratio(host["n_latest_held"], totals["n_facts"]),
        "history_coverage": _ratio(host["n_pairs_held"], totals["n_pairs"]),
        "stale_rate": _ratio(host["n_stale"], host["n_facts_held"]),
        "detectability": _ratio(host["n_changes_held"], totals["n_changes"]),
        "temporal_accuracy": _ratio(host["n_probes_held"], totals["n_probes"]),
        "provenance_completeness": _ratio(n_retained, host["n_present"]),
        "over_retention": _ratio(host["n_transient_held"], totals["n_transient"]),
    }
