"""The store: the only code that changes memory, and the only place the budget rule lives.

Items are keyed by the position of the step that created them (at most one per step); positions
ascend with ``t``, so slot order is insertion order. ``oldest`` / ``newest`` and a linked list over
the present items keep every query and update O(1) per step. One array, ``held``, says per slot
whether an item is present, whether it is a delta, and what a delta costs, so each check is one
read. An item added at step p enters ``held`` and the links at the start of step p+1 (:func:`flush`;
until then it lives in the ``pending`` scalars and is not counted in ``used``, ``oldest`` or ``newest``),
which lets XLA update those arrays in place and compute the store's decision once.
SEMANTICS §3:

* WRITE is accepted iff ``used + write_cost <= budget`` (and the step has no item yet).
* EXPIRE(slot) is accepted iff the item exists and is older than the current step; it credits
  the item's exact cost.
* MERGE(target) is accepted iff the target is a present *base* item, both observations carry
  equal non-null ``api`` values, the canonical delta is non-empty and ``used + merge_cost <= budget``.
  The last three depend on the episode alone: :func:`quote_merge` prices them once, the policy
  decides with that quote, and the store checks the rest (``actions.merge`` takes only a quote).
* A rejected action changes nothing; the step's other actions still apply.

One extension beyond the published harness (policy zoo): WRITE_PAST(source) writes a buffered earlier
step ``source <= pos`` under the WRITE rule with that step's write cost, keyed by ``source`` (accepted
iff it is a real step with no item yet and ``used + write_cost[source] <= budget``). It is the only way
an item's insertion order can differ from its t order; oldest/newest follow insertion order.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.state.actions import ALL_FEATURES, EMIT_WRITE_PAST, HISTORY, MERGE, OLDEST_ONLY, WRITE, WRITE_PAST, Action

INDEX_BYTES = 16
EMPTY_DELTA_BYTES = 2  # "{}"
HELD_BASE = -1  # ``held`` of a present base item (it costs its step's write cost); 0: no item; > 0: a delta's bytes
STILL_HELD = 2**31 - 1  # ``expired_at`` of a slot whose item never left (history)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class StoreState:
    held: jax.Array  # [T] int32 the item keyed by this step: 0 none, HELD_BASE (-1) a base item
    #           (costs its step's write_cost), > 0 a delta of that many bytes
    #           (a delta costs >= 19)
    parent: jax.Array  # [T] int32 a delta's parent slot (-1 for base items)
    newer: jax.Array  # [T] int32 next newer present item (-1 at the newest)
    older: jax.Array  # [T] int32 next older present item (-1 at the oldest)
    oldest: jax.Array  # []  int32 oldest present item, -1 when empty
    newest: jax.Array  # []  int32 newest present item, -1 when empty
    used: jax.Array  # []  int32 bytes in use (sum of the present items' costs)
    # The item added at the last step, not yet in ``held``, the links, ``used``, ``oldest`` and ``newest``
    # (see ``flush``):
    pending: jax.Array  # []  int32 0 none, > 0 a delta of that many bytes, < 0 a base item of -1 - pending bytes
    pending_parent: jax.Array  # []  int32 ... a delta's parent slot
    # "oldest_only": the oldest item an EXPIRE removed at the last step leaves at the next ``flush`` too
    # (see ``_expire_oldest_at_flush``):
    pending_freed: jax.Array  # []  int32 its bytes (-1: none)
    write_actions: jax.Array  # []  int32 WRITE actions emitted (accepted or not)
    expire_actions: jax.Array  # []  int32 EXPIRE actions emitted
    merge_actions: jax.Array  # []  int32 MERGE actions emitted
    # The store's history, recorded only under the "history" layout (reads, wpbjax.scoring.reads; else None). A
    # slot's item is present after steps written_at .. expired_at - 1; a slot written again (WRITE_PAST
    # after an EXPIRE) keeps only its last interval:
    expired_at: jax.Array | None = None  # [T] int32 step whose EXPIRE removed the slot's item (STILL_HELD: none)
    written_at: jax.Array | None = None  # [T] int32 step that added it, where that can differ from the slot
    #           (WRITE_PAST; None otherwise: the slot itself)

    @property
    def present(self) -> jax.Array:
        """[T] bool: an item keyed by this step exists (whole-array reads; one slot: :func:`holds`)."""
        return self.held != 0

    @property
    def is_delta(self) -> jax.Array:
        """[T] bool: the item is a present merge delta."""
        return self.held > 0


def empty(n_steps: int, features=ALL_FEATURES) -> StoreState:
    """The empty store; with the "history" layout it records each slot's expire (and WRITE_PAST) step."""
    zero, none = jnp.zeros((), jnp.int32), jnp.full((), NONE, jnp.int32)
    links = jnp.full(n_steps, NONE, jnp.int32)
    history = {}
    if HISTORY in features:
        history["expired_at"] = jnp.full(n_steps, STILL_HELD, jnp.int32)
        if EMIT_WRITE_PAST in features:
            history["written_at"] = jnp.arange(n_steps, dtype=jnp.int32)
    return StoreState(
        held=jnp.zeros(n_steps, jnp.int32),
        parent=links,
        newer=links,
        older=links,
        oldest=none,
        newest=none,
        used=zero,
        write_actions=zero,
        expire_actions=zero,
        merge_actions=zero,
        pending=zero,
        pending_parent=none,
        pending_freed=none,
        **history,
    )


