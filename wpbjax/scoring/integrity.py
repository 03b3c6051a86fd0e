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
(scatters per run inside the vmapped rollout) cost more than the whole rollout of the cheap policies
(figures: docs/performance.md), for numbers the host gets cheaply from bits it has anyway.
"""

from __future__ import annotations

import dataclasses
import threading
import types

import numpy as np

import wpbjax.episodes.facts as facts
from wpbjax.episodes.batch import EpisodeBatch

COLUMNS = (
    "update_fidelity",
    "history_coverage",
    "stale_rate",
    "detectability",
    "temporal_accuracy",
    "provenance_completeness",
    "over_retention",
)
NUMERATORS = (
    "n_latest_held",
    "n_pairs_held",
    "n_stale",
    "n_facts_held",
    "n_changes_held",
    "n_probes_held",
    "n_transient_held",
)


def by_slot_name(table):
    """[..., T, K] per-slot table -> [..., T*K] indexed by the slot name k*T + pos (wpbjax.episodes.facts)."""
    return table.swapaxes(-1, -2).reshape(table.shape[:-2] + (-1,))


def _run_words(retained_bits: np.ndarray, n_steps: int) -> np.ndarray:
    """[n, R, ceil(T/8)] uint8 W bits (packed over steps) -> [n*T, W] unsigned words: each step's R runs
    as bits (run r at bit r % w of word r // w), so that OR-ing steps' words ORs every run at once. The
    word is the narrowest of 8, 16, 32, 64 bits that holds R (64 and several words beyond): the
    gathers and ORs move as few bytes as the runs need."""
    n, n_runs = retained_bits.shape[:2]
    n_bytes = -(-n_runs // 8)
    word_bytes = next((size for size in (1, 2, 4) if n_bytes <= size), 8)
    width, dtype = 8 * word_bytes, np.dtype(f"<u{word_bytes}")
    kept = np.unpackbits(retained_bits, axis=-1, count=n_steps)  # [n, R, T] 0/1
    words = np.empty((n, n_steps, -(-n_runs // width)), dtype)
    for number in range(words.shape[-1]):
        runs = kept[:, number * width : (number + 1) * width]
        # a sum of distinct powers of two is their OR (exact in the word's type)
        words[..., number] = np.einsum(
            "nrt,r->nt", runs, np.left_shift(dtype.type(1), np.arange(runs.shape[1], dtype=dtype))
        )
    return words.reshape(n * n_steps, -1)


@dataclasses.dataclass(frozen=True)
class _Groups:
    """Rows made of steps: OR-ing the words of ``steps`` (global step numbers, [m], sorted by row)
    from each of ``starts`` gives row ``rows[i]``'s word; rows without a step stay 0."""

    steps: np.ndarray
    starts: np.ndarray
    rows: np.ndarray
    n_rows: int

    @classmethod
    def of(cls, steps: np.ndarray, row: np.ndarray, n_rows: int) -> _Groups:
        order = np.argsort(row, kind="stable")
        row = row[order]
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]]) if len(row) else row
        return cls(steps[order], starts, row[starts], n_rows)

    def any(self, words: np.ndarray) -> np.ndarray:
        """[n_rows, W] the OR of each row's steps' words (``words``: [n*T, W])."""
        out = np.zeros((self.n_rows, words.shape[1]), words.dtype)
        if len(self.steps):
            out[self.rows] = np.bitwise_or.reduceat(words[self.steps], self.starts, axis=0)
        return out


