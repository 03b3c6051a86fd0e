"""Policies for the reads trade-off (docs/reads.md): store versions, resolve conflicts when reading.

* ``add_only`` — Mem0's 2026 ADD-only design: every new version of a fact is a new item; nothing is ever
  updated, merged or expired to make a fact current (the reader resolves conflicts by taking the newest
  version among what it retrieves, wpbjax.scoring.reads). A step is written iff it carries a version of some fact
  that the store does not hold as that fact's newest written item (a new version, or one whose item was
  evicted); a repeat of a held newest version and a step without facts are skipped. When the budget is
  short the oldest items make way (recency eviction), as in every append-only log.

It is the counterpart of ``supersede`` (policies/history.py: update at write time, one item per fact) and of
``version_journal`` (first and latest version of each fact kept, intermediates evicted first): the three
answer the blog's question "update when writing, or when reading?".
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import EVICTS_OLDEST, recency_write
from wpbjax.policies.history import facts_at
from wpbjax.policies.published import UNPRIVILEGED


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class AddOnlyState:
    item_of: jax.Array  # [T*K] int32 per fact, the step of its newest written item (-1 none)
    pair_of: jax.Array  # [T*K] int32 per fact, that item's pair id (its version)
    at: jax.Array  # []    int32 the step whose decision is held (-1 before the first)
    admit: jax.Array  # []    bool  the decision held for step ``at`` (an eviction walk calls act again)


def add_only_init(params, episode, key):
    size = episode.fact_key.size if episode.fact_key is not None else 1
    none = jnp.full(size, NONE, jnp.int32)
    return AddOnlyState(item_of=none, pair_of=none, at=jnp.full((), NONE, jnp.int32), admit=jnp.zeros((), bool))


def add_only_act(params, state, store, episode, pos, budget):
    """Admit step ``pos`` iff it carries a (fact, version) the store does not hold as the fact's newest item;
    write it with recency eviction (SKIP if it cannot fit an empty store).

    The tables learn of a write one step late (``store.newest == pos - 1``: the previous step was written), so
    they never record a write the store refused. Recency eviction drops only the oldest items, so an item is
    still held iff it is not older than ``store.oldest``. O(K) per step: the tables change by scatters that
    drop every index but on the step's first call (a whole-table select would be O(T))."""
    fresh = state.at != pos
    size = state.item_of.size
    previous = jnp.maximum(pos - 1, 0)
    wrote_previous = fresh & (pos > 0) & (store.newest == pos - 1)
    fact, pair, carried = facts_at(episode, previous)
    into = jnp.where(carried & wrote_previous, fact, size)  # an index the scatters drop
    item_of = state.item_of.at[into].set(previous, mode="drop")
    pair_of = state.pair_of.at[into].set(pair, mode="drop")
    fact, pair, carried = facts_at(episode, pos)
    newest = item_of[fact]
    held = (newest >= 0) & (store.oldest >= 0) & (newest >= store.oldest)
    admit = jnp.where(fresh, (carried & ~(held & (pair_of[fact] == pair))).any(), state.admit)
    action = recency_write(store, episode, pos, budget, admit)
    return action, AddOnlyState(item_of=item_of, pair_of=pair_of, at=jnp.asarray(pos, jnp.int32), admit=admit)


ADD_ONLY = Policy(
    "add_only",
    add_only_act,
    UNPRIVILEGED,
    init=add_only_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="every new version of a fact is a new item (never updated); conflicts resolved when reading",
)
