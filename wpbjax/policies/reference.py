"""The seven baselines of the published harness, quirks included (SEMANTICS §5).

Each emits, for the incoming step with write cost ``c``, an EXPIRE set and one main action.
"""
from __future__ import annotations

import jax.numpy as jnp

from wpbjax import actions, store as store_lib
from wpbjax.policies.base import Policy


def _n_steps(store):
    return store.present.shape[0]


def no_mem_act(params, state, store, episode, pos, budget):
    return actions.skip(_n_steps(store)), state


def fifo_store_all_act(params, state, store, episode, pos, budget):
    fits = episode.write_cost[pos] <= store_lib.remaining(store, budget)
    return actions.write_if(fits, _n_steps(store)), state


def uniform_sample_act(params, state, store, episode, pos, budget):
    on_grid = jnp.mod(episode.step_t[pos], params["every_n"]) == 0
    fits = episode.write_cost[pos] <= store_lib.remaining(store, budget)
    return actions.write_if(on_grid & fits, _n_steps(store)), state


def priority_threshold_act(params, state, store, episode, pos, budget):
    # Priority is stored rounded up to float32, so this is exact for any float32 threshold.
    return actions.write_if(episode.priority[pos] > params["threshold"], _n_steps(store)), state


def priority_greedy_act(params, state, store, episode, pos, budget):
    """WRITE if it fits; else evict by (priority, t) ascending until it does, if the incoming
    priority beats the store's lowest. Delta items rank as priority 0. May evict items whose
    priority exceeds the incoming one (kept from the published code)."""
    n_steps = _n_steps(store)
    cost, room = episode.write_cost[pos], store_lib.remaining(store, budget)
    item_rank = jnp.where(store.is_delta, 0, episode.priority_rank)
    big = jnp.iinfo(jnp.int32).max
    sort_rank = jnp.where(store.present, item_rank, big)
    incoming_beats_lowest = episode.priority_rank[pos] > jnp.min(sort_rank)
    # Stable sort by rank keeps slot (= t) order among equal ranks: the (priority, t) walk.
    order = jnp.argsort(sort_rank, stable=True)
    freed = jnp.cumsum(jnp.where(store.present, store.item_cost, 0)[order])
    walk_len = jnp.argmax(room + freed >= cost) + 1   # items expired, in walk order
    walk_finds_room = room + freed[-1] >= cost
    in_walk = jnp.zeros(n_steps, bool).at[order].set(jnp.arange(n_steps) < walk_len) & store.present
    evict = (cost > room) & store.present.any() & incoming_beats_lowest & walk_finds_room
    plain = actions.write_if(cost <= room, n_steps)
    return actions.select(evict, actions.write(n_steps, in_walk, walk_len), plain), state


def _evict_oldest_quirk(store, cost, room):
    """The last_kb / merge_aggressive loop: ``while cost > room`` emit EXPIRE(oldest), where
    'oldest' is read before any action applies, so every EXPIRE names the same item.

    Returns ``(expire mask, EXPIREs emitted, go ahead with the main action)``.
    """
    n_steps = _n_steps(store)
    oldest = store_lib.oldest(store)
    oldest_cost = store.item_cost[jnp.maximum(oldest, 0)]
    short = cost > room
    nonempty = oldest >= 0
    n_expire = jnp.where(short & nonempty, -(-(cost - room) // jnp.maximum(oldest_cost, 1)), 0)
    expire = (jnp.arange(n_steps) == oldest) & short & nonempty
    return expire, n_expire, ~short | nonempty


def last_kb_act(params, state, store, episode, pos, budget):
    n_steps = _n_steps(store)
    expire, n_expire, go = _evict_oldest_quirk(store, episode.write_cost[pos], store_lib.remaining(store, budget))
    return actions.write_if(go, n_steps, expire, n_expire), state


def merge_aggressive_act(params, state, store, episode, pos, budget):
    """MERGE into the latest base item with an equal api (evicting oldest items, last_kb's
    way, until the delta fits); with no such item, behave exactly as last_kb."""
    n_steps = _n_steps(store)
    target = store_lib.latest_base_with_api(store, episode, episode.api_id[pos])
    has_target = target >= 0
    merge_cost, _ = store_lib.merge_delta(episode, pos, jnp.maximum(target, 0))
    cost = jnp.where(has_target, merge_cost, episode.write_cost[pos])
    expire, n_expire, go = _evict_oldest_quirk(store, cost, store_lib.remaining(store, budget))
    main = actions.select(has_target, actions.merge(n_steps, target, expire, n_expire),
                          actions.write(n_steps, expire, n_expire))
    return actions.select(go, main, actions.skip(n_steps)), state


UNPRIVILEGED = ("unprivileged", "privileged")
PRIVILEGED_ONLY = ("privileged",)

REFERENCE_POLICIES = (
    Policy("no_mem", no_mem_act, UNPRIVILEGED, doc="never writes"),
    Policy("fifo_store_all", fifo_store_all_act, UNPRIVILEGED, doc="writes every step that fits"),
    Policy("uniform_sample", uniform_sample_act, UNPRIVILEGED, {"every_n": 10},
           doc="writes steps with t mod every_n == 0 that fit"),
    Policy("priority_threshold", priority_threshold_act, PRIVILEGED_ONLY, {"threshold": 0.5},
           doc="writes steps with priority > threshold; the store rejects what does not fit"),
    Policy("priority_greedy", priority_greedy_act, PRIVILEGED_ONLY,
           doc="writes; when full evicts by (priority, t) if the incoming priority beats the lowest"),
    Policy("last_kb", last_kb_act, UNPRIVILEGED,
           doc="recency: expires the oldest item (published quirk: only once per step), then writes"),
    Policy("merge_aggressive", merge_aggressive_act, UNPRIVILEGED,
           doc="merges a delta into the latest base item of the same api; else last_kb"),
)

# The published line-up per track, in the published order.
TRACK_LINEUP = {
    "unprivileged": ("no_mem", "fifo_store_all", "uniform_sample", "last_kb", "merge_aggressive"),
    "privileged": ("no_mem", "fifo_store_all", "uniform_sample", "priority_threshold", "priority_greedy",
                   "last_kb", "merge_aggressive"),
}
