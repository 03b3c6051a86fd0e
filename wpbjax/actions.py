"""Action: what a policy emits at one step — a set of EXPIREs, then one main action.

Every baseline emits its EXPIREs before its WRITE/MERGE, so "expires first, then the main
action" reproduces "applied in the order emitted" (SEMANTICS §3). ``n_expire`` is the number
of EXPIRE actions *emitted* (the published counters count rejected ones too, and last_kb's
quirk emits the same EXPIRE several times).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

SKIP, WRITE, MERGE = 0, 1, 2


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Action:
    expire: jax.Array    # [T] bool  slots (step positions) to EXPIRE before the main action
    n_expire: jax.Array  # []  int32 EXPIRE actions emitted (for expire_actions)
    kind: jax.Array      # []  int32 SKIP, WRITE or MERGE
    target: jax.Array    # []  int32 merge target slot (-1 when not a MERGE)


def _action(n_steps: int, kind, expire=None, n_expire=0, target=-1) -> Action:
    if expire is None:
        expire = jnp.zeros(n_steps, bool)
    return Action(expire=expire, n_expire=jnp.asarray(n_expire, jnp.int32),
                  kind=jnp.asarray(kind, jnp.int32), target=jnp.asarray(target, jnp.int32))


def skip(n_steps: int) -> Action:
    return _action(n_steps, SKIP)


def write(n_steps: int, expire=None, n_expire=0) -> Action:
    return _action(n_steps, WRITE, expire, n_expire)


def merge(n_steps: int, target, expire=None, n_expire=0) -> Action:
    return _action(n_steps, MERGE, expire, n_expire, target)


def write_if(condition, n_steps: int, expire=None, n_expire=0) -> Action:
    """WRITE when ``condition`` holds, else SKIP (dropping the expires too)."""
    return select(condition, write(n_steps, expire, n_expire), skip(n_steps))


def select(condition, if_true: Action, if_false: Action) -> Action:
    """Elementwise choice between two actions (traced ``condition``)."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(condition, a, b), if_true, if_false)
