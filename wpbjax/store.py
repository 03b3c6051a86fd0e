"""The store: the only code that changes memory, and the only place the budget rule lives.

Items are keyed by the position of the step that created them (at most one per step), so the
store is a set of ``[T]`` masks over step positions; positions ascend with ``t``, which makes
slot order insertion order. SEMANTICS §3:

* WRITE is accepted iff ``used + write_cost <= budget``.
* EXPIRE(slot) is accepted iff the item exists and is older than the current step; it credits
  the item's exact cost.
* MERGE(target) is accepted iff the target is a present *base* item, both observations carry
  equal non-null ``api`` values, the canonical delta is non-empty and ``used + merge_cost <= budget``.
* A rejected action changes nothing; the step's other actions still apply.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.actions import MERGE, WRITE, Action
from wpbjax.episodes.batch import EpisodeBatch

INDEX_BYTES = 16
EMPTY_DELTA_BYTES = 2  # "{}"


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class StoreState:
    present: jax.Array         # [T] bool  an item keyed by this step exists
    is_delta: jax.Array        # [T] bool  the item is a merge delta (else a base item)
    parent: jax.Array          # [T] int32 a delta's parent slot (-1 for base items)
    item_cost: jax.Array       # [T] int32 bytes the item occupies
    used: jax.Array            # []  int32 bytes in use (sum of item_cost over present items)
    write_actions: jax.Array   # []  int32 WRITE actions emitted (accepted or not)
    expire_actions: jax.Array  # []  int32 EXPIRE actions emitted
    merge_actions: jax.Array   # []  int32 MERGE actions emitted


def empty(n_steps: int) -> StoreState:
    zero = jnp.zeros((), jnp.int32)
    return StoreState(present=jnp.zeros(n_steps, bool), is_delta=jnp.zeros(n_steps, bool),
                      parent=jnp.full(n_steps, -1, jnp.int32), item_cost=jnp.zeros(n_steps, jnp.int32),
                      used=zero, write_actions=zero, expire_actions=zero, merge_actions=zero)


def remaining(store: StoreState, budget) -> jax.Array:
    """``max(budget - used, 0)``: the bytes a policy may still fill."""
    return jnp.maximum(budget - store.used, 0)


def oldest(store: StoreState) -> jax.Array:
    """Slot of the oldest present item, or -1 when the store is empty."""
    slots = jnp.arange(store.present.shape[0])
    first = jnp.argmax(store.present)
    return jnp.where(store.present.any(), slots[first], -1)


def latest_base_with_api(store: StoreState, episode: EpisodeBatch, api_id) -> jax.Array:
    """Slot of the most recently inserted base item whose api equals ``api_id``, or -1."""
    match = store.present & ~store.is_delta & (episode.api_id == api_id) & (api_id >= 0)
    slots = jnp.arange(match.shape[0])
    return jnp.max(jnp.where(match, slots, -1))


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


def apply(store: StoreState, action: Action, episode: EpisodeBatch, pos, budget) -> StoreState:
    """Apply one step's actions (expires, then the main action) at step position ``pos``."""
    slots = jnp.arange(store.present.shape[0])
    expired = action.expire & store.present & (slots < pos)
    present = store.present & ~expired
    used = store.used - jnp.where(expired, store.item_cost, 0).sum(dtype=jnp.int32)

    write_cost = episode.write_cost[pos]
    write_ok = (action.kind == WRITE) & (used + write_cost <= budget)

    target = jnp.clip(action.target, 0, store.present.shape[0] - 1)
    merge_cost, n_fields = merge_delta(episode, pos, target)
    api = episode.api_id[pos]
    merge_ok = ((action.kind == MERGE) & (action.target >= 0) & (action.target < pos)
                & present[target] & ~store.is_delta[target]
                & (api >= 0) & (episode.api_id[target] == api)
                & (n_fields > 0) & (used + merge_cost <= budget))

    added = write_ok | merge_ok
    cost = jnp.where(merge_ok, merge_cost, write_cost)
    here = slots == pos
    return StoreState(
        present=present | (here & added),
        is_delta=jnp.where(here & added, merge_ok, store.is_delta),
        parent=jnp.where(here & merge_ok, target, store.parent),
        item_cost=jnp.where(here & added, cost, store.item_cost),
        used=used + jnp.where(added, cost, 0),
        write_actions=store.write_actions + (action.kind == WRITE),
        expire_actions=store.expire_actions + action.n_expire,
        merge_actions=store.merge_actions + (action.kind == MERGE),
    )
