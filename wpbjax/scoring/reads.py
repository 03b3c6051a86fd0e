"""Reads: what a store is worth to an agent that queries it (docs/reads.md).

Each probe (:mod:`wpbjax.episodes.probes`) is answered from the store as it stood after the probe's step:

* **Records.** The retrieval unit is a present base item with its present merged deltas (a base item
  reconstructed with them); an orphan delta (its base gone) cannot be read.
* **Retriever.** ``score = w_rel * relevance + w_rec * recency + w_imp * importance`` (the Generative
  Agents form): relevance 1 for a record of the asked fact, the similarity of the two facts' names
  (:func:`similarity`: shared name tokens, in (0, 1)) for a record of another fact, 0 for a record that carries
  none; recency ``decay ** (steps since the record's last write)``; importance the base step's metadata
  priority (0 if none). The top K records are retrieved (ties to the newer record).
* **Reader.** Among the retrieved records' items that carry the asked fact at or before the asked time
  (the as-of step, or the probe's own), it answers with the newest one's version; with none, it abstains.
  The answer is right iff it equals the fact's version after the asked step (the last observation of the
  fact up to it, over the whole episode), or it abstains where there is none (a never-seen fact).

Everything is computed exactly from each slot's history (when its item was written and when it left:
``Counts.left_at``, recorded by the store under the "history" kind) after the rollout, in numpy, a block of
runs at a time: probes x slots per run, no re-run of the scan per probe. Memory attribution (WRIT's
layers) answers the same probes with no memory (every probe abstains) and with oracle memory (every step
stored, never evicted, unlimited budget) through the same retriever and K.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes import probes as probes_lib
from wpbjax.state.store import EMPTY_DELTA_BYTES, INDEX_BYTES, STILL_HELD

# Result columns (one row per run and K; blank (NaN) where the episode has no probes or the ratio no
# denominator). Answerable probes: those whose fact has a value at the asked step (not never-seen).
READ_COLUMNS = (
    "top_k",  # K, the records retrieved per probe
    "n_probes",  # probes of the episode
    "read_accuracy",  # right answers (or right abstentions) / probes
    "stale_answer_rate",  # answers with another version of the asked fact / answerable probes
    "memory_miss_rate",  # wrong answers the whole store gets wrong too (never stored, evicted) / answerable
    "retrieval_miss_rate",  # wrong answers the whole store gets right (outside the top K) / answerable
    "distractor_rate",  # top-1 record of another fact / answerable probes with something retrieved
    "abstention_precision",  # abstentions on never-seen facts / abstentions
    "abstention_recall",  # abstentions on never-seen facts / never-seen probes
    "precision_at_k",  # retrieved records of the asked fact / records retrieved (answerable probes)
    "retrieved_bytes_per_query",  # bytes of the retrieved records (base + deltas) / probes
    "read_accuracy_no_memory",  # the same probes answered with no memory
    "read_accuracy_oracle_memory",  # ... with every step stored (same retriever and K)
    "writer_error_share",  # wrong answers that oracle memory gets right / wrong answers
    "read_credit",  # the weighted share of each probe's facts answered right, mean over probes
    "facts_per_probe",  # facts asked for / probes
)
COUNTS = (
    "n_probes",
    "n_answerable",
    "n_right",
    "n_stale",
    "n_abstained",
    "n_right_abstentions",
    "n_memory_miss",
    "n_retrieval_miss",
    "n_distractor",
    "n_with_retrieval",
    "n_relevant",
    "n_retrieved",
    "retrieved_bytes",
    "n_writer_errors",
    "n_right_no_memory",
    "n_right_oracle",
    "n_facts",
    "credit",  # float64: the sum over probes of the weighted share of facts right
)
HISTORY_FIELDS = ("left_at", "parent", "written_at")  # what reads take of wpbjax.scoring.metrics.Counts
RUN_ELEMENTS = 1 << 21  # runs x probes x slots held at once (each element ~40 bytes of temporaries)
TIE_BREAK = 2.0**-40  # per slot: equal scores go to the newer record
DEDUPE_ELEMENTS = 1 << 24  # episodes x runs x runs x slots compared at once when finding repeated runs
PROBE_GROUPS = 4  # probes of a block answered in this many groups by time (each on the steps it can see)


@dataclasses.dataclass(frozen=True)
class Retriever:
    """The retriever's weights (``score`` in the module note) and the K values asked for."""

    w_rel: float = 1.0
    w_rec: float = 1.0
    w_imp: float = 1.0
    decay: float = 0.99
    top_k: tuple = (5,)

    def __post_init__(self):
        top_k = tuple(int(k) for k in np.atleast_1d(self.top_k))
        if not top_k or min(top_k) < 1 or len(set(top_k)) < len(top_k):
            raise ArgumentError(f"{arg('top_k')}: expected distinct positive integers; got {list(self.top_k)}")
        object.__setattr__(self, "top_k", top_k)
        for name in ("w_rel", "w_rec", "w_imp"):
            if not np.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ArgumentError(
                    f"{arg('retriever')} {name}: expected a finite number >= 0; got {getattr(self, name)!r}"
                )
        if not 0 < self.decay <= 1:
            raise ArgumentError(f"{arg('retriever')} decay: expected a number within (0, 1]; got {self.decay!r}")


