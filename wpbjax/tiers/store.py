"""The tier store (docs/tiers.md): a journal and a checkpoint, each with its own byte budget; every tier rule.

A tiered run keeps one TierStore per run; every tier rule is here (``tier_apply``, ``consolidate``).

* The **checkpoint** is the indexed, read-path store: an item keyed by step s costs ``write_cost[s]``
  (SEMANTICS §2, its 16 index bytes included), under the checkpoint budget (:func:`fits`).
* The **journal** is the append-only audit trail: a raw record of step s costs ``journal_cost`` =
  ``write_cost[s] - INDEX_BYTES`` (it is scanned, never indexed, so it stores no index entry), under the
  journal budget. Nothing leaves the journal: a record that does not fit is rejected.
* A checkpoint add of a slot the journal held before this step is a **promote** (rebuilt from its record); a
  **demote** moves a checkpoint item to the journal (freeing its checkpoint bytes; journal bytes only if the
  journal lacks the record) and is rejected, the item staying, when the journal cannot take it: demotion
  is never deletion. A **delete** drops a checkpoint item outright (its history is lost unless journaled).
* Within a step: the journal append of the step, then deletes, demotes, then checkpoint adds, in order.

The one-tier store (:mod:`wpbjax.state.store`) knows nothing of tiers: a run without tiers compiles exactly it.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.state.store import INDEX_BYTES, STILL_HELD, fits, set_where


def journal_cost(write_cost) -> jax.Array:
    """Bytes of a journal record of a step whose checkpoint item costs ``write_cost`` (no index entry)."""
    return jnp.maximum(write_cost - INDEX_BYTES, 1)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TierStore:
    in_checkpoint: jax.Array  # [T] bool  the checkpoint holds step s's item
    in_journal: jax.Array  # [T] bool  the journal holds step s's raw record
    checkpoint_used: jax.Array  # []  int32 checkpoint bytes in use
    journal_used: jax.Array  # []  int32 journal bytes in use
    checkpoint_added_at: jax.Array  # [T] int32 step its (last) checkpoint interval began; STILL_HELD: never held
    checkpoint_left_at: jax.Array  # [T] int32 step that item left (delete or demote); STILL_HELD: not left
    journal_added_at: jax.Array  # [T] int32 step the record entered the journal; STILL_HELD: never
    journal_adds: jax.Array  # []  int32 accepted journal records (appends and demotes that needed bytes)
    checkpoint_adds: jax.Array  # []  int32 accepted checkpoint adds (writes and promotes)
    promotes: jax.Array  # []  int32 ... of them, promotes (the slot was in the journal)
    demotes: jax.Array  # []  int32 accepted demotes
    deletes: jax.Array  # []  int32 accepted deletes
    rejected: jax.Array  # []  int32 actions the store refused (budget, absent item, duplicate)
    bytes_written: jax.Array  # []  int32 bytes of every accepted add, both tiers
    scanned: jax.Array  # []  int32 checkpoint items examined by consolidation passes


def tier_empty(n_steps: int) -> TierStore:
    zero, never = jnp.zeros((), jnp.int32), jnp.full(n_steps, STILL_HELD, jnp.int32)
    none = jnp.zeros(n_steps, bool)
    return TierStore(
        in_checkpoint=none,
        in_journal=none,
        checkpoint_used=zero,
        journal_used=zero,
        checkpoint_added_at=never,
        checkpoint_left_at=never,
        journal_added_at=never,
        journal_adds=zero,
        checkpoint_adds=zero,
        promotes=zero,
        demotes=zero,
        deletes=zero,
        rejected=zero,
        bytes_written=zero,
        scanned=zero,
    )


def _count(value, condition) -> jax.Array:
    return value + condition.astype(jnp.int32)


def _journal(store: TierStore, episode: EpisodeBatch, slot, pos, budget, asked) -> tuple:
    """Append step ``slot``'s record to the journal where ``asked``: (store, it is in the journal now)."""
    safe = jnp.maximum(slot, 0)
    cost = journal_cost(episode.write_cost[safe])
    already = store.in_journal[safe]
    ok = asked & (slot >= 0) & (slot <= pos) & episode.valid[safe] & ~already & fits(store.journal_used, cost, budget)
    store = dataclasses.replace(
        store,
        in_journal=set_where(store.in_journal, slot, True, ok),
        journal_used=store.journal_used + jnp.where(ok, cost, 0),
        journal_added_at=set_where(store.journal_added_at, slot, pos, ok),
        journal_adds=_count(store.journal_adds, ok),
        bytes_written=store.bytes_written + jnp.where(ok, cost, 0),
    )
    return store, ok | (asked & (slot >= 0) & already)