def _record_expiry(store: StoreState, slot, pos, ok) -> StoreState:
    """History: the item at ``slot`` left at step ``pos`` (where ``ok``)."""
    if store.expired_at is None:
        return store
    return dataclasses.replace(store, expired_at=set_where(store.expired_at, slot, pos, ok))


def fits(used, cost, budget) -> jax.Array:
    """The budget rule, for every item the store adds (WRITE, MERGE, WRITE_PAST): ``cost`` more bytes
    fit iff ``used + cost <= budget``. Code that tracks bytes outside a StoreState (REINFORCE's
    rollouts) asks here too, so the rule lives in one place."""
    return used + cost <= budget


def write_fits(store: StoreState, episode: EpisodeBatch, pos, budget) -> jax.Array:
    """[] bool: a WRITE of step ``pos`` fits the store as it stands (:func:`fits`)."""
    return fits(store.used, episode.write_cost[pos], budget)


def remaining(store: StoreState, budget) -> jax.Array:
    """``max(budget - used, 0)``: the bytes a policy may still fill."""
    return jnp.maximum(budget - store.used, 0)


def is_empty(store: StoreState) -> jax.Array:
    return store.oldest < 0


def added(store: StoreState) -> jax.Array:
    """[] bool: the last :func:`apply` added an item (it joins ``used`` and the links at the next :func:`flush`)."""
    return store.pending != 0


def holds(store: StoreState, slot) -> jax.Array:
    """[] bool: an item keyed by step ``slot`` is present (False for slot -1)."""
    return (slot >= 0) & (store.held[jnp.maximum(slot, 0)] != 0)


def _item_cost(held, write_cost) -> jax.Array:
    """Bytes of an item from its ``held`` entry and its step's write cost (0 where none)."""
    return jnp.where(held > 0, held, jnp.where(held == HELD_BASE, write_cost, 0))


