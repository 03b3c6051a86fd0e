"""The seven baselines of the published harness, quirks included (SEMANTICS §5): the ``published`` line-up.

Each emits, for the incoming step with write cost ``c``, its EXPIREs and one main action. Every
call is O(1): the store keeps its items in a linked list (oldest first), and policies that need
more order keep small indexes in their own state.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import EVICTS_OLDEST, WRITES  # noqa: F401 (WRITES re-exported)
from wpbjax.state import actions, store as store_lib

UNPRIVILEGED = ("unprivileged", "privileged")
PRIVILEGED_ONLY = ("privileged",)


def no_mem_act(params, state, store, episode, pos, budget):
    return actions.skip(), state


NO_MEM = Policy("no_mem", no_mem_act, UNPRIVILEGED, emits=frozenset(), layout=frozenset(), doc="never writes")


def fifo_store_all_act(params, state, store, episode, pos, budget):
    return actions.write_if(store_lib.write_fits(store, episode, pos, budget)), state


FIFO_STORE_ALL = Policy("fifo_store_all", fifo_store_all_act, UNPRIVILEGED, **WRITES, doc="writes every step that fits")


def uniform_sample_act(params, state, store, episode, pos, budget):
    # ``start`` shifts the grid (t ≡ start mod every_n); 0 is the published policy.
    on_grid = jnp.mod(episode.step_t[pos] - params["start"], params["every_n"]) == 0
    fits = store_lib.write_fits(store, episode, pos, budget)
    return actions.write_if(on_grid & fits), state


UNIFORM_SAMPLE = Policy(
    "uniform_sample",
    uniform_sample_act,
    UNPRIVILEGED,
    {"every_n": 10, "start": 0},
    **WRITES,
    doc="writes steps with t mod every_n == start mod every_n that fit",
)


def priority_threshold_act(params, state, store, episode, pos, budget):
    # Priority is stored rounded up to float32, so this is exact for any float32 threshold.
    return actions.write_if(episode.priority[pos] > params["threshold"]), state


PRIORITY_THRESHOLD = Policy(
    "priority_threshold",
    priority_threshold_act,
    PRIVILEGED_ONLY,
    {"threshold": 0.5},
    **WRITES,
    doc="writes steps with priority > threshold; the store rejects what does not fit",
)


# --- priority_greedy ------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class GreedyState:
    """The policy's own items as one FIFO list per priority level, so the walk by (priority, t)
    is "the oldest item of the lowest non-empty level", O(R) per call."""

    level_newer: jax.Array  # [T] int32 next newer item of the same level (-1 at its newest)
    level_oldest: jax.Array  # [R] int32 oldest item of each level (-1 when empty)
    level_newest: jax.Array  # [R] int32 newest item of each level (-1 when empty)
    walking: jax.Array  # []  bool  an eviction walk is under way at this step


def greedy_init(params, episode, key):
    n_steps, n_levels = episode.valid.shape[0], episode.priority_levels.shape[-1]
    return GreedyState(
        level_newer=jnp.full(n_steps, NONE, jnp.int32),
        level_oldest=jnp.full(n_levels, NONE, jnp.int32),
        level_newest=jnp.full(n_levels, NONE, jnp.int32),
        walking=jnp.zeros((), bool),
    )


GREEDY_EXPIRES_PER_CALL = 2  # most walks are this short; longer walks CONTINUE (docs/performance.md)


def priority_greedy_act(params, state, store, episode, pos, budget):
    """WRITE if it fits. Else, if the store is non-empty and the incoming priority beats its lowest,
    walk the items by (priority, t) ascending, expiring each, until the write fits; then WRITE (SKIP
    if even an empty store could not hold it). The walk may evict items of higher priority than the
    incoming one (kept from the published code). This policy writes only base items, which all
    fit by construction, so its level lists mirror the store exactly.

    One call expires up to GREEDY_EXPIRES_PER_CALL items; a longer walk CONTINUEs at this step.
    """
    cost, room = episode.write_cost[pos], store_lib.remaining(store, budget)
    n_levels = state.level_oldest.shape[0]
    levels = jnp.arange(n_levels)

    def lowest_level(level_oldest):
        return jnp.min(jnp.where(level_oldest >= 0, levels, n_levels))

    rank = episode.priority_rank[pos]
    start = (
        ~state.walking
        & (cost > room)
        & ~store_lib.is_empty(store)
        & (rank > lowest_level(state.level_oldest))
        & (budget >= cost)
    )  # an empty store frees `budget` bytes: the walk finds room iff c <= budget
    evict = (state.walking | start) & (cost > room)

    level_oldest, level_newest, freed, victims = state.level_oldest, state.level_newest, jnp.zeros((), jnp.int32), []
    # R is small (distinct priorities): [R] reads and writes are one-hot selects, not gathers/scatters
    for _ in range(GREEDY_EXPIRES_PER_CALL):  # pop the oldest item of the lowest non-empty level
        at_lowest = levels == lowest_level(level_oldest)  # all False when every level is empty
        victim = jnp.max(jnp.where(at_lowest, level_oldest, NONE))
        take = evict & (room + freed < cost) & (victim >= 0)
        after_victim = state.level_newer[jnp.maximum(victim, 0)]
        level_oldest = jnp.where(at_lowest & take, after_victim, level_oldest)
        level_newest = jnp.where(at_lowest & take & (after_victim < 0), NONE, level_newest)
        freed = freed + jnp.where(take, store_lib.cost_of(store, episode, victim, deltas=False), 0)
        victims.append(jnp.where(take, victim, NONE))
    victims = jnp.stack(victims)
    n_taken = (victims >= 0).sum(dtype=jnp.int32)
    walk_done = room + freed >= cost
    writes = jnp.where(evict, walk_done, cost <= room)

    at_rank = levels == rank
    tail = jnp.max(jnp.where(at_rank, level_newest, NONE))  # append the written step to its level
    level_newer = store_lib.set_where(state.level_newer, tail, pos, writes)
    level_oldest = jnp.where(at_rank & writes & (tail < 0), pos, level_oldest)
    level_newest = jnp.where(at_rank & writes, pos, level_newest)
    new_state = GreedyState(
        level_newer=level_newer, level_oldest=level_oldest, level_newest=level_newest, walking=evict & ~walk_done
    )
    action = actions.select(
        evict & ~walk_done, actions.expire_and_continue(victims, n_taken), actions.write_if(writes, victims, n_taken)
    )
    return action, new_state


PRIORITY_GREEDY = Policy(
    "priority_greedy",
    priority_greedy_act,
    PRIVILEGED_ONLY,
    init=greedy_init,
    multi_action=True,
    emits=frozenset({"write", "expire"}),
    layout=frozenset(),
    doc="writes; when full evicts by (priority, t) if the incoming priority beats the lowest",
)


# --- last_kb and merge_aggressive -----------------------------------------------------------------
def _evict_oldest_quirk(store, episode, cost, room, deltas: bool):
    """The published loop ``while cost > room: EXPIRE(oldest)`` where 'oldest' is read before any
    action applies, so all k EXPIREs name the same item and only the first succeeds.

    Returns ``(expire slot, EXPIREs emitted, go ahead with the main action)``.
    """
    oldest = store.oldest
    short, nonempty = cost > room, oldest >= 0
    evict = short & nonempty
    # ceil((cost - room) / oldest cost) with lax.div: both are positive here, and jnp's floor
    # division adds sign fix-ups, slower on CPU (docs/performance.md).
    oldest_cost = jnp.maximum(store_lib.cost_of(store, episode, oldest, deltas), 1)
    n_expire = jnp.where(evict, jax.lax.div(jnp.maximum(cost - room, 0) + oldest_cost - 1, oldest_cost), 0)
    return jnp.where(evict, oldest, NONE), n_expire, ~short | nonempty


def last_kb_act(params, state, store, episode, pos, budget):
    slot, n_expire, go = _evict_oldest_quirk(
        store, episode, episode.write_cost[pos], store_lib.remaining(store, budget), deltas=False
    )
    return actions.write_if(go, slot, n_expire), state


# last_kb and merge_aggressive expire only the oldest item and read ``held`` only there: the store leaves
# the slots they expire in ``held`` until the rollout ends (no scatter per EXPIRE; "oldest_only").
EVICTS_OLDEST_ONLY = dict(emits=EVICTS_OLDEST["emits"], layout=frozenset({"oldest_only"}))

LAST_KB = Policy(
    "last_kb",
    last_kb_act,
    UNPRIVILEGED,
    **EVICTS_OLDEST_ONLY,
    doc="recency: expires the oldest item (published quirk: only once per step), then writes",
)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class MergeState:
    latest_base: jax.Array  # [A] int32 latest base item stored per api index (-1 none)
    wrote_api: jax.Array  # []  int32 api index of the WRITE emitted at the last step (-1 none)


def merge_init(params, episode, key):
    return MergeState(
        latest_base=jnp.full(episode.api_ids.shape[-1], NONE, jnp.int32), wrote_api=jnp.full((), NONE, jnp.int32)
    )


def merge_aggressive_act(params, state, store, episode, pos, budget):
    """MERGE into the latest base item with an equal api (evicting oldest items, last_kb's way,
    until the delta fits); with no such item, behave exactly as last_kb.

    This policy only ever expires the oldest item, so the present items are exactly the stored ones
    not older than ``store.oldest``: its per-api table of latest base items needs no look-up in the
    store. The table learns whether last step's WRITE was accepted from ``store.newest`` now, rather
    than predicting it then: a read of the store's arrays that the store update does not depend on
    makes XLA copy them whole every step.
    """
    last = pos - 1
    accepted = (state.wrote_api >= 0) & (store.newest == last)
    # One entry changes: a scatter (one element per run) costs less than a select over the whole [A] table,
    # which grows with the batch's distinct apis (docs/performance.md, "Slow policies, round seven")
    latest_base = store_lib.set_where(state.latest_base, state.wrote_api, last, accepted)
    api = episode.api_index[pos]
    target = jnp.where(api >= 0, latest_base[jnp.maximum(api, 0)], NONE)
    has_target = (target >= 0) & (target >= store.oldest) & (store.oldest >= 0)
    quote = store_lib.quote_merge(episode, pos, target)
    cost = jnp.where(has_target, quote.cost, episode.write_cost[pos])
    slot, n_expire, go = _evict_oldest_quirk(store, episode, cost, store_lib.remaining(store, budget), deltas=True)
    main = actions.select(has_target, actions.merge(quote, slot, n_expire), actions.write(slot, n_expire))
    action = actions.select(go, main, actions.skip())
    wrote_api = jnp.where(action.kind == actions.WRITE, api, NONE)
    return action, MergeState(latest_base=latest_base, wrote_api=wrote_api)


MERGE_AGGRESSIVE = Policy(
    "merge_aggressive",
    merge_aggressive_act,
    UNPRIVILEGED,
    init=merge_init,
    emits=EVICTS_OLDEST_ONLY["emits"] | {"merge"},
    layout=EVICTS_OLDEST_ONLY["layout"],
    doc="merges a delta into the latest base item of the same api; else last_kb",
)


PUBLISHED_POLICIES = (
    NO_MEM,
    FIFO_STORE_ALL,
    UNIFORM_SAMPLE,
    PRIORITY_THRESHOLD,
    PRIORITY_GREEDY,
    LAST_KB,
    MERGE_AGGRESSIVE,
)

# The published line-up per track, in the published order.
TRACK_LINEUP = {
    "unprivileged": ("no_mem", "fifo_store_all", "uniform_sample", "last_kb", "merge_aggressive"),
    "privileged": (
        "no_mem",
        "fifo_store_all",
        "uniform_sample",
        "priority_threshold",
        "priority_greedy",
        "last_kb",
        "merge_aggressive",
    ),
}
