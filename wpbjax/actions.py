"""Action: what a policy emits — at most one EXPIRE target, then a main action.

A step's actions are applied in the order emitted (SEMANTICS §3). Each ``Action`` carries one
EXPIRE (``expire_slot``, emitted ``n_expire`` times: last_kb's quirk names the same item several
times and only the first can succeed), then its main action. ``CONTINUE`` as the main action
means "apply the expire and call the policy again at this step", which is how a policy emits
several EXPIREs of different items (priority_greedy's walk) while every call stays O(1).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

SKIP, WRITE, MERGE, CONTINUE = 0, 1, 2, 3


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Action:
    expire_slot: jax.Array  # [] int32 slot (step position) to EXPIRE first, -1 for none
    n_expire: jax.Array     # [] int32 EXPIRE actions emitted for it (counted even if rejected)
    kind: jax.Array         # [] int32 SKIP, WRITE, MERGE or CONTINUE
    target: jax.Array       # [] int32 merge target slot (-1 when not a MERGE)


def _action(kind, expire_slot=-1, n_expire=0, target=-1) -> Action:
    return Action(expire_slot=jnp.asarray(expire_slot, jnp.int32), n_expire=jnp.asarray(n_expire, jnp.int32),
                  kind=jnp.asarray(kind, jnp.int32), target=jnp.asarray(target, jnp.int32))


def skip() -> Action:
    return _action(SKIP)


def write(expire_slot=-1, n_expire=0) -> Action:
    return _action(WRITE, expire_slot, n_expire)


def merge(target, expire_slot=-1, n_expire=0) -> Action:
    return _action(MERGE, expire_slot, n_expire, target)


def expire_and_continue(slot) -> Action:
    """EXPIRE ``slot`` once, then ask the policy again at the same step."""
    return _action(CONTINUE, slot, 1)


def write_if(condition, expire_slot=-1, n_expire=0) -> Action:
    """WRITE when ``condition`` holds, else SKIP (dropping the expire too)."""
    return select(condition, write(expire_slot, n_expire), skip())


def select(condition, if_true: Action, if_false: Action) -> Action:
    """Elementwise choice between two actions (traced ``condition``)."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(condition, a, b), if_true, if_false)
