"""Building blocks shared by the policy zoo: recency eviction, once-per-step gates, step types.

A *gate* decides whether to admit the incoming step; :func:`gated_recency` turns it into a policy that
writes admitted steps, evicting the oldest items until the write fits (SKIP if it cannot fit an
empty store). The rollout may call a policy several times at one step (CONTINUE, while an eviction
walk is under way), so the gate runs once per step and its decision is held for the walk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import no_state
from wpbjax.state import actions, store as store_lib

# A Policy's ``emits`` and ``layout`` (``Policy(..., **WRITES)``): writes only; writes and expires only the
# oldest item (recency eviction)
WRITES = dict(emits=frozenset({"write"}), layout=frozenset())
EVICTS_OLDEST = dict(emits=frozenset({"write", "expire"}), layout=frozenset({"fifo"}))
FEEDBACK_ONLY, ORACLE_ONLY = ("feedback",), ("oracle",)
RECENCY_EXPIRES_PER_CALL = 2  # longer walks CONTINUE at the same step

# Step types an unprivileged policy can tell apart (bandits keep one estimate per type).
NEW_API, REPEAT_API, SEEN_API, NO_API = 0, 1, 2, 3
N_STEP_TYPES = 4


def recency_write(store, episode, pos, budget, admit) -> actions.Action:
    """WRITE step ``pos`` if ``admit``, first expiring the oldest items until it fits; SKIP if not
    admitted or if it would not fit an empty store. Up to RECENCY_EXPIRES_PER_CALL EXPIREs per call;
    a longer walk CONTINUEs (the policy needs ``multi_action=True`` and EVICTS_OLDEST)."""
    cost, room = episode.write_cost[pos], store_lib.remaining(store, budget)
    go = admit & (cost <= budget)
    first = store.oldest
    second = jnp.where(first >= 0, store.newer[jnp.maximum(first, 0)], NONE)
    take_first = go & (room < cost) & (first >= 0)
    freed_first = jnp.where(take_first, store_lib.cost_of(store, episode, first), 0)
    take_second = take_first & (room + freed_first < cost) & (second >= 0)
    freed = freed_first + jnp.where(take_second, store_lib.cost_of(store, episode, second), 0)
    victims = jnp.stack([jnp.where(take_first, first, NONE), jnp.where(take_second, second, NONE)])
    n_taken = take_first.astype(jnp.int32) + take_second.astype(jnp.int32)
    fits = room + freed >= cost
    walk_on = actions.select(n_taken > 0, actions.expire_and_continue(victims, n_taken), actions.skip())
    return actions.select(go & fits, actions.write(victims, n_taken), actions.select(go, walk_on, actions.skip()))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class GateState:
    inner: Any  # the gate's own state
    at: jax.Array  # [] int32 the step whose decision is held (-1 before the first step)
    admit: jax.Array  # [] bool  the decision held for step ``at``


def gated_recency(gate: Callable, gate_init: Callable = no_state):
    """``(act, init)`` of a policy that writes the steps ``gate`` admits, with recency eviction.

    ``gate(params, state, store, episode, pos, budget) -> (admit [] bool, state)`` runs once per step
    (on the step's first call; the store then reflects every earlier step, so ``store.newest == pos - 1``
    tells whether the previous step was written).
    """

    def init(params, episode, key):
        return GateState(
            inner=gate_init(params, episode, key), at=jnp.full((), NONE, jnp.int32), admit=jnp.zeros((), bool)
        )

    def act(params, state, store, episode, pos, budget):
        fresh = state.at != pos
        admit_now, inner_now = gate(params, state.inner, store, episode, pos, budget)
        admit = jnp.where(fresh, admit_now, state.admit)
        inner = jax.tree_util.tree_map(_hold(fresh), inner_now, state.inner)
        action = recency_write(store, episode, pos, budget, admit)
        return action, GateState(inner=inner, at=jnp.asarray(pos, jnp.int32), admit=admit)

    return act, init


def _hold(fresh):
    """Leaf update: the new value on the step's first call, else the held one (PRNG keys never change)."""

    def choose(new, old):
        if jnp.issubdtype(new.dtype, jax.dtypes.prng_key):
            return old
        return jnp.where(fresh, new, old)

    return choose


def step_type(seen, previous_api, api) -> jax.Array:
    """[] int32 type of a step from what an unprivileged policy sees: NEW_API (its api value was not
    seen earlier in the episode), REPEAT_API (same api as the previous step), SEEN_API (seen, not
    just before) or NO_API (no api: not a dict, or api missing/null). ``seen``: [A] bool."""
    known = seen[jnp.maximum(api, 0)]
    return jnp.where(api < 0, NO_API, jnp.where(~known, NEW_API, jnp.where(api == previous_api, REPEAT_API, SEEN_API)))


def fields_equal(episode, pos, other) -> jax.Array:
    """[] bool: step ``pos``'s observation has the same keys and (Python-)equal values as step
    ``other``'s, api aside (api ids compare separately)."""
    safe = jnp.maximum(other, 0)
    return (
        (other >= 0)
        & jnp.all(episode.field_present[pos] == episode.field_present[safe])
        & jnp.all(jnp.where(episode.field_present[pos], episode.field_value[pos] == episode.field_value[safe], True))
    )