def cost_of(store: StoreState, episode: EpisodeBatch, slot, deltas: bool = True) -> jax.Array:
    """Bytes of the present item at ``slot`` (0 for slot -1 or no item).

    ``deltas=False`` (static) declares the store holds no deltas (the policy never merges): then the
    item is taken as present and its cost is one read of the (read-only) episode's write costs.
    """
    safe = jnp.maximum(slot, 0)
    if not deltas:
        return jnp.where(slot >= 0, episode.write_cost[safe], 0)
    return jnp.where(slot >= 0, _item_cost(store.held[safe], episode.write_cost[safe]), 0)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class MergeQuote:
    """The episode's side of MERGE(target) at step ``pos`` (see :func:`quote_merge`)."""

    target: jax.Array  # [] int32 the merge target slot (-1: none)
    cost: jax.Array  # [] int32 bytes of the canonical delta (18 if it is empty)
    acceptable: jax.Array  # [] bool  0 <= target < pos, equal non-null apis, and a non-empty delta


def quote_merge(episode: EpisodeBatch, pos, target) -> MergeQuote:
    """Price MERGE(``target``) at step ``pos``: what depends only on the episode, computed once.

    A policy decides with ``quote.cost`` and emits ``actions.merge(quote, ...)``; the store then
    checks only what depends on the store (the target is a present base item, the delta fits).
    """
    safe = jnp.maximum(target, 0)
    merge_cost, n_fields = merge_delta(episode, pos, safe)
    api = episode.api_id[pos]
    acceptable = (target >= 0) & (target < pos) & (api >= 0) & (episode.api_id[safe] == api) & (n_fields > 0)
    return MergeQuote(target=jnp.asarray(target, jnp.int32), cost=merge_cost, acceptable=acceptable)


def merge_delta(episode: EpisodeBatch, pos, target):
    """Bytes and field count of the canonical delta of step ``pos`` against slot ``target``.

    A field enters the delta iff the incoming observation has the key and ``old.get(key) != new[key]``
    under Python equality (ids compare equal exactly then; an absent old key has the id of null).
    Returns ``(merge_cost, n_fields)``; an empty delta costs ``2 + 16`` = 18.
    """
    changed = episode.field_present[pos] & (episode.field_value[pos] != episode.field_value[target])
    n_fields = changed.sum(dtype=jnp.int32)
    fragments = jnp.where(changed, episode.field_frag_len[pos], 0).sum(dtype=jnp.int32)
    delta_bytes = EMPTY_DELTA_BYTES + fragments + 2 * jnp.maximum(n_fields - 1, 0)
    return delta_bytes + INDEX_BYTES, n_fields


def set_where(array, index, value, condition):
    """``array[index] = value`` where ``condition`` (and ``index >= 0``); O(1). A write not made goes to the
    index one past the end, which the scatter drops: no read of the old value (a gather per run, and one
    more read of ``array`` that XLA must order before the update)."""
    target = jnp.where(condition & (index >= 0), index, array.shape[0])
    return array.at[target].set(value, mode="drop")


def _put_at(array, pos, value, condition):
    """``array[pos] = value`` where ``condition``; ``pos`` is the same for every run of a batch, so
    this is a dynamic-update-slice (in place), not a scatter."""
    return jax.lax.dynamic_update_index_in_dim(array, jnp.where(condition, value, array[pos]), pos, 0)