def _leave_checkpoint(store: TierStore, episode: EpisodeBatch, slot, pos, ok) -> TierStore:
    safe = jnp.maximum(slot, 0)
    return dataclasses.replace(
        store,
        in_checkpoint=set_where(store.in_checkpoint, slot, False, ok),
        checkpoint_used=store.checkpoint_used - jnp.where(ok, episode.write_cost[safe], 0),
        checkpoint_left_at=set_where(store.checkpoint_left_at, slot, pos, ok),
    )


def _delete(store: TierStore, episode: EpisodeBatch, slot, pos) -> TierStore:
    """Delete checkpoint item ``slot`` (-1: no action): accepted iff it is present."""
    asked = slot >= 0
    ok = asked & store.in_checkpoint[jnp.maximum(slot, 0)]
    store = _leave_checkpoint(store, episode, slot, pos, ok)
    return dataclasses.replace(store, deletes=_count(store.deletes, ok), rejected=_count(store.rejected, asked & ~ok))


def _demote(store: TierStore, episode: EpisodeBatch, slot, pos, journal_budget) -> TierStore:
    """Demote checkpoint item ``slot`` to the journal: accepted iff it is present and the journal holds its
    record or takes it now (else nothing changes: demotion is never deletion)."""
    asked = (slot >= 0) & store.in_checkpoint[jnp.maximum(slot, 0)]
    store, journaled = _journal(store, episode, slot, pos, journal_budget, asked)
    store = _leave_checkpoint(store, episode, slot, pos, journaled)
    return dataclasses.replace(
        store, demotes=_count(store.demotes, journaled), rejected=_count(store.rejected, (slot >= 0) & ~journaled)
    )


def _add(store: TierStore, episode: EpisodeBatch, slot, pos, checkpoint_budget) -> TierStore:
    """Add step ``slot``'s item (``slot <= pos``; -1: no action) to the checkpoint: accepted iff it is a real
    step not held there and ``checkpoint_used + write_cost[slot] <= checkpoint_budget``; a promote when the
    journal held its record before this step."""
    asked, safe = slot >= 0, jnp.maximum(slot, 0)
    cost = episode.write_cost[safe]
    ok = (
        asked
        & (slot <= pos)
        & episode.valid[safe]
        & ~store.in_checkpoint[safe]
        & fits(store.checkpoint_used, cost, checkpoint_budget)
    )
    return dataclasses.replace(
        store,
        in_checkpoint=set_where(store.in_checkpoint, slot, True, ok),
        checkpoint_used=store.checkpoint_used + jnp.where(ok, cost, 0),
        checkpoint_added_at=set_where(store.checkpoint_added_at, slot, pos, ok),
        checkpoint_left_at=set_where(store.checkpoint_left_at, slot, STILL_HELD, ok),
        checkpoint_adds=_count(store.checkpoint_adds, ok),
        promotes=_count(store.promotes, ok & store.in_journal[safe] & (store.journal_added_at[safe] < pos)),
        bytes_written=store.bytes_written + jnp.where(ok, cost, 0),
        rejected=_count(store.rejected, asked & ~ok),
    )


def tier_apply(store: TierStore, action, episode: EpisodeBatch, pos, checkpoint_budget, journal_budget) -> TierStore:
    """Apply one :class:`wpbjax.tiers.actions.TierAction` at step ``pos`` (order: journal append, deletes, demotes,
    checkpoint adds; each under its rule above; a refused one changes nothing)."""
    store, _ = _journal(store, episode, jnp.asarray(pos, jnp.int32), pos, journal_budget, action.journal)
    store = dataclasses.replace(store, rejected=_count(store.rejected, action.journal & ~store.in_journal[pos]))
    store = _each(store, action.delete, lambda store, slot: _delete(store, episode, slot, pos))
    store = _each(store, action.demote, lambda store, slot: _demote(store, episode, slot, pos, journal_budget))
    return _each(store, action.add, lambda store, slot: _add(store, episode, slot, pos, checkpoint_budget))