PROBE_SOURCES = ("labels", "generate", "none")


@dataclasses.dataclass(frozen=True)
class ReadPlan:
    """How a sweep reads its stores: where probes come from (``labels``: the episodes' ``probes`` labels only;
    ``generate``: those, else :func:`wpbjax.episodes.probes.generate` with ``probe_config``; ``none``: no
    reads, blank columns) and the retriever (with its K values, one results row per K)."""

    retriever: Retriever = Retriever()
    probes: str = "labels"
    probe_config: probes_lib.ProbeConfig = probes_lib.ProbeConfig()

    def __post_init__(self):
        if self.probes not in PROBE_SOURCES:
            raise ArgumentError(f"{arg('probes')}: expected one of {', '.join(PROBE_SOURCES)}; got {self.probes!r}")

    def apply(self, encoded):
        """``encoded`` with the probes this plan reads with (generated ones added, or all dropped)."""
        if self.probes == "none":
            return dataclasses.replace(encoded, **{name: None for name in probes_lib.PROBE_FIELDS})
        if self.probes == "generate":
            return probes_lib.with_default_probes(encoded, self.probe_config)
        return encoded


def has_probes(encoded) -> bool:
    """Some episode of ``encoded`` has a probe (and facts to answer it from): its runs record their history."""
    return (
        encoded.probe_pos is not None and encoded.arrays.fact_key is not None and bool((encoded.probe_pos >= 0).any())
    )


# --- Relevance between facts ----------------------------------------------------------------------
@functools.lru_cache(maxsize=1 << 16)
def _tokens(name: str) -> frozenset:
    return frozenset(re.findall(r"[a-z]+|[0-9]+", name.lower()))


@functools.lru_cache(maxsize=1 << 18)
def similarity(name: str, other: str) -> float:
    """Relevance of a record of fact ``other`` to a query for fact ``name``: 1 for the same fact, else the
    Jaccard index of their name tokens (runs of letters or digits: ``/v1/customers/{customer}`` and
    ``/v1/customers`` share 2 of 3), at most 0.99 — related, never the same."""
    if name == other:
        return 1.0
    mine, theirs = _tokens(name), _tokens(other)
    union = len(mine | theirs)
    return min(len(mine & theirs) / union, 0.99) if union else 0.0


def _similarity_matrix(names: tuple) -> np.ndarray:
    return np.array([[similarity(a, b) for b in names] for a in names], np.float64).reshape(len(names), len(names))


# --- Per-episode tables (policy-independent) ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Episodes:
    """What reads need of m episodes, for their probes ([m, Q]) against their slots ([m, T])."""

    probe: np.ndarray  # [m, Q] bool     a real probe
    asked_at: np.ndarray  # [m, Q] int64    the probe's step
    relevance: np.ndarray  # [m, Q, T] float64 relevance of the slot's item to the probe
    carries: np.ndarray  # [m, Q, T] bool  the slot carries the asked fact
    usable: np.ndarray  # [m, Q, T] bool  ... at or before the asked step (the reader may answer with it)
    version: np.ndarray  # [m, Q, T] int64 the asked fact's version at the slot (-1 none)
    truth: np.ndarray  # [m, Q] int64    the right answer: the version after the asked step (-1: abstain)
    importance: np.ndarray  # [m, T] float64
    base_cost: np.ndarray  # [m, T] int64    bytes of the slot's base item (the track's write cost)
    # A probe may ask for several facts, a row each (adjacent rows of one probe: the rows first..last)
    carries_probe: np.ndarray  # [m, Q, T] bool  the slot carries one of the probe's facts
    first: np.ndarray  # [m, Q] int64   the probe's first row
    last: np.ndarray  # [m, Q] int64    ... and last
    weight: np.ndarray  # [m, Q] float64 the row's fact's weight in the probe's credit
    history: np.ndarray  # [m, Q] bool    a history row: every version up to the step is asked for
    vindex: np.ndarray  # [m, Q, T] int32 a history row's usable slot: its version's number among the row's (-1 other)
    n_versions: np.ndarray  # [m, Q] int64 a history row's versions (0: never seen: abstain)


PER_SLOT = ("importance", "base_cost")  # the _Episodes tables without a probe axis


