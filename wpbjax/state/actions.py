"""Action: what a policy emits — a few EXPIRE targets, then a main action.

A step's actions are applied in the order emitted (SEMANTICS §3). Each ``Action`` carries up to K
EXPIREs (``expire_slots``, NONE (-1) for none; K is fixed per policy, 1 unless it needs more) applied in
order, then its main action. ``n_expire`` counts the EXPIREs *emitted*: last_kb's quirk names the
same item several times and only the first can succeed. ``CONTINUE`` as the main action means
"apply the expires and call the policy again at this step", for walks longer than K.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE

SKIP, WRITE, MERGE, CONTINUE = 0, 1, 2, 3
# WRITE_PAST(source): write the buffered step ``source`` (<= the current step; its item is keyed by
# ``source`` and costs that step's write cost), then act again at this step, so one step may write
# several buffered steps (deferred_batch). Needs ``multi_action`` and "write_past" in the policy's ``emits``.
WRITE_PAST = 4


# What a policy declares (checked when the Policy is made: a typo must not silently compile store code out).
# The store compiles code only for the features a policy declares (wpbjax.state.store.apply): the actions it
# emits (``Policy.emits``) and how the store keeps its items for it (``Policy.layout``).
EMIT_WRITE, EMIT_EXPIRE, EMIT_MERGE = "write", "expire", "merge"
EMIT_WRITE_PAST = "write_past"  # it emits actions.write_past (needs multi_action)
EMITS = (EMIT_WRITE, EMIT_EXPIRE, EMIT_MERGE, EMIT_WRITE_PAST)
ORDER = "order"  # it reads the store's oldest-first links (``oldest``/``newer``/``older``) after expiring
FIFO = "fifo"  # instead of ORDER: it only ever expires the oldest item (a cheaper forward chain)
# Instead of FIFO: FIFO, and it reads ``held`` (``cost_of``) only at ``oldest`` or a newer item, never
# ``present`` or ``holds``: the store then leaves an expired slot in ``held`` until the rollout ends
# (wpbjax.state.store.settle; a slot before ``oldest`` holds nothing), so an EXPIRE writes no [T] array at
# a position that differs from run to run (under vmap a scatter, which XLA:CPU runs as a loop over runs).
# It also acts once per step (not multi_action) with at most one EXPIRE (K = 1), which takes effect at the
# next step's flush, like its added item. With ORDER (wpbjax.testing.check_policy's every-feature store), ORDER's
# exact store is kept.
OLDEST_ONLY = "oldest_only"
# Not a policy's own: a caller adds it (wpbjax.simulate, history=True) to have the store record when
# each slot's item was added and left, the history reads are scored on (wpbjax.scoring.reads).
HISTORY = "history"
LAYOUTS = (ORDER, FIFO, OLDEST_ONLY, HISTORY)
# The defaults: a policy that declares nothing may emit every action but write_past and read the links
ALL_EMITS = frozenset({EMIT_WRITE, EMIT_EXPIRE, EMIT_MERGE})
DEFAULT_LAYOUT = frozenset({ORDER})
ALL_FEATURES = ALL_EMITS | DEFAULT_LAYOUT  # the store code a policy of the defaults compiles


def check_names(names, known: tuple, field: str, where: str = "policy") -> frozenset:
    """``names`` (``emits`` or ``layout``) as a frozenset of ``known`` names; a ValueError names any other."""
    if isinstance(names, str):
        raise ValueError(f"{where}: {field} must be a set of names, not the string {names!r}")
    names = frozenset(names)
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(
            f"{where}: unknown {field} {', '.join(map(repr, unknown))}; {field} names are {', '.join(known)}"
        )
    if OLDEST_ONLY in names and FIFO in names:
        raise ValueError(f"{where}: {field} {OLDEST_ONLY!r} is instead of {FIFO!r}, not with it")
    return names


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Action:
    expire_slots: jax.Array  # [K] int32 slots (step positions) to EXPIRE first, in order; -1 for none
    n_expire: jax.Array  # []  int32 EXPIRE actions emitted (counted even if rejected)
    kind: jax.Array  # [] int32 SKIP, WRITE, MERGE, CONTINUE or WRITE_PAST
    target: jax.Array  # [] int32 merge target slot, or WRITE_PAST's source step (-1 otherwise)
    merge_cost: jax.Array  # [] int32 a MERGE's quoted delta bytes, 0 if the quote is not acceptable
    #          (set only by :func:`merge`, from ``store.quote_merge``)


def _action(kind, expire_slots=NONE, n_expire=0, target=NONE, merge_cost=0) -> Action:
    return Action(
        expire_slots=jnp.atleast_1d(jnp.asarray(expire_slots, jnp.int32)),
        n_expire=jnp.asarray(n_expire, jnp.int32),
        kind=jnp.asarray(kind, jnp.int32),
        target=jnp.asarray(target, jnp.int32),
        merge_cost=jnp.asarray(merge_cost, jnp.int32),
    )


def skip() -> Action:
    return _action(SKIP)


def write(expire_slots=NONE, n_expire=0) -> Action:
    return _action(WRITE, expire_slots, n_expire)


def merge(quote, expire_slots=NONE, n_expire=0) -> Action:
    """MERGE into ``quote.target``; ``quote`` from ``wpbjax.state.store.quote_merge`` at this step."""
    return _action(MERGE, expire_slots, n_expire, quote.target, jnp.where(quote.acceptable, quote.cost, 0))


def expire_and_continue(slots, n_expire=1) -> Action:
    """EXPIRE ``slots``, then ask the policy again at the same step."""
    return _action(CONTINUE, slots, n_expire)


def write_past(source, expire_slots=NONE, n_expire=0) -> Action:
    """EXPIRE ``expire_slots``, WRITE the earlier (or current) step ``source``, then act again."""
    return _action(WRITE_PAST, expire_slots, n_expire, source)


def expire_only(slots, n_expire=1) -> Action:
    """EXPIRE ``slots`` and end the step (SKIP as the main action)."""
    return _action(SKIP, slots, n_expire)


def acts_again(kind) -> jax.Array:
    """[] bool: the rollout calls the policy again at this step after this action."""
    return (kind == CONTINUE) | (kind == WRITE_PAST)


def write_if(condition, expire_slots=NONE, n_expire=0) -> Action:
    """WRITE when ``condition`` holds, else SKIP (dropping the expires too)."""
    return select(condition, write(expire_slots, n_expire), skip())


def mask(action: Action, real) -> Action:
    """The action where ``real``, else a SKIP with no expires (any K)."""
    return Action(
        expire_slots=jnp.where(real, action.expire_slots, NONE),
        n_expire=jnp.where(real, action.n_expire, 0),
        kind=jnp.where(real, action.kind, SKIP),
        target=jnp.where(real, action.target, NONE),
        merge_cost=jnp.where(real, action.merge_cost, 0),
    )


def select(condition, if_true: Action, if_false: Action) -> Action:
    """Elementwise choice between two actions (traced ``condition``); K is the larger of the two."""
    k = max(if_true.expire_slots.shape[0], if_false.expire_slots.shape[0])
    pad = lambda slots: jnp.pad(slots, (0, k - slots.shape[0]), constant_values=NONE)  # noqa: E731
    if_true = dataclasses.replace(if_true, expire_slots=pad(if_true.expire_slots))
    if_false = dataclasses.replace(if_false, expire_slots=pad(if_false.expire_slots))
    return jax.tree_util.tree_map(lambda a, b: jnp.where(condition, a, b), if_true, if_false)