@dataclasses.dataclass(frozen=True)
class Layout:
    """The fact structure of n episodes, whatever the runs: each (fact, version) pair and each fact
    is a row (named by its first slot, rows episode-major) with the steps that carry it."""

    n_episodes: int
    n_steps: int
    pairs: _Groups  # a pair's steps
    facts: _Groups  # a fact's pair rows (every version)
    current: _Groups  # a fact's pair rows of its latest version
    pair_episode: np.ndarray  # [pairs] episode of each pair row (sorted)
    fact_episode: np.ndarray  # [facts]
    latest: np.ndarray  # [pairs] bool: the fact's last observed version
    probes: np.ndarray  # [pairs] probe times that find the pair current
    changes: np.ndarray  # [c] pair rows that are a new version of a seen fact ...
    previous: np.ndarray  # [c] ... and the pair row observed just before
    transient: np.ndarray  # [t] global steps whose facts should none of them persist

    @classmethod
    def of(cls, batch) -> Layout:
        """From fact tables ``fact_pair``, ``fact_key``, ``fact_prev``, ``fact_latest``,
        ``fact_probes`` ([n, T, K]) and ``transient`` ([n, T]) (an EpisodeBatch or any object with them)."""
        n, n_steps = np.shape(batch.fact_pair)[:2]
        pair, key = by_slot_name(np.asarray(batch.fact_pair)), by_slot_name(np.asarray(batch.fact_key))  # [n, S]
        n_slots = pair.shape[1]
        names = np.arange(n_slots)
        pair_rows, fact_rows = np.flatnonzero(pair == names), np.flatnonzero(key == names)  # global first slots
        row_of = np.full(n * n_slots, -1, np.int64)
        row_of[pair_rows] = np.arange(len(pair_rows))
        fact_row_of = np.full(n * n_slots, -1, np.int64)
        fact_row_of[fact_rows] = np.arange(len(fact_rows))
        episode, slot = np.nonzero(pair >= 0)  # named slots, episode-major
        base = episode * n_slots
        step = episode * n_steps + slot % n_steps  # the global step that carries the slot
        slot_pair = row_of[base + pair[episode, slot]]
        pair_fact = fact_row_of[key.ravel()[pair_rows] + pair_rows // n_slots * n_slots]  # [pairs] fact row
        latest = by_slot_name(np.asarray(batch.fact_latest)).ravel()[pair_rows]
        rows = np.arange(len(pair_rows))
        prev = by_slot_name(np.asarray(batch.fact_prev)).ravel()[pair_rows]
        pair_episode = pair_rows // n_slots
        changes = np.flatnonzero(prev >= 0)
        return cls(
            n,
            n_steps,
            _Groups.of(step, slot_pair, len(pair_rows)),
            _Groups.of(rows, pair_fact, len(fact_rows)),
            _Groups.of(rows[latest], pair_fact[latest], len(fact_rows)),
            pair_episode,
            fact_rows // n_slots,
            latest,
            by_slot_name(np.asarray(batch.fact_probes)).ravel()[pair_rows].astype(np.int64),
            changes,
            row_of[pair_episode[changes] * n_slots + prev[changes]],
            np.flatnonzero(np.asarray(batch.transient).ravel()),
        )


def _count_runs(episode: np.ndarray, n_episodes: int, n_runs: int, *parts: tuple) -> list[np.ndarray]:
    """For each ``(words, weight)`` of ``parts`` (words [m, W] little-endian, :func:`_run_words`; weight
    [m] or None = 1): [n, R] int64, per episode and run, the sum of the weights of rows whose word has
    the run's bit set. ``episode`` [m] sorted, every part's rows: one segment sum for all parts."""
    unpacked = {}
    columns = []
    for words, weight in parts:
        if id(words) not in unpacked:
            unpacked[id(words)] = np.unpackbits(
                np.ascontiguousarray(words).view(np.uint8), axis=-1, count=n_runs, bitorder="little"
            )
        bits = unpacked[id(words)]
        columns.append(bits if weight is None else bits * _narrow(np.asarray(weight))[:, None])
    # [m, len(parts) * R] in the narrowest type that holds the weights (summed in int64 below): the
    # segment sum reads 1-2 bytes a cell, not 8
    stacked = np.concatenate(columns, axis=1)
    bounds = np.searchsorted(episode, np.arange(n_episodes + 1))
    some = bounds[1:] > bounds[:-1]  # reduceat reads an empty segment as one row: those stay 0
    out = np.zeros((n_episodes, stacked.shape[1]), np.int64)
    if some.any():
        out[some] = np.add.reduceat(stacked, bounds[:-1][some], axis=0, dtype=np.int64)
    return np.split(out, len(parts), axis=1)


def _narrow(weight: np.ndarray) -> np.ndarray:
    """[m] non-negative integer (or bool) weights in the narrowest unsigned type that holds them;
    other weights as int64."""
    if weight.dtype == bool:
        return weight.astype(np.uint8)
    if len(weight) and weight.min() < 0:
        return weight.astype(np.int64)
    return weight.astype(np.min_scalar_type(int(weight.max(initial=0))))


def count(layout: Layout, retained_bits: np.ndarray) -> dict:
    """[n, R] int64 numerators of every run from its W. ``retained_bits``: [n, R, ceil(T/8)] uint8
    (``Counts.retained``; R runs per episode, e.g. the budgets) on the n episodes of ``layout``.
    Each run is a bit of a word per step, so a pair is held in run r iff bit r of the OR of the
    words of its steps is set (a fact iff one of its pairs is): no [n, T*K, R] table."""
    n, n_runs = layout.n_episodes, retained_bits.shape[1]
    words = _run_words(retained_bits, layout.n_steps)  # [n*T, W]
    held = layout.pairs.any(words)  # [pairs, W]
    fact_held, fact_current = layout.facts.any(held), layout.current.any(held)  # [facts, W]
    changed = np.zeros_like(held)  # at a new version's row: it and the version before held
    changed[layout.changes] = held[layout.changes] & held[layout.previous]
    latest_held, pairs_held, probes_held, changes_held = _count_runs(
        layout.pair_episode, n, n_runs, (held, layout.latest), (held, None), (held, layout.probes), (changed, None)
    )
    facts_held, stale = _count_runs(
        layout.fact_episode, n, n_runs, (fact_held, None), (fact_held & ~fact_current, None)
    )
    (transient_held,) = _count_runs(layout.transient // layout.n_steps, n, n_runs, (words[layout.transient], None))
    return dict(
        n_latest_held=latest_held,
        n_pairs_held=pairs_held,
        n_stale=stale,
        n_facts_held=facts_held,
        n_changes_held=changes_held,
        n_probes_held=probes_held,
        n_transient_held=transient_held,
    )


def numerators(retained_bits: np.ndarray, batch: EpisodeBatch) -> dict:
    """[n, R] int64 numerators of every run from its W. ``retained_bits``: [n, R, ceil(T/8)] uint8
    (``Counts.retained``); ``batch``: the n episodes' host arrays (fact tables [n, T, K])."""
    return count(Layout.of(batch), retained_bits)


FACT_FIELDS = ("fact_pair", "fact_key", "fact_prev", "fact_latest", "fact_probes", "transient")


def _copies(indices: np.ndarray) -> int:
    """P where ``indices`` ([n]) is one list of distinct episodes repeated P times (a param grid's
    points, grid-major: ``np.tile(real, P)``), else 1."""
    distinct = len(np.unique(indices))
    if distinct == 0 or distinct == len(indices) or len(indices) % distinct:
        return 1
    copies = len(indices) // distinct
    return copies if np.array_equal(indices, np.tile(indices[:distinct], copies)) else 1


_LAYOUTS: dict = {}  # (id of the fact table, episode numbers) -> (that table, Layout, denominators)
_LAYOUTS_KEPT = 2  # a chunk's episodes (every (track, policy) of the chunk reads its layout), and the next
_LAYOUTS_LOCK = threading.Lock()


def _layout(batch: EpisodeBatch, episodes: np.ndarray) -> tuple[Layout, dict]:
    """(the Layout, the [m] denominators) of ``batch``'s episodes ``episodes``, built once for every run
    on them: the policies of a chunk (one per thread) share it. Keyed by the fact table's identity
    (kept referenced, so that the id is not reused) and the episode numbers."""
    key = (id(batch.fact_pair), episodes.tobytes())
    with _LAYOUTS_LOCK:
        found = _LAYOUTS.get(key)
    if found is not None and found[0] is batch.fact_pair:
        return found[1], found[2]
    tables = types.SimpleNamespace(**{field: np.asarray(getattr(batch, field))[episodes] for field in FACT_FIELDS})
    made = (batch.fact_pair, Layout.of(tables), facts.denominators(tables))
    with _LAYOUTS_LOCK:
        while len(_LAYOUTS) >= _LAYOUTS_KEPT:
            del _LAYOUTS[next(iter(_LAYOUTS))]  # the oldest
        _LAYOUTS[key] = made
    return made[1], made[2]


def _numerators_and_totals(retained_bits: np.ndarray, batch: EpisodeBatch, indices: np.ndarray) -> tuple[dict, dict]:
    """(numerators [n, R], denominators [n, 1]) of the runs on episodes ``indices`` ([n]) of ``batch``
    (only its fact tables gathered). Episodes repeated P times (a param grid) are read once, their
    P copies as P*R runs each: the fact work is the m distinct episodes', whatever P."""
    copies = _copies(indices)
    distinct = indices[: len(indices) // copies]
    n_runs, n_bytes = retained_bits.shape[1:]
    bits = retained_bits.reshape(copies, len(distinct), n_runs, n_bytes).swapaxes(0, 1)
    layout, totals = _layout(batch, distinct)
    counts = count(layout, bits.reshape(len(distinct), copies * n_runs, n_bytes))
    counts = {
        name: value.reshape(len(distinct), copies, n_runs).swapaxes(0, 1).reshape(len(indices), n_runs)
        for name, value in counts.items()
    }
    return counts, {name: np.tile(value, copies)[:, None] for name, value in totals.items()}


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
    host, totals = _numerators_and_totals(host["retained"], batch, np.asarray(indices))
    return {
        "update_fidelity": _ratio(host["n_latest_held"], totals["n_facts"]),
        "history_coverage": _ratio(host["n_pairs_held"], totals["n_pairs"]),
        "stale_rate": _ratio(host["n_stale"], host["n_facts_held"]),
        "detectability": _ratio(host["n_changes_held"], totals["n_changes"]),
        "temporal_accuracy": _ratio(host["n_probes_held"], totals["n_probes"]),
        "provenance_completeness": provenance,
        "over_retention": _ratio(host["n_transient_held"], totals["n_transient"]),
    }