def _episode_tables(encoded, episodes: np.ndarray, track_costs: np.ndarray) -> _Episodes:
    arrays = encoded.arrays
    fact_key, fact_pair = arrays.fact_key[episodes], arrays.fact_pair[episodes]
    number, _ = probes_lib.fact_numbers(fact_key)  # [m, T, K]
    names = encoded.fact_names[episodes] if encoded.fact_names is not None else np.full(len(episodes), None, object)
    generated = [index for index, name in enumerate(names) if name is None]
    if generated:
        names = names.copy()
        made = probes_lib.generated_names(arrays.endpoint_index[episodes[generated]], fact_key[generated])
        for index, name in zip(generated, made):
            names[index] = name
    asked = encoded.probe_fact[episodes].astype(np.int64)  # [m, Q]
    width = max(max(len(name) for name in names), int(asked.max(initial=-1)) + 1, 1)
    similar = np.zeros((len(episodes), width, width))
    for index, name in enumerate(names):
        similar[index, : len(name), : len(name)] = _similarity_matrix(name)
    rows = np.arange(len(episodes))[:, None, None, None]
    asked_k = asked[:, :, None, None]  # [m, Q, 1, 1]
    slot_fact = number[:, None, :, :]  # [m, 1, T, K]
    carries_k = (slot_fact == asked_k) & (asked_k >= 0)
    relevance = np.where(
        (slot_fact >= 0) & (asked_k >= 0), similar[rows, np.maximum(asked_k, 0), np.maximum(slot_fact, 0)], 0.0
    ).max(-1)
    carries = carries_k.any(-1) & arrays.valid[episodes][:, None, :]
    version = np.where(carries_k, fact_pair[:, None, :, :], -1).max(-1).astype(np.int64)
    probe = encoded.probe_pos[episodes] >= 0
    cutoff = encoded.probe_as_of[episodes].astype(np.int64)
    usable = carries & (np.arange(number.shape[1])[None, None, :] <= cutoff[:, :, None]) & probe[:, :, None]
    last = np.where(usable, np.arange(number.shape[1]), -1).max(-1)
    truth = np.where(last >= 0, np.take_along_axis(version, np.maximum(last, 0)[..., None], -1)[..., 0], -1)
    first, final = _probe_rows(encoded, episodes)
    weight = np.ones(probe.shape) if encoded.probe_weight is None else encoded.probe_weight[episodes]
    history = probe & (encoded.probe_kind[episodes] == probes_lib.HISTORY)
    vindex, n_versions = _history_versions(np.where(usable & history[..., None], version, -1))
    return _Episodes(
        probe=probe,
        asked_at=encoded.probe_pos[episodes].astype(np.int64),
        relevance=_over_probe(relevance, first, final, np.maximum),  # the best over the probe's facts
        carries=carries,
        usable=usable,
        version=version,
        truth=truth,
        importance=encoded.priority64[episodes],
        base_cost=track_costs[episodes].astype(np.int64),
        carries_probe=_over_probe(carries, first, final, np.logical_or),
        first=first,
        last=final,
        weight=np.where(weight > 0, weight, 1.0),
        history=history,
        vindex=vindex,
        n_versions=n_versions,
    )


def _probe_rows(encoded, episodes: np.ndarray) -> tuple:
    """(first, last) [m, Q] int64: the rows of each row's probe (adjacent rows with one ``probe_group``; a row
    without one is a probe of its own)."""
    n_rows = encoded.probe_pos.shape[1]
    rows = np.arange(n_rows)
    group = None if encoded.probe_group is None else encoded.probe_group[episodes].astype(np.int64)
    group = (
        np.broadcast_to(-1 - rows, (len(episodes), n_rows)) if group is None else np.where(group >= 0, group, -1 - rows)
    )
    starts = np.ones(group.shape, bool)
    starts[:, 1:] = group[:, 1:] != group[:, :-1]
    ends = np.ones(group.shape, bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, rows, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, rows, n_rows)[:, ::-1], axis=1)[:, ::-1]
    return first.astype(np.int64), last.astype(np.int64)


def _over_probe(table: np.ndarray, first: np.ndarray, last: np.ndarray, combine) -> np.ndarray:
    """``table`` ([m, Q, ...]) with each row's value combined (``combine``: np.maximum, np.logical_or) over the
    rows of its probe; a one-fact probe's row is unchanged."""
    out = table.copy()
    for shift in range(1, int((last - first).max(initial=0)) + 1):
        same = (first[:, shift:] == first[:, :-shift]).reshape(first[:, shift:].shape + (1,) * (table.ndim - 2))
        ahead, behind = out[:, :-shift].copy(), out[:, shift:].copy()
        out[:, :-shift] = np.where(same, combine(ahead, table[:, shift:]), ahead)
        out[:, shift:] = np.where(same, combine(behind, table[:, :-shift]), behind)
    return out


def _history_versions(version: np.ndarray) -> tuple:
    """(vindex [m, Q, T] int32, n_versions [m, Q] int64) from ``version`` ([m, Q, T], the version of each slot a
    history row's reader may use, -1 elsewhere): the distinct versions of a row numbered 0.. (any order)."""
    m, n_rows, _ = version.shape
    vindex = np.full(version.shape, -1, np.int32)
    if not (version >= 0).any():
        return vindex, np.zeros((m, n_rows), np.int64)
    span = int(version.max()) + 1
    row = np.arange(m * n_rows, dtype=np.int64).reshape(m, n_rows, 1)
    used = version >= 0
    key = (row * span + version)[used]
    unique, inverse = np.unique(key, return_inverse=True)
    row_of = unique // span
    first_of_row = np.searchsorted(row_of, np.arange(m * n_rows))
    vindex[used] = (inverse - first_of_row[np.broadcast_to(row, version.shape)[used]]).astype(np.int32)
    return vindex, np.bincount(row_of, minlength=m * n_rows).reshape(m, n_rows).astype(np.int64)