def flush(store: StoreState, pos, features=ALL_FEATURES) -> StoreState:
    """Add the item added at step ``pos - 1`` to the store: ``held``, the links, ``used``, ``oldest`` and
    ``newest``. Call at the start of step ``pos`` (and once after the last step), before anything reads
    the store.

    Why deferred: XLA updates a carried [runs, T] array in place only if every read of it in the
    iteration is an ancestor of its update; otherwise it copies the whole array every step (O(T)
    per step). Policies read ``held`` and the links before they decide, so these writes come
    first. ``pos - 1`` is the same for every run of a batch: the writes are dynamic-update-slices.
    And the whole decision (the policy's, then the store's checks) ends in one carried value,
    ``pending``: XLA:CPU fuses a cheap computation into each of its consumers, so every scalar that
    the add updated at once would recompute the decision from the start (docs/performance.md).
    """
    slot, pending = jnp.maximum(pos - 1, 0), store.pending
    added = pending != 0
    newest = store.newest
    store = dataclasses.replace(
        store,
        held=_put_at(store.held, slot, jnp.where(pending < 0, HELD_BASE, pending), added),
        used=store.used + jnp.where(pending < 0, -1 - pending, pending),
        oldest=jnp.where(added & (store.oldest < 0), slot, store.oldest),
        newest=jnp.where(added, slot, newest),
        pending=jnp.zeros((), jnp.int32),
    )
    if "merge" in features:
        store = dataclasses.replace(store, parent=_put_at(store.parent, slot, store.pending_parent, pending > 0))
    if "expire" in features and "order" in features:  # chain the item after the previous newest
        store = dataclasses.replace(
            store,
            older=_put_at(store.older, slot, newest, added),
            newer=set_where(store.newer, newest, slot, added),
        )
    elif "fifo" in features or OLDEST_ONLY in features:  # oldest-first only: the forward chain is enough
        store = dataclasses.replace(store, newer=set_where(store.newer, newest, slot, added))
    if _lazy(features):
        # The oldest item an EXPIRE removed at step pos - 1 leaves, after the add: its forward link is then
        # read after the add wrote it (a read XLA must order after the update, so no copy), and it names
        # the added item where the store held only the leaving one.
        left, oldest, newest = store.pending_freed >= 0, store.oldest, store.newest
        emptied = oldest == newest
        next_oldest = jnp.where(emptied, NONE, store.newer[jnp.maximum(oldest, 0)])
        store = _record_expiry(store, oldest, pos - 1, left)
        store = dataclasses.replace(
            store,
            used=store.used - jnp.where(left, store.pending_freed, 0),
            oldest=jnp.where(left, next_oldest, oldest),
            newest=jnp.where(left & emptied, NONE, newest),
            pending_freed=jnp.full((), NONE, jnp.int32),
        )
    return store


def _expire_oldest_at_flush(store: StoreState, episode: EpisodeBatch, slot, pos, deltas: bool) -> tuple:
    """An action's EXPIRE under "oldest_only" (one per action): accepted iff ``slot`` is the oldest item, which then
    leaves at the next :func:`flush` (``pending_freed``), like an added item; the store carries one value
    for it instead of three (``used``, ``oldest``, ``newest``), each of which would recompute the
    decision (see flush). Returns ``(store, the store as the action's main part must see it)``: its bytes
    free, and a slot at or after the leaving one still counted as before the oldest item (a slot between
    it and the next item holds nothing, so "after it" is "at or after the next")."""
    oldest = store.oldest
    ok = (slot >= 0) & (slot == oldest) & (slot < pos)
    freed = jnp.where(ok, cost_of(store, episode, oldest, deltas), 0)
    after = dataclasses.replace(store, used=store.used - freed, oldest=jnp.where(ok, oldest + 1, oldest))
    return dataclasses.replace(store, pending_freed=jnp.where(ok, freed, NONE)), after


def _expire_oldest(store: StoreState, episode: EpisodeBatch, slot, pos, deltas: bool) -> StoreState:
    """EXPIRE under "fifo": accepted iff ``slot`` is the oldest item (then the next oldest is the
    next one stored after it). Reads only arrays this step does not write, so XLA needs no copies."""
    oldest = store.oldest
    ok = (slot >= 0) & (slot == oldest) & (slot < pos)
    # Reads index by ``store.oldest``, not by the policy's ``slot``: an index that depends on the
    # policy (which read the arrays after this step's flush) would make XLA copy them (see flush).
    next_oldest = store.newer[jnp.maximum(oldest, 0)]
    store = _record_expiry(store, oldest, pos, ok)
    return dataclasses.replace(
        store,
        held=set_where(store.held, oldest, 0, ok),
        used=store.used - jnp.where(ok, cost_of(store, episode, oldest, deltas), 0),
        oldest=jnp.where(ok, next_oldest, store.oldest),
        newest=jnp.where(ok & (next_oldest < 0), NONE, store.newest),
    )


