"""Policies that keep history (write integrity, docs/integrity.md): they read a step's facts.

A step's facts are ``EpisodeBatch.fact_key`` / ``fact_pair`` (wpbjax.episodes.facts): under the api rule
what any observer reads of the api string (endpoint, version); on episodes with a ``facts`` label (WRIT)
the labelled facts, as a memory system's extractor would name them. Each policy is O(K) per step (K = the
most facts one step carries, static), with per-fact tables in its state.

* ``supersede`` — a latest-value store: writing a step first expires the items of the facts it carries
  (their older versions, or an older copy of the same one), then evicts the oldest items until it fits.
  Trade-off: best update fidelity per byte (one item per fact), no history (coverage and detectability
  collapse to the latest versions) — the behaviour memory-system users ask for instead of duplicates.
* ``version_journal`` — keeps the first and the latest version of every fact and spends what is left on
  intermediate versions, evicting the oldest intermediate first; a repeat of a held version is skipped,
  steps without facts are not written. Trade-off: keeps "what was it first, what is it now, what changed"
  at the cost of recency (when first + latest of every fact do not fit, new facts are refused).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import recency_write
from wpbjax.policies.published import UNPRIVILEGED
from wpbjax.state import actions, store as store_lib

SUPERSEDE = dict(
    emits=frozenset({"write", "expire"}), layout=frozenset({"order"})
)  # expires older versions, reads oldest
JOURNAL = dict(emits=frozenset({"write", "expire"}), layout=frozenset())  # expires queued items by slot; reads no links


def facts_at(episode, pos):
    """([K] fact ids, [K] pair ids, [K] carried) of step ``pos`` (ids are flat first-observation slots)."""
    if episode.fact_key is None:
        raise ValueError("history policies need the episodes' fact tables (EpisodeBatch.fact_key)")
    key, pair = episode.fact_key[pos], episode.fact_pair[pos]
    return jnp.maximum(key, 0), pair, key >= 0


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SupersedeState:
    item_of: jax.Array  # [T*K] int32 per fact, the step of its newest written item (-1 none)
    at: jax.Array  # []    int32 the step whose older versions were expired (-1 before the first)


def supersede_init(params, episode, key):
    size = episode.fact_key.size if episode.fact_key is not None else 1
    return SupersedeState(item_of=jnp.full(size, NONE, jnp.int32), at=jnp.full((), NONE, jnp.int32))


def supersede_act(params, state, store, episode, pos, budget):
    """First call at a step: EXPIRE the items of the facts it carries, CONTINUE. Then recency: expire
    the oldest items until the step fits, WRITE (SKIP if it cannot fit an empty store)."""
    fact, _, carried = facts_at(episode, pos)
    fresh = state.at != pos
    older = jnp.where(carried, state.item_of[fact], NONE)
    stale = jnp.where(fresh & (older >= 0) & (older != pos), older, NONE)
    n_stale = (stale >= 0).sum(dtype=jnp.int32)
    write = recency_write(store, episode, pos, budget, jnp.ones((), bool))
    action = actions.select(n_stale > 0, actions.expire_and_continue(stale, n_stale), write)
    written = (n_stale == 0) & (action.kind == actions.WRITE)
    item_of = state.item_of.at[jnp.where(carried & written, fact, state.item_of.size)].set(pos, mode="drop")
    return action, SupersedeState(item_of=item_of, at=jnp.asarray(pos, jnp.int32))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class JournalState:
    first_of: jax.Array  # [T*K] int32 per fact, the step holding its first version (-1 none)
    latest_of: jax.Array  # [T*K] int32 per fact, the step holding its latest written version (-1 none)
    queue: jax.Array  # [T]   int32 intermediate items, oldest first (a FIFO over head .. tail)
    head: jax.Array  # []    int32
    tail: jax.Array  # []    int32
    at: jax.Array  # []    int32 the step whose superseded latest items were queued


def journal_init(params, episode, key):
    size = episode.fact_key.size if episode.fact_key is not None else 1
    none = jnp.full(size, NONE, jnp.int32)
    zero = jnp.zeros((), jnp.int32)
    return JournalState(
        first_of=none,
        latest_of=none,
        queue=jnp.full(episode.valid.shape[0], NONE, jnp.int32),
        head=zero,
        tail=zero,
        at=jnp.full((), NONE, jnp.int32),
    )


def version_journal_act(params, state, store, episode, pos, budget):
    """First call at a step: queue each carried fact's superseded latest item (unless it is the first
    version) as an intermediate. Then WRITE if the step brings a version not held and fits; else EXPIRE
    the oldest queued intermediate and CONTINUE; with none left, SKIP."""
    fact, pair, carried = facts_at(episode, pos)
    fresh = state.at != pos
    latest, first = state.latest_of[fact], state.first_of[fact]
    # a carried version is new unless the fact's latest item carries that very (fact, version) pair
    held = jnp.any(episode.fact_pair[jnp.maximum(latest, 0)] == pair[:, None], axis=-1)
    new = carried & ((latest < 0) | ~held)
    demote = fresh & new & (latest >= 0) & (latest != first)
    queue, tail = state.queue, state.tail
    for k in range(fact.shape[0]):  # K is static and small: the step's superseded latest items, in order
        queue = queue.at[jnp.where(demote[k], tail, queue.size)].set(latest[k], mode="drop")
        tail = tail + demote[k]
    wanted = jnp.any(new)
    fits = episode.write_cost[pos] <= store_lib.remaining(store, budget)
    evict = wanted & ~fits & (state.head < tail)
    victim = queue[jnp.minimum(state.head, queue.size - 1)]
    present = store_lib.holds(store, victim)  # an item queued twice (latest of two facts) is gone the 2nd time
    action = actions.select(
        wanted & fits,
        actions.write(),
        actions.select(
            evict,
            actions.expire_and_continue(jnp.where(present, victim, NONE)[None], present.astype(jnp.int32)),
            actions.skip(),
        ),
    )
    update = new & wanted & fits
    outside = state.first_of.size  # an index the scatters drop
    state = JournalState(
        first_of=state.first_of.at[jnp.where(update & (first < 0), fact, outside)].set(pos, mode="drop"),
        latest_of=state.latest_of.at[jnp.where(update, fact, outside)].set(pos, mode="drop"),
        queue=queue,
        head=state.head + evict,
        tail=tail,
        at=jnp.asarray(pos, jnp.int32),
    )
    return action, state


SUPERSEDE = Policy(
    "supersede",
    supersede_act,
    UNPRIVILEGED,
    init=supersede_init,
    multi_action=True,
    **SUPERSEDE,
    doc="a latest-value store: expires the older items of the facts a step carries, then recency",
)
VERSION_JOURNAL = Policy(
    "version_journal",
    version_journal_act,
    UNPRIVILEGED,
    init=journal_init,
    multi_action=True,
    **JOURNAL,
    doc="keeps every fact's first and latest version; evicts intermediate versions oldest first",
)