def delta_bytes(field_value, field_present, field_frag_len, parent) -> np.ndarray:
    """[..., T] bytes of the delta each slot would hold against its ``parent`` slot ([..., T], -1: none, 0 out),
    by the byte model (SEMANTICS §2, wpbjax.state.store.merge_delta). Field arrays [..., T, F]."""
    base = np.maximum(parent, 0)
    old = np.take_along_axis(field_value, base[..., None], -2)
    changed = field_present & (field_value != old)
    n_fields = changed.sum(-1)
    fragments = np.where(changed, field_frag_len, 0).sum(-1)
    cost = EMPTY_DELTA_BYTES + fragments + 2 * np.maximum(n_fields - 1, 0) + INDEX_BYTES
    return np.where(parent >= 0, cost, 0).astype(np.int64)


# --- Answering every probe of a block of runs ----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Ranked:
    """The slots of each probe in the retriever's order ([m, Q, T], best first), and the episode tables in it.
    A record's score depends only on its base step (relevance, importance, and recency from the step's
    time), so one order per probe serves every run; a run retrieves the first K of its present records."""

    order: np.ndarray  # [m, Q, T] slot at each rank
    carries: np.ndarray  # [m, Q, T] bool  tables.carries in that order
    carries_probe: np.ndarray  # [m, Q, T] bool
    usable: np.ndarray  # [m, Q, T] bool
    base_cost: np.ndarray  # [m, Q, T] int64


def _rank(tables: _Episodes, retriever: Retriever) -> _Ranked:
    n_steps = tables.base_cost.shape[1]
    slots = np.arange(n_steps)
    age = np.clip(tables.asked_at[:, :, None] - slots, 0, n_steps)  # later slots are never present
    recency = (retriever.decay ** np.arange(n_steps + 1, dtype=np.float64))[age]
    score = (
        retriever.w_rel * tables.relevance
        + retriever.w_rec * recency
        + retriever.w_imp * tables.importance[:, None, :]
        + TIE_BREAK * slots
    )
    order = np.argsort(-score, axis=-1, kind="stable").astype(np.int32)
    at = lambda table: np.take_along_axis(table, order, -1)  # noqa: E731
    return _Ranked(
        order=order,
        carries=at(tables.carries),
        carries_probe=at(tables.carries_probe),
        usable=at(tables.usable),
        base_cost=at(np.broadcast_to(tables.base_cost[:, None, :], order.shape)),
    )


def _answer(tables: _Episodes, ranked: _Ranked, left_at, written_at, parent, delta_cost, top_k: tuple) -> dict:
    """Per probe of each run ([m, B, Q], with a last axis over K where it depends on K): the answer (a
    version, -1 abstain) and what was retrieved. History arrays [m, B, T] (``written_at`` None: each slot's
    own step; ``delta_cost`` [m, B, T] bytes of each delta slot, None if no run holds a delta)."""
    n_episodes, n_runs, n_steps = left_at.shape
    order = ranked.order[:, None]  # [m, 1, Q, T]
    asked_at = tables.asked_at[:, None, :, None]  # [m, 1, Q, 1]
    # One flat index [m, B, Q, T] serves every gather of a run's [T] table into the probes' order (a plain
    # take: cheaper than take_along_axis building its broadcast index again for each table)
    flat = (np.arange(n_episodes * n_runs).reshape(n_episodes, n_runs, 1, 1) * n_steps + order).ravel()
    shape = (n_episodes, n_runs) + order.shape[2:]
    in_order = lambda table: np.take(np.asarray(table).ravel(), flat).reshape(shape)  # noqa: E731 [m, B, T] -> [m, B, Q, T]
    written = order if written_at is None else in_order(written_at)
    present = (written <= asked_at) & (asked_at < in_order(left_at))
    base = present if delta_cost is None else present & (in_order(parent) < 0)  # no run holds a delta: all bases
    rank = np.cumsum(base, axis=-1, dtype=np.int32)
    n_records = rank[..., -1]
    if delta_cost is None:
        newest, size = np.where(ranked.usable[:, None], order, -1), ranked.base_cost[:, None]
    else:  # records with deltas: a record answers with its newest usable item and costs all its items' bytes
        newest, size = _records(tables, left_at, written_at, parent, delta_cost, order, base)
    version = tables.version[:, None]  # [m, 1, Q, T] by slot

    def found(slot: np.ndarray) -> np.ndarray:  # the version a slot index holds; -1 for no slot
        by_slot = np.broadcast_to(version, slot.shape[:-1] + (n_steps,))
        return np.where(slot >= 0, np.take_along_axis(by_slot, np.maximum(slot, 0), -1), -1)

    asked = _HistoryReader(tables, ranked, left_at, written_at, parent, delta_cost is not None)
    answers, relevant, bytes_read, versions = [], [], [], []
    for k in top_k:
        retrieved = base & (rank <= k)
        answers.append(np.where(retrieved, newest, -1).max(-1))
        relevant.append((retrieved & ranked.carries_probe[:, None]).sum(-1, dtype=np.int64))
        bytes_read.append(np.where(retrieved, size, 0).sum(-1, dtype=np.int64))
        versions.append(asked.found(retrieved))
    whole = np.where(base, newest, -1).max(-1)
    first = np.argmax(base, axis=-1)[..., None]
    carries = np.broadcast_to(ranked.carries_probe[:, None], base.shape)
    top1_other = (n_records > 0) & ~np.take_along_axis(carries, first, -1)[..., 0]
    return dict(
        answer=found(np.stack(answers, -1)),
        whole_answer=found(whole[..., None])[..., 0],
        n_records=n_records,
        top1_other=top1_other,
        relevant=np.stack(relevant, -1),
        bytes_read=np.stack(bytes_read, -1),
        retrieved=np.minimum(np.array(top_k), n_records[..., None]),
        versions=None if asked.pairs is None else np.stack(versions, -1),
        whole_versions=asked.found(base),
    )