def _lazy(features) -> bool:
    """Expired slots stay in ``held`` until :func:`settle`: "oldest_only" (with "order", its exact store)."""
    return OLDEST_ONLY in features and "order" not in features


def _at_or_after_oldest(store: StoreState, slot) -> jax.Array:
    """[] bool: ``slot`` is not before the oldest item (under "oldest_only", a present slot's test)."""
    return (store.oldest >= 0) & (slot >= store.oldest)


def settle(store: StoreState, features=ALL_FEATURES) -> StoreState:
    """The store with every expired slot cleared in ``held``: a no-op except under "oldest_only", which
    clears them only here. Call it (O(T)) before reading ``held`` or ``present`` outside the policy's
    own steps: the final store, a trace's store after each step (:func:`finish` does both)."""
    if not _lazy(features):
        return store
    slots = jnp.arange(store.held.shape[0], dtype=jnp.int32)
    return dataclasses.replace(store, held=jnp.where(_at_or_after_oldest(store, slots), store.held, 0))


def finish(store: StoreState, n_steps: int, features=ALL_FEATURES) -> StoreState:
    """The store after the last of ``n_steps`` steps, as metrics read it: :func:`flush`, then :func:`settle`."""
    return settle(flush(store, n_steps, features), features)


def _expire(store: StoreState, episode: EpisodeBatch, slot, pos, ordered: bool) -> StoreState:
    safe = jnp.maximum(slot, 0)
    cost = _item_cost(store.held[safe], episode.write_cost[safe])  # 0 where no item
    ok = (slot >= 0) & (slot < pos) & (cost > 0)
    store = dataclasses.replace(
        store, held=set_where(store.held, slot, 0, ok), used=store.used - jnp.where(ok, cost, 0)
    )
    store = _record_expiry(store, slot, pos, ok)
    if not ordered:
        return store
    safe = jnp.maximum(slot, 0)
    older, newer = store.older[safe], store.newer[safe]
    return dataclasses.replace(
        store,
        newer=set_where(store.newer, older, newer, ok),
        older=set_where(store.older, newer, older, ok),
        oldest=jnp.where(ok & (older < 0), newer, store.oldest),
        newest=jnp.where(ok & (newer < 0), older, store.newest),
    )


def _write_past(store: StoreState, action: Action, episode: EpisodeBatch, pos, budget, features) -> StoreState:
    """WRITE_PAST(source): the WRITE rule for the buffered step ``source`` (see the module note).
    The item is stored at once (not through ``pending``: its slot differs from run to run)."""
    source = action.target
    safe = jnp.maximum(source, 0)
    cost = episode.write_cost[safe]
    ok = (
        (action.kind == WRITE_PAST)
        & (source >= 0)
        & (source <= pos)
        & episode.valid[safe]
        & (store.held[safe] == 0)
        & (store.newest != source)
        & fits(store.used, cost, budget)
    )
    newest = store.newest
    store = dataclasses.replace(
        store,
        held=set_where(store.held, source, HELD_BASE, ok),
        used=store.used + jnp.where(ok, cost, 0),
        write_actions=store.write_actions + (action.kind == WRITE_PAST),
        oldest=jnp.where(ok & (store.oldest < 0), source, store.oldest),
        newest=jnp.where(ok, source, newest),
    )
    if store.expired_at is not None:  # history: the slot's new interval starts now
        store = dataclasses.replace(
            store,
            expired_at=set_where(store.expired_at, source, STILL_HELD, ok),
            written_at=set_where(store.written_at, source, pos, ok),
        )
    if "merge" in features:  # a re-written slot may have held an (expired) delta
        store = dataclasses.replace(store, parent=set_where(store.parent, source, NONE, ok))
    if "order" in features or "fifo" in features:  # chain it after the previous newest
        store = dataclasses.replace(
            store, newer=set_where(set_where(store.newer, newest, source, ok), source, NONE, ok)
        )
        if "order" in features:
            store = dataclasses.replace(store, older=set_where(store.older, source, newest, ok))
    return store


