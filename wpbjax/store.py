"""The store: the only code that changes memory, and the only place the budget rule lives.

Items are keyed by the position of the step that created them (at most one per step); positions
ascend with ``t``, so slot order is insertion order. ``oldest`` / ``newest`` and a linked list over
the present items keep every query and update O(1) per step. An item added at step p enters
``present`` and the links at the start of step p+1 (:func:`flush`; until then it lives in the
``pending`` scalars), which lets XLA update those arrays in place. SEMANTICS §3:

* WRITE is accepted iff ``used + write_cost <= budget`` (and the step has no item yet).
* EXPIRE(slot) is accepted iff the item exists and is older than the current step; it credits
  the item's exact cost.
* MERGE(target) is accepted iff the target is a present *base* item, both observations carry
  equal non-null ``api`` values, the canonical delta is non-empty and ``used + merge_cost <= budget``.
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

from wpbjax.actions import MERGE, WRITE, WRITE_PAST, Action
from wpbjax.episodes.batch import EpisodeBatch

INDEX_BYTES = 16
EMPTY_DELTA_BYTES = 2  # "{}"
NONE = -1


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class StoreState:
    present: jax.Array         # [T] bool  an item keyed by this step exists
    parent: jax.Array          # [T] int32 a delta's parent slot (-1 for base items)
    delta_cost: jax.Array      # [T] int32 bytes of a delta item, 0 for a base item (which costs its
                               #           step's write_cost); a delta costs >= 19, so > 0 marks deltas
    newer: jax.Array           # [T] int32 next newer present item (-1 at the newest)
    older: jax.Array           # [T] int32 next older present item (-1 at the oldest)
    oldest: jax.Array          # []  int32 oldest present item, -1 when empty
    newest: jax.Array          # []  int32 newest present item, -1 when empty
    used: jax.Array            # []  int32 bytes in use (sum of the present items' costs)
    # The item added at the last step, not yet in ``present`` and the links (see ``flush``):
    pending: jax.Array         # []  bool  an item was added at step pos-1
    pending_older: jax.Array   # []  int32 ... the newest item before it
    write_actions: jax.Array   # []  int32 WRITE actions emitted (accepted or not)
    expire_actions: jax.Array  # []  int32 EXPIRE actions emitted
    merge_actions: jax.Array   # []  int32 MERGE actions emitted

    @property
    def is_delta(self) -> jax.Array:
        """[T] bool: the item is a merge delta (else a base item)."""
        return self.delta_cost > 0


def empty(n_steps: int) -> StoreState:
    zero, none = jnp.zeros((), jnp.int32), jnp.full((), NONE, jnp.int32)
    links = jnp.full(n_steps, NONE, jnp.int32)
    return StoreState(present=jnp.zeros(n_steps, bool), parent=links,
                      delta_cost=jnp.zeros(n_steps, jnp.int32), newer=links, older=links, oldest=none,
                      newest=none, used=zero, write_actions=zero, expire_actions=zero, merge_actions=zero,
                      pending=jnp.zeros((), bool), pending_older=none)


def remaining(store: StoreState, budget) -> jax.Array:
    """``max(budget - used, 0)``: the bytes a policy may still fill."""
    return jnp.maximum(budget - store.used, 0)


def is_empty(store: StoreState) -> jax.Array:
    return store.oldest < 0


def cost_of(store: StoreState, episode: EpisodeBatch, slot) -> jax.Array:
    """Bytes of the item at ``slot`` (0 for slot -1).

    Base items cost their step's write cost, read from the (read-only) episode: reading a carried
    array that the same step updates in place makes XLA copy it whole, every step.
    """
    safe = jnp.maximum(slot, 0)
    delta_cost = store.delta_cost[safe]
    return jnp.where(slot >= 0, jnp.where(delta_cost > 0, delta_cost, episode.write_cost[safe]), 0)


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
    """``array[index] = value`` where ``condition`` (and ``index >= 0``); O(1)."""
    safe = jnp.maximum(index, 0)
    return array.at[safe].set(jnp.where(condition & (index >= 0), value, array[safe]))


def _put_at(array, pos, value, condition):
    """``array[pos] = value`` where ``condition``; ``pos`` is the same for every run of a batch, so
    this is a dynamic-update-slice (in place), not a scatter."""
    return jax.lax.dynamic_update_index_in_dim(array, jnp.where(condition, value, array[pos]), pos, 0)


def flush(store: StoreState, pos, kinds=frozenset({"write", "expire", "merge", "order"})) -> StoreState:
    """Put the item added at step ``pos - 1`` into ``present`` and the links. Call at the start of
    step ``pos`` (and once after the last step), before anything reads the store.

    Why deferred: XLA updates a carried [runs, T] array in place only if every read of it in the
    iteration is an ancestor of its update; otherwise it copies the whole array every step (O(T)
    per step). Policies read ``present`` and the links before they decide, so these writes come
    first. ``pos - 1`` is the same for every run of a batch: the writes are dynamic-update-slices.
    """
    slot, added = jnp.maximum(pos - 1, 0), store.pending
    store = dataclasses.replace(store, present=_put_at(store.present, slot, True, added), pending=jnp.zeros((), bool))
    if "expire" in kinds and "order" in kinds:  # chain the item after the previous newest
        store = dataclasses.replace(store, older=_put_at(store.older, slot, store.pending_older, added),
                                    newer=set_where(store.newer, store.pending_older, slot, added))
    elif "fifo" in kinds:  # oldest-first only: the forward chain is enough
        store = dataclasses.replace(store, newer=set_where(store.newer, store.pending_older, slot, added))
    return store


def _expire_oldest(store: StoreState, episode: EpisodeBatch, slot, pos) -> StoreState:
    """EXPIRE under "fifo": accepted iff ``slot`` is the oldest item (then the next oldest is the
    next one stored after it). Reads only arrays this step does not write, so XLA needs no copies."""
    oldest = store.oldest
    ok = (slot >= 0) & (slot == oldest) & (slot < pos)
    # Reads index by ``store.oldest``, not by the policy's ``slot``: an index that depends on the
    # policy (which read the arrays after this step's flush) would make XLA copy them (see flush).
    next_oldest = store.newer[jnp.maximum(oldest, 0)]
    return dataclasses.replace(
        store,
        present=set_where(store.present, oldest, False, ok),
        used=store.used - jnp.where(ok, cost_of(store, episode, oldest), 0),
        oldest=jnp.where(ok, next_oldest, store.oldest),
        newest=jnp.where(ok & (next_oldest < 0), NONE, store.newest),
    )


def _expire(store: StoreState, episode: EpisodeBatch, slot, pos, ordered: bool) -> StoreState:
    ok = (slot >= 0) & (slot < pos) & store.present[jnp.maximum(slot, 0)]
    store = dataclasses.replace(store, present=set_where(store.present, slot, False, ok),
                                used=store.used - jnp.where(ok, cost_of(store, episode, slot), 0))
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


def _write_past(store: StoreState, action: Action, episode: EpisodeBatch, pos, budget, kinds) -> StoreState:
    """WRITE_PAST(source): the WRITE rule for the buffered step ``source`` (see the module note).
    The item is stored at once (not through ``pending``: its slot differs from run to run)."""
    source = action.target
    safe = jnp.maximum(source, 0)
    cost = episode.write_cost[safe]
    ok = ((action.kind == WRITE_PAST) & (source >= 0) & (source <= pos) & episode.valid[safe]
          & ~store.present[safe] & (store.newest != source) & (store.used + cost <= budget))
    newest = store.newest
    store = dataclasses.replace(
        store, present=set_where(store.present, source, True, ok), used=store.used + jnp.where(ok, cost, 0),
        write_actions=store.write_actions + (action.kind == WRITE_PAST),
        oldest=jnp.where(ok & (store.oldest < 0), source, store.oldest), newest=jnp.where(ok, source, newest))
    if "merge" in kinds:  # a re-written slot may have held an (expired) delta
        store = dataclasses.replace(store, delta_cost=set_where(store.delta_cost, source, 0, ok),
                                    parent=set_where(store.parent, source, NONE, ok))
    if "order" in kinds or "fifo" in kinds:  # chain it after the previous newest
        store = dataclasses.replace(store, newer=set_where(set_where(store.newer, newest, source, ok), source, NONE, ok))
        if "order" in kinds:
            store = dataclasses.replace(store, older=set_where(store.older, source, newest, ok))
    return store


ALL_KINDS = frozenset({"write", "expire", "merge", "order"})


def apply(store: StoreState, action: Action, episode: EpisodeBatch, pos, budget, kinds=ALL_KINDS) -> StoreState:
    """Apply one action (its EXPIREs, then its main action) at step position ``pos``. An added item
    is recorded in the ``pending`` scalars and reaches the [T] arrays at the next :func:`flush`.

    ``kinds`` (static): the action kinds the policy can emit, among "write", "expire", "merge";
    code for the others is left out of the compiled step, and such actions are ignored. "order"
    asks for the oldest-first links (``oldest``, ``newer``, ``older``) to stay exact when any
    item expires; "fifo" (instead) declares that the policy only ever expires the oldest item —
    the store then rejects any other EXPIRE and keeps ``oldest`` with a cheaper forward chain. A
    policy that never reads ``oldest`` may leave both out.
    """
    expires, merges, ordered = "expire" in kinds, "merge" in kinds, "order" in kinds
    if expires:
        for slot in action.expire_slots:  # K is static and small
            if "fifo" in kinds and not ordered:
                store = _expire_oldest(store, episode, slot, pos)
            else:
                store = _expire(store, episode, slot, pos, ordered)
    store = dataclasses.replace(store, expire_actions=store.expire_actions + action.n_expire,
                                write_actions=store.write_actions + (action.kind == WRITE),
                                merge_actions=store.merge_actions + (action.kind == MERGE))
    if "write_past" in kinds:
        store = _write_past(store, action, episode, pos, budget, kinds)
    if not kinds & {"write", "merge"}:
        return store

    write_cost = episode.write_cost[pos]
    vacant = store.newest != pos  # at most one item per step, even if a policy acts twice
    write_ok = ("write" in kinds) & (action.kind == WRITE) & vacant & (store.used + write_cost <= budget)
    merge_ok, merge_cost, target = jnp.zeros((), bool), jnp.zeros((), jnp.int32), jnp.maximum(action.target, 0)
    if merges:
        merge_cost, n_fields = merge_delta(episode, pos, target)
        api = episode.api_id[pos]
        merge_ok = ((action.kind == MERGE) & vacant & (action.target >= 0) & (action.target < pos)
                    & store.present[target] & (store.parent[target] < 0)
                    & (api >= 0) & (episode.api_id[target] == api)
                    & (n_fields > 0) & (store.used + merge_cost <= budget))

    added = write_ok | merge_ok
    if merges:
        # A delta's parent and cost go in at once (not deferred like ``present``): every read of these
        # arrays in this step is an ancestor of ``merge_ok``, so XLA still updates them in place.
        store = dataclasses.replace(store, parent=_put_at(store.parent, pos, target, merge_ok),
                                    delta_cost=_put_at(store.delta_cost, pos, merge_cost, merge_ok))
    return dataclasses.replace(
        store,
        oldest=jnp.where(added & (store.oldest < 0), pos, store.oldest),
        newest=jnp.where(added, pos, store.newest),
        used=store.used + jnp.where(write_ok, write_cost, 0) + jnp.where(merge_ok, merge_cost, 0),
        pending=added, pending_older=store.newest,
    )