class _HistoryReader:
    """How many of its versions each history row's reader finds in what is retrieved: every item (a base or a
    live delta of it) of a retrieved record that carries the fact at or before the step counts its version.
    Worked in the retriever's order, on the (episode, row) pairs of history rows only (none: nothing to do)."""

    def __init__(self, tables: _Episodes, ranked: _Ranked, left_at, written_at, parent, with_deltas: bool):
        self.pairs = np.nonzero(tables.history)  # ([P], [P]) episode and row of each history row
        if not self.pairs[0].size:
            self.pairs = None
            return
        episode, row = self.pairs
        order = ranked.order[episode, row]  # [P, T]
        vindex = np.take_along_axis(tables.vindex[episode, row], order, -1)
        width = max(int(tables.n_versions[episode, row].max(initial=0)), 1)
        self.one_hot = (vindex[..., None] == np.arange(width)).astype(np.float32)  # [P, T, V] in order
        self.record_rank = None  # without deltas each present item is its own record
        if with_deltas:  # the rank of the record each ranked item is read with (-1: none)
            slots = np.arange(left_at.shape[-1])
            written = slots if written_at is None else written_at[episode]
            asked_at = tables.asked_at[episode, row][:, None, None]
            present = (written <= asked_at) & (asked_at < left_at[episode])  # [P, B, T] by slot
            is_delta = parent[episode] >= 0
            of = np.maximum(parent[episode], 0)
            base = present & ~is_delta
            live = present & is_delta & np.take_along_axis(base, of, -1)
            record = np.where(base, slots, np.where(live, of, -1))
            rank_of = np.broadcast_to(np.argsort(order, axis=-1)[:, None], present.shape)  # each slot's rank
            record_rank = np.where(record >= 0, np.take_along_axis(rank_of, np.maximum(record, 0), -1), -1)
            self.record_rank = np.take_along_axis(record_rank, np.broadcast_to(order[:, None], present.shape), -1)

    def found(self, retrieved_in_order: np.ndarray) -> np.ndarray | None:
        """[P, B] versions found, from the records retrieved ([m, B, Q, T] in the retriever's order)."""
        if self.pairs is None:
            return None
        read = retrieved_in_order[self.pairs[0], :, self.pairs[1]]  # [P, B, T]
        if self.record_rank is not None:
            read = (self.record_rank >= 0) & np.take_along_axis(read, np.maximum(self.record_rank, 0), -1)
        hits = np.matmul(read.astype(np.float32), self.one_hot)  # [P, B, V]
        return (hits > 0).sum(-1, dtype=np.int64)


def _records(tables: _Episodes, left_at, written_at, parent, delta_cost, order, base_in_order) -> tuple:
    """(newest usable item, bytes) of each record ([m, B, Q, T] in the retriever's order) where deltas
    join their base item: a delta counts while it and its base are present."""
    n_steps = left_at.shape[-1]
    slots = np.arange(n_steps)
    written = slots if written_at is None else written_at[:, :, None, :]
    asked_at = tables.asked_at[:, None, :, None]
    present = (written <= asked_at) & (asked_at < left_at[:, :, None, :])  # [m, B, Q, T] by slot
    is_delta = (parent >= 0)[:, :, None, :]
    base = present & ~is_delta
    of = np.broadcast_to(np.maximum(parent, 0)[:, :, None, :], present.shape)
    live = present & is_delta & np.take_along_axis(base, of, -1)  # deltas of a present base
    usable = tables.usable[:, None]
    newest = np.where(base & usable, slots, -1)
    size = np.where(base, tables.base_cost[:, None, None, :], 0)
    where = np.nonzero(live)
    record = where[:3] + (of[where],)
    np.add.at(size, record, np.broadcast_to(delta_cost[:, :, None, :], present.shape)[where])
    useful = np.nonzero(live & usable)
    np.maximum.at(newest, useful[:3] + (of[useful],), slots[useful[3]])
    return np.take_along_axis(newest, order, -1), np.take_along_axis(size, order, -1)


def _row_results(tables: _Episodes, answers: dict) -> dict:
    """Per row (asked fact) of each run: ``right``, ``answered`` ([m, B, Q, nK] bool) and ``whole_right``
    ([m, B, Q]: the whole store answers it right) from :func:`_answer`. A history row is right when every
    version up to its step is found (and answered when one is)."""
    truth = tables.truth[:, None, :, None]
    right = answers["answer"] == truth
    answered = answers["answer"] >= 0
    whole_right = answers["whole_answer"] == tables.truth[:, None, :]
    if answers["versions"] is not None:  # [P, B, nK] of the history rows (episode, row)
        episode, row = np.nonzero(tables.history)
        wanted = tables.n_versions[episode, row][:, None]
        right[episode, :, row] = answers["versions"] == wanted[..., None]
        answered[episode, :, row] = answers["versions"] > 0
        whole_right[episode, :, row] = answers["whole_versions"] == wanted
    return dict(right=right, answered=answered, whole_right=whole_right)