def apply(store: StoreState, action: Action, episode: EpisodeBatch, pos, budget, features=ALL_FEATURES) -> StoreState:
    """Apply one action (its EXPIREs, then its main action) at step position ``pos``. An added item
    is recorded in the ``pending`` scalars and joins the store at the next :func:`flush` (so a policy
    that acts again at this step sees ``used`` and ``newest`` without it: none does after a WRITE or MERGE).

    ``features`` (static, a policy's ``features``: what it emits plus its layout): among the actions
    "write", "expire", "merge", "write_past", code for the others is left out of the compiled step, and
    such actions are ignored. Of the layouts, "order"
    asks for the oldest-first links (``oldest``, ``newer``, ``older``) to stay exact when any
    item expires; "fifo" (instead) declares that the policy only ever expires the oldest item —
    the store then rejects any other EXPIRE and keeps ``oldest`` with a cheaper forward chain. A
    policy that never reads ``oldest`` may leave both out. "oldest_only" (instead of "fifo") declares
    that it also reads ``held`` only at ``oldest`` or newer items (never ``present`` or ``holds``), and that
    it acts once per step with at most one EXPIRE: expired slots then stay in ``held`` until :func:`settle`,
    and the EXPIRE takes effect at the next :func:`flush`, like the added item.
    """
    expires, merges, ordered = "expire" in features, "merge" in features, "order" in features
    after = None  # the store after the EXPIREs, where they leave at the next flush
    if expires and _lazy(features):
        if action.expire_slots.shape[0] != 1:
            raise ValueError(
                f"layout 'oldest_only' takes one EXPIRE per action, not {action.expire_slots.shape[0]}; "
                "a policy that emits more declares 'fifo'"
            )
        store, after = _expire_oldest_at_flush(store, episode, action.expire_slots[0], pos, deltas=merges)
    elif expires:
        for slot in action.expire_slots:  # K is static and small
            if "fifo" in features and not ordered:
                store = _expire_oldest(store, episode, slot, pos, deltas=merges)
            else:
                store = _expire(store, episode, slot, pos, ordered)
    store = dataclasses.replace(
        store,
        expire_actions=store.expire_actions + action.n_expire,
        write_actions=store.write_actions + (action.kind == WRITE),
        merge_actions=store.merge_actions + (action.kind == MERGE),
    )
    if "write_past" in features:
        store = _write_past(store, action, episode, pos, budget, features)
    if not features & {"write", "merge"}:
        return store

    seen = store if after is None else after  # what the main action finds
    write_cost = episode.write_cost[pos]
    vacant = (store.newest != pos) & (store.pending == 0)  # at most one item per step, even if a policy acts twice
    write_ok = ("write" in features) & (action.kind == WRITE) & vacant & fits(seen.used, write_cost, budget)
    merge_ok, merge_cost = jnp.zeros((), bool), action.merge_cost
    if merges:
        # the quote (action.merge_cost > 0) covered the episode's conditions; these are the store's
        target = jnp.maximum(action.target, 0)
        merge_ok = (
            (action.kind == MERGE)
            & vacant
            & (merge_cost > 0)
            & (store.held[target] == HELD_BASE)
            & fits(seen.used, merge_cost, budget)
        )
        if _lazy(features):  # a slot before the oldest item was expired (not cleared: see settle)
            merge_ok = merge_ok & _at_or_after_oldest(seen, target)
        store = dataclasses.replace(store, pending_parent=action.target)  # kept by flush for a delta only

    return dataclasses.replace(store, pending=jnp.where(write_ok, -1 - write_cost, jnp.where(merge_ok, merge_cost, 0)))