def _each(store: TierStore, slots, apply_one) -> TierStore:
    """``apply_one`` for each of ``slots`` ([K]) in order: unrolled for a short list, a loop for a long one
    (each unrolled copy is compiled anew, so a deferred flush's long list unrolled compiles far too slowly:
    docs/performance.md, "Figures behind choices in the code")."""
    if slots.shape[0] <= 2:
        for slot in slots:
            store = apply_one(store, slot)
        return store
    return jax.lax.fori_loop(0, slots.shape[0], lambda index, store: apply_one(store, slots[index]), store)


def _newest_first_prefix(candidate, cost, used, budget) -> jax.Array:
    """[T] bool: the candidates accepted newest first, as long as each fits after every newer one
    (the first that does not fit stops the pass: a prefix, so it is one reversed cumsum)."""
    running = jnp.cumsum(jnp.where(candidate, cost, 0)[::-1])[::-1]
    return candidate & fits(used, running, budget)


def consolidate(
    store: TierStore, episode: EpisodeBatch, fact: jax.Array, pos, checkpoint_budget, journal_budget
) -> TierStore:
    """One consolidation pass after step ``pos`` (O(T) over the slots, inside the scan; docs/tiers.md).

    ``fact``: [T] int32 the fact each step carries (-1: none; < T*K). The newest step of each fact held in
    either tier is its distilled fact: (1) every other checkpoint item of that fact (an older version or a
    duplicate) is demoted (journal bytes where its record is missing, newest first while they fit; the
    rest stay); (2) each distilled fact in the journal but not the checkpoint is promoted, newest first,
    while the checkpoint budget allows (:func:`_newest_first_prefix`). Each checkpoint item scanned counts
    one dedupe lookup (``scanned``)."""
    n_steps = fact.shape[0]
    slots = jnp.arange(n_steps, dtype=jnp.int32)
    held = (store.in_checkpoint | store.in_journal) & (slots <= pos) & (fact >= 0)
    n_facts = episode.fact_key.shape[0] * episode.fact_key.shape[1]
    newest = jax.ops.segment_max(jnp.where(held, slots, -1), jnp.where(held, fact, n_facts), num_segments=n_facts + 1)
    distilled = held & (newest[jnp.where(held, fact, n_facts)] == slots)
    # (1) demote superseded checkpoint items
    superseded = store.in_checkpoint & (fact >= 0) & ~distilled
    needs_bytes = superseded & ~store.in_journal
    record_cost = journal_cost(episode.write_cost)
    journaled = _newest_first_prefix(needs_bytes, record_cost, store.journal_used, journal_budget)
    demoted = superseded & (store.in_journal | journaled)
    new_bytes = jnp.where(journaled, record_cost, 0).sum(dtype=jnp.int32)
    checkpoint_used = store.checkpoint_used - jnp.where(demoted, episode.write_cost, 0).sum(dtype=jnp.int32)
    # (2) promote distilled facts missing from the checkpoint
    missing = distilled & store.in_journal & ~(store.in_checkpoint & ~demoted)
    promoted = _newest_first_prefix(missing, episode.write_cost, checkpoint_used, checkpoint_budget)
    promoted_bytes = jnp.where(promoted, episode.write_cost, 0).sum(dtype=jnp.int32)
    in_checkpoint = (store.in_checkpoint & ~demoted) | promoted
    n_promoted = promoted.sum(dtype=jnp.int32)
    return dataclasses.replace(
        store,
        in_checkpoint=in_checkpoint,
        in_journal=store.in_journal | journaled,
        checkpoint_used=checkpoint_used + promoted_bytes,
        journal_used=store.journal_used + new_bytes,
        checkpoint_left_at=jnp.where(demoted, pos, jnp.where(promoted, STILL_HELD, store.checkpoint_left_at)),
        checkpoint_added_at=jnp.where(promoted, pos, store.checkpoint_added_at),
        journal_added_at=jnp.where(journaled, pos, store.journal_added_at),
        journal_adds=store.journal_adds + journaled.sum(dtype=jnp.int32),
        checkpoint_adds=store.checkpoint_adds + n_promoted,
        promotes=store.promotes + n_promoted,
        demotes=store.demotes + demoted.sum(dtype=jnp.int32),
        bytes_written=store.bytes_written + new_bytes + promoted_bytes,
        scanned=store.scanned + store.in_checkpoint.sum(dtype=jnp.int32),
    )