ROW_RESULTS = ("right", "answered", "whole_right", "top1_other", "with_records", "relevant", "retrieved", "bytes_read")


def _count(tables: _Episodes, rows: dict, oracle_right: np.ndarray) -> dict:
    """[m, B, nK] counts (COUNTS: int64, ``credit`` float64) of the probes from their rows' results (``rows``:
    ROW_RESULTS, [m, B, Q, nK] or [m, B, Q]; ``oracle_right`` [m, Q, nK]). A probe is right when every fact is;
    its credit is the weighted share of its facts answered right; a wrong answerable probe is a memory miss
    when the whole store gets one of its facts wrong too, else a retrieval miss; the rest (abstained, stale,
    distractor, retrieved records and bytes) as for a one-fact probe, over the probe's facts."""
    real = tables.probe[:, None, :, None]  # [m, 1, Q, 1]
    shape = rows["right"].shape
    lead = real & (tables.first == np.arange(tables.first.shape[1]))[:, None, :, None]  # one row per probe
    full = lambda table: np.broadcast_to(table if table.ndim == 4 else table[..., None], shape)  # noqa: E731

    def over(values):  # [m, B, Q, nK] the sum of ``values`` over the rows of each row's probe
        running = np.cumsum(full(values), axis=2)
        at = lambda index: np.take_along_axis(running, np.broadcast_to(index[:, None, :, None], shape), 2)  # noqa: E731
        before = np.where(full(tables.first[:, None, :, None] > 0), at(np.maximum(tables.first - 1, 0)), 0)
        return at(tables.last) - before

    every = lambda mask: over(real & ~full(mask)) == 0  # noqa: E731  every real row of the probe
    some = lambda mask: over(real & full(mask)) > 0  # noqa: E731
    answerable_row = real & (tables.truth >= 0)[:, None, :, None]
    right = every(rows["right"])
    answerable = some(answerable_row)
    wrong = answerable & ~right  # a probe with nothing to answer is always right (nothing can be read for it)
    memory_miss = wrong & some(answerable_row & ~full(rows["right"]) & ~full(rows["whole_right"]))
    abstained = every(~rows["answered"])
    with_retrieval = answerable & full(rows["with_records"])
    oracle = every(oracle_right[:, None])
    weight = tables.weight[:, None, :, None]
    credit = _ratio(over(np.where(real & full(rows["right"]), weight, 0.0)), over(np.where(real, weight, 0.0)))
    total = lambda mask: (lead & mask).sum(2, dtype=np.int64)  # noqa: E731  over probes
    counted = lambda values: np.where(lead, values, 0).sum(2, dtype=values.dtype)  # noqa: E731
    return dict(
        n_probes=total(full(real)),
        n_answerable=total(answerable),
        n_right=total(right),
        n_stale=total(wrong & some(answerable_row & full(rows["answered"]) & ~full(rows["right"]))),
        n_abstained=total(abstained),
        n_right_abstentions=total(abstained & ~answerable),
        n_memory_miss=total(memory_miss),
        n_retrieval_miss=total(wrong & ~memory_miss),
        n_distractor=total(with_retrieval & every(rows["top1_other"])),
        n_with_retrieval=total(with_retrieval),
        n_relevant=counted(np.where(answerable, full(rows["relevant"]), 0)),
        n_retrieved=counted(np.where(answerable, full(rows["retrieved"]), 0)),
        retrieved_bytes=counted(full(rows["bytes_read"])),
        n_writer_errors=total(~right & oracle),
        n_right_no_memory=total(~answerable),
        n_right_oracle=total(oracle),
        n_facts=counted(over(full(real).astype(np.int64))),
        credit=counted(credit),
    )


def _oracle_history(tables: _Episodes, valid: np.ndarray) -> tuple:
    """(left_at, parent) [m, 1, T] of oracle memory: every step stored at its own step, never evicted."""
    left = np.where(valid, STILL_HELD, -1)[:, None, :]
    return left, np.full(left.shape, -1, np.int32)


def read_counts(
    history: dict, encoded, episodes, track_costs: np.ndarray, retriever: Retriever = Retriever(), field_arrays=None
) -> dict:
    """Exact read counts (``COUNTS``) of every run: ``history`` holds ``left_at``, ``parent`` and optionally
    ``written_at`` ([n, B, T] each: :class:`wpbjax.scoring.metrics.Counts` fields of n runs per budget) of runs on
    the episodes ``episodes`` ([n] indices into ``encoded``, which has probes); ``track_costs``: [N, T] the
    runs' write costs (``encoded.track_costs(track)``). Returns ``{name: [n, B, nK] int64}``, K as
    ``retriever.top_k``."""
    episodes = np.asarray(episodes)
    # What a store answers depends on its history alone, and runs of one episode often keep the same
    # history (budgets the episode never fills; a policy that keeps nothing): each is read once
    distinct, copy_of = _distinct_runs(history)
    counts = _read_counts(distinct, encoded, episodes, track_costs, retriever)
    return {name: np.take_along_axis(value, copy_of[..., None], 1) for name, value in counts.items()}


