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

Where they are computed: the device already returns W exactly, as a bitmask per run (``Counts.retained``),
and the count of items present (``Counts.n_present``); the numerators follow on the host in numpy
(:func:`numerators`: segment sums over the fact tables, vectorised over every run of a chunk) and the ratios
in float64 (:func:`columns`), NaN (a blank cell) where the denominator is 0. Counting on device instead
(scatters per run inside the vmapped rollout) cost 5-10x the whole rollout of the cheap policies (bench,
measured), for numbers the host gets in milliseconds from bits it has anyway.
"""
from __future__ import annotations

import jax
import numpy as np

from wpbjax.episodes import facts
from wpbjax.episodes.batch import EpisodeBatch

COLUMNS = ("update_fidelity", "history_coverage", "stale_rate", "detectability", "temporal_accuracy",
           "provenance_completeness", "over_retention")
NUMERATORS = ("n_latest_held", "n_pairs_held", "n_stale", "n_facts_held", "n_changes_held", "n_probes_held",
              "n_transient_held")


def by_slot_name(table):
    """[..., T, K] per-slot table -> [..., T*K] indexed by the slot name k*T + pos (wpbjax.episodes.facts)."""
    return table.swapaxes(-1, -2).reshape(table.shape[:-2] + (-1,))


def _segment_any(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """[n, S, B] bool ``values`` (runs last: gathers move whole rows of B), [n, S] ``group`` (names in
    0..S-1, -1 none) -> [n, S, B]: any value of each group, at the group's name (False elsewhere).
    Slots sorted by (episode, group), then one segment sum over every group of the chunk."""
    n_episodes, n_slots, n_runs = values.shape
    named = group >= 0
    global_group = (np.arange(n_episodes)[:, None] * n_slots + group)[named]   # episode-major group ids
    order = np.argsort(global_group, kind="stable")
    sorted_rows = values.reshape(-1, n_runs)[np.flatnonzero(named.ravel())[order]]
    sorted_group = global_group[order]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]]) if len(order) else order
    out = np.zeros((n_episodes * n_slots, n_runs), bool)
    if len(order):
        out[sorted_group[starts]] = np.add.reduceat(sorted_rows, starts, axis=0, dtype=np.int32) > 0
    return out.reshape(values.shape)


def numerators(retained_bits: np.ndarray, batch: EpisodeBatch) -> dict:
    """[n, B] int64 numerators of every run from its W. ``retained_bits``: [n, B, ceil(T/8)] uint8
    (``Counts.retained``); ``batch``: the n episodes' host arrays (fact tables [n, T, K])."""
    n_steps, width = batch.fact_pair.shape[1:]
    kept = np.unpackbits(retained_bits, axis=-1, count=n_steps).astype(bool).swapaxes(1, 2)  # [n, T, B]
    pair, key = by_slot_name(batch.fact_pair), by_slot_name(batch.fact_key)       # [n, S]
    latest, prev = by_slot_name(batch.fact_latest)[..., None], by_slot_name(batch.fact_prev)
    probes = by_slot_name(batch.fact_probes)[..., None]
    held = _segment_any(np.tile(kept, (1, width, 1)), pair)                       # [n, S, B] at first slots
    first = held & (pair == np.arange(pair.shape[-1]))[..., None]                # held pairs, once each
    rows = np.arange(len(pair))[:, None]
    changed = first & (prev >= 0)[..., None] & held[rows, np.maximum(prev, 0)]
    fact_held = _segment_any(first, key)
    fact_current = _segment_any(first & latest, key)
    total = lambda mask: mask.sum(1, dtype=np.int64)  # noqa: E731
    return dict(n_latest_held=total(first & latest), n_pairs_held=total(first),
                n_stale=total(fact_held & ~fact_current), n_facts_held=total(fact_held),
                n_changes_held=total(changed), n_probes_held=np.where(first, probes, 0).sum(1),
                n_transient_held=total(kept & batch.transient[..., None]))


def _ratio(numerator, denominator) -> np.ndarray:
    numerator, denominator = np.asarray(numerator, np.float64), np.asarray(denominator, np.float64)
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    return np.divide(numerator, denominator, out=np.full(numerator.shape, np.nan), where=denominator != 0)


def columns(host: dict, batch: EpisodeBatch, indices, n_retained) -> dict:
    """The integrity columns ([n, B] float64, NaN = blank) from host counts (``retained`` bits
    [n, B, ceil(T/8)], ``n_present`` [n, B]) of the episodes ``indices`` of a host ``batch`` (an encoding's arrays)."""
    provenance = _ratio(n_retained, host["n_present"])
    if batch.fact_pair is None:
        blank = {name: np.full(np.shape(n_retained), np.nan) for name in COLUMNS}
        return {**blank, "provenance_completeness": provenance}
    episodes = jax.tree_util.tree_map(lambda leaf: leaf[np.asarray(indices)], batch)
    host = numerators(host["retained"], episodes)
    totals = {name: value[:, None] for name, value in facts.denominators(episodes).items()}
    return {
        "update_fidelity": _ratio(host["n_latest_held"], totals["n_facts"]),
        "history_coverage": _ratio(host["n_pairs_held"], totals["n_pairs"]),
        "stale_rate": _ratio(host["n_stale"], host["n_facts_held"]),
        "detectability": _ratio(host["n_changes_held"], totals["n_changes"]),
        "temporal_accuracy": _ratio(host["n_probes_held"], totals["n_probes"]),
        "provenance_completeness": provenance,
        "over_retention": _ratio(host["n_transient_held"], totals["n_transient"]),
    }
