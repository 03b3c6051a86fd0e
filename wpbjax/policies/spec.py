"""The spec's simple baselines: always_write, never_write, recency, random, expire_oldest.

(uniform_sample, priority_threshold and merge_aggressive are the published ones, in reference.py.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import EVICTS_OLDEST, gated_recency
from wpbjax.policies.published import UNPRIVILEGED, WRITES
from wpbjax.state import actions, store as store_lib


def always_write_act(params, state, store, episode, pos, budget):
    """WRITE every step; the store rejects what does not fit."""
    return actions.write(), state


ALWAYS_WRITE = Policy(
    "always_write",
    always_write_act,
    UNPRIVILEGED,
    **WRITES,
    doc="writes every step; the store rejects what does not fit",
)


def never_write_act(params, state, store, episode, pos, budget):
    return actions.skip(), state


NEVER_WRITE = Policy(
    "never_write", never_write_act, UNPRIVILEGED, emits=frozenset(), layout=frozenset(), doc="never writes"
)


recency_act, recency_init = gated_recency(
    lambda params, state, store, episode, pos, budget: (jnp.ones((), bool), state)
)
recency_act.__doc__ = """The spec's RecencyBias done right: expire the oldest items until the write fits, then
WRITE; SKIP a step that would not fit an empty store. Keeps the most recent suffix of steps that fits."""


RECENCY = Policy(
    "recency",
    recency_act,
    UNPRIVILEGED,
    init=recency_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="expires the oldest items until the write fits, then writes (the spec's RecencyBias)",
)


def random_init(params, episode, key):
    return key  # this episode's key (simulate folds the sweep key with the episode index)


def random_act(params, state, store, episode, pos, budget):
    """WRITE with probability p (an independent draw per step from the episode's key); the store
    rejects what does not fit."""
    draw = jax.random.uniform(jax.random.fold_in(state, pos))
    return actions.write_if(draw < params["p"]), state


RANDOM = Policy(
    "random",
    random_act,
    UNPRIVILEGED,
    {"p": 0.2},
    init=random_init,
    **WRITES,
    doc="writes with probability p (per-episode PRNG key); the store rejects what does not fit",
)


def expire_oldest_act(params, state, store, episode, pos, budget):
    """Expire (oldest first) every item older than ``max_age`` steps (t now − t item > max_age), then
    WRITE if the step fits. Two EXPIREs per call; while both go, CONTINUE to look at the next ones."""
    now = episode.step_t[pos]
    first = store.oldest
    second = jnp.where(first >= 0, store.newer[jnp.maximum(first, 0)], NONE)

    def too_old(slot):
        return (slot >= 0) & (now - episode.step_t[jnp.maximum(slot, 0)] > params["max_age"])

    take_first = too_old(first)
    take_second = take_first & too_old(second)
    victims = jnp.stack([jnp.where(take_first, first, NONE), jnp.where(take_second, second, NONE)])
    n_taken = take_first.astype(jnp.int32) + take_second.astype(jnp.int32)
    freed = jnp.where(take_first, store_lib.cost_of(store, episode, first), 0) + jnp.where(
        take_second, store_lib.cost_of(store, episode, second), 0
    )
    fits = episode.write_cost[pos] <= store_lib.remaining(store, budget) + freed
    finish = actions.select(fits, actions.write(victims, n_taken), actions.expire_only(victims, n_taken))
    return actions.select(take_second, actions.expire_and_continue(victims, n_taken), finish), state


EXPIRE_OLDEST = Policy(
    "expire_oldest",
    expire_oldest_act,
    UNPRIVILEGED,
    {"max_age": 50},
    multi_action=True,
    **EVICTS_OLDEST,
    doc="expires items older than max_age steps, then writes if it fits",
)