def _distinct_runs(history: dict) -> tuple:
    """(history with the distinct runs of each episode, [n, D] each; copy_of [n, B] int64: the run of that
    history holding run b's store). ``history``: HISTORY_FIELDS [n, B, T]. D is the most distinct runs any
    episode has; an episode with fewer repeats its first run in the columns it does not use."""
    fields = {name: np.asarray(history[name]) for name in HISTORY_FIELDS if history.get(name) is not None}
    n, n_runs, n_steps = fields["left_at"].shape
    first_equal = np.empty((n, n_runs), np.int64)  # the first run with the same history
    per_chunk = max(DEDUPE_ELEMENTS // max(n_runs * n_runs * n_steps, 1), 1)
    for lo in range(0, n, per_chunk):
        part = slice(lo, lo + per_chunk)
        same = np.ones((min(lo + per_chunk, n) - lo, n_runs, n_runs), bool)
        for table in fields.values():
            same &= (table[part, :, None, :] == table[part, None, :, :]).all(-1)
        first_equal[part] = np.argmax(same, axis=2)
    is_first = first_equal == np.arange(n_runs)
    position = np.cumsum(is_first, axis=1) - 1  # a first run's column among its episode's distinct runs
    width = int(is_first.sum(1).max(initial=1))
    source = np.argsort(~is_first, axis=1, kind="stable")[:, :width]  # the distinct runs, in run order
    source = np.where(np.arange(width) < is_first.sum(1, keepdims=True), source, 0)
    copy_of = np.take_along_axis(position, first_equal, 1)
    return {name: np.take_along_axis(table, source[..., None], 1) for name, table in fields.items()}, copy_of


def _read_counts(history: dict, encoded, episodes: np.ndarray, track_costs: np.ndarray, retriever: Retriever) -> dict:
    """:func:`read_counts` of every run of ``history`` as given."""
    left_at, parent = history["left_at"], history["parent"]
    written_at = history.get("written_at")
    n, n_budgets, n_steps = left_at.shape
    n_probes = encoded.probe_pos.shape[1]
    per_block = max(RUN_ELEMENTS // max(n_budgets * max(n_probes, 1) * n_steps, 1), 1)
    arrays = encoded.arrays
    out: dict = {}
    for lo in range(0, n, per_block):
        block = slice(lo, min(lo + per_block, n))
        index = episodes[block]
        tables = _episode_tables(encoded, index, track_costs)
        block_parent = np.asarray(parent[block])
        costs = None
        if (block_parent >= 0).any():
            fields = [
                np.broadcast_to(
                    np.asarray(getattr(arrays, name))[index][:, None],
                    (len(index), n_budgets) + np.shape(getattr(arrays, name))[1:],
                )
                for name in ("field_value", "field_present", "field_frag_len")
            ]
            costs = delta_bytes(*fields, block_parent)
        runs = dict(
            left_at=np.asarray(left_at[block]),
            parent=block_parent,
            costs=costs,
            written_at=None if written_at is None else np.asarray(written_at[block]),
        )
        # Probes in time order, a few at a time: a probe after step t reads only slots <= t (later ones are
        # never present yet), so each group works on the steps up to its last probe (about 5/8 of T x Q). Each
        # row's results go back to its place: a probe's facts are counted together after the last group
        by_time = np.argsort(tables.asked_at, axis=1, kind="stable")
        results: dict = {}
        for group in np.array_split(by_time, min(PROBE_GROUPS, by_time.shape[1]), axis=1):
            for name, value in _group_results(tables, group, runs, arrays.valid[index], retriever).items():
                axis = 1 if name == "oracle_right" else 2
                if name not in results:
                    results[name] = np.zeros(
                        value.shape[:axis] + (by_time.shape[1],) + value.shape[axis + 1 :], value.dtype
                    )
                where = group.reshape(
                    group.shape[:1] + (1,) * (axis - 1) + group.shape[1:] + (1,) * (value.ndim - axis - 1)
                )
                np.put_along_axis(results[name], np.broadcast_to(where, value.shape), value, axis)
        oracle_right = results.pop("oracle_right")
        for name, value in _count(tables, results, oracle_right).items():
            out.setdefault(name, []).append(value)
    return {name: np.concatenate(parts) for name, parts in out.items()}


def _group_results(tables: _Episodes, group: np.ndarray, runs: dict, valid: np.ndarray, retriever: Retriever) -> dict:
    """The row results (ROW_RESULTS, [m, B, G, ...], and ``oracle_right`` [m, G, nK]) of the rows ``group``
    ([m, G] indices into the Q axis) of a block, on the steps up to their last probe. ``runs``: the block's
    history (``left_at``, ``parent``, ``written_at``, delta ``costs``: [m, B, T] or None); ``valid``: [m, T]."""
    steps = max(int(np.take_along_axis(tables.asked_at, group, 1).max(initial=-1)) + 1, 1)
    probes = lambda table: np.take_along_axis(table, group.reshape(group.shape + (1,) * (table.ndim - 2)), 1)  # noqa: E731
    cut = lambda table: None if table is None else table[..., :steps]  # noqa: E731
    sub = _Episodes(
        **{
            field.name: (
                getattr(tables, field.name)[:, :steps]
                if field.name in PER_SLOT
                else probes(cut(getattr(tables, field.name)))
                if getattr(tables, field.name).ndim == 3
                else probes(getattr(tables, field.name))
            )
            for field in dataclasses.fields(_Episodes)
        }
    )
    ranked = _rank(sub, retriever)
    oracle_left, oracle_parent = _oracle_history(sub, valid[:, :steps])
    oracle = _answer(sub, ranked, oracle_left, None, oracle_parent, None, retriever.top_k)
    answers = _answer(
        sub,
        ranked,
        cut(runs["left_at"]),
        cut(runs["written_at"]),
        cut(runs["parent"]),
        cut(runs["costs"]),
        retriever.top_k,
    )
    rows = _row_results(sub, answers)
    return dict(
        rows,
        top1_other=answers["top1_other"],
        with_records=answers["n_records"] > 0,
        relevant=answers["relevant"],
        retrieved=answers["retrieved"],
        bytes_read=answers["bytes_read"],
        oracle_right=_row_results(sub, oracle)["right"][:, 0],
    )


def _ratio(numerator, denominator) -> np.ndarray:
    numerator, denominator = np.broadcast_arrays(np.asarray(numerator, np.float64), np.asarray(denominator, np.float64))
    return np.divide(numerator, denominator, out=np.full(numerator.shape, np.nan), where=denominator != 0)


def columns_from_counts(counts: dict, top_k) -> dict:
    """The ``READ_COLUMNS`` ([n, B, nK]; NaN blank) from :func:`read_counts`' counts."""
    probes, answerable = counts["n_probes"], counts["n_answerable"]
    wrong = probes - counts["n_right"]
    return {
        "top_k": np.broadcast_to(np.asarray(top_k, np.int64), probes.shape),
        "n_probes": probes,
        "read_accuracy": _ratio(counts["n_right"], probes),
        "stale_answer_rate": _ratio(counts["n_stale"], answerable),
        "memory_miss_rate": _ratio(counts["n_memory_miss"], answerable),
        "retrieval_miss_rate": _ratio(counts["n_retrieval_miss"], answerable),
        "distractor_rate": _ratio(counts["n_distractor"], counts["n_with_retrieval"]),
        "abstention_precision": _ratio(counts["n_right_abstentions"], counts["n_abstained"]),
        "abstention_recall": _ratio(counts["n_right_abstentions"], probes - answerable),
        "precision_at_k": _ratio(counts["n_relevant"], counts["n_retrieved"]),
        "retrieved_bytes_per_query": _ratio(counts["retrieved_bytes"], probes),
        "read_accuracy_no_memory": _ratio(counts["n_right_no_memory"], probes),
        "read_accuracy_oracle_memory": _ratio(counts["n_right_oracle"], probes),
        "writer_error_share": _ratio(counts["n_writer_errors"], wrong),
        "read_credit": _ratio(counts["credit"], probes),
        "facts_per_probe": _ratio(counts["n_facts"], probes),
    }


def blank_columns(shape: tuple, top_k) -> dict:
    """The ``READ_COLUMNS`` of runs on episodes without probes: blank, but for ``top_k`` and ``n_probes`` (0)."""
    columns = {name: np.full(shape, np.nan) for name in READ_COLUMNS}
    columns["top_k"] = np.broadcast_to(np.asarray(top_k, np.int64), shape).copy()
    columns["n_probes"] = np.zeros(shape, np.int64)
    return columns


def read_metrics(history: dict, encoded, episodes, track: str, retriever: Retriever = Retriever()) -> dict:
    """The read metrics (``READ_COLUMNS``, each [n, B, nK]) of n x B runs from their store histories.

    ``history``: ``left_at``, ``parent`` (and ``written_at`` for WRITE_PAST policies) as [n, B, T] arrays
    (the :class:`wpbjax.scoring.metrics.Counts` fields of a rollout with history, :func:`wpbjax.simulate.simulate`
    with ``history=True``); ``encoded``: the episode set (with probes: its ``probes`` labels, or
    :func:`wpbjax.episodes.probes.with_default_probes`); ``episodes``: [n] the runs' episodes in it;
    ``track``: whose write costs the retrieved bytes count. Episodes without probes get blank columns."""
    episodes = np.asarray(episodes)
    shape = (len(episodes), np.shape(history["left_at"])[1], len(retriever.top_k))
    if not has_probes(encoded):
        return blank_columns(shape, retriever.top_k)
    has = (encoded.probe_pos[episodes] >= 0).any(1)
    columns = blank_columns(shape, retriever.top_k)
    if has.any():
        chosen = np.flatnonzero(has)
        sub = {name: np.asarray(history[name])[chosen] for name in HISTORY_FIELDS if history.get(name) is not None}
        counts = read_counts(sub, encoded, episodes[chosen], encoded.track_costs(track), retriever)
        for name, value in columns_from_counts(counts, retriever.top_k).items():
            columns[name][chosen] = value
    return columns
