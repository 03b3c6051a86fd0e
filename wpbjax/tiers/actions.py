"""What a tiered policy emits (docs/tiers.md): a :class:`TierAction` per step, applied by
:func:`wpbjax.tiers.store.tier_apply`."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TierAction:
    """What a tiered policy emits at step ``pos``: applied in this order by the store."""

    journal: jax.Array  # []  bool  append step pos's raw record to the journal
    delete: jax.Array  # [K] int32 checkpoint items to delete outright (-1 none)
    demote: jax.Array  # [K] int32 checkpoint items to move to the journal (-1 none)
    add: jax.Array  # [K] int32 steps <= pos to add to the checkpoint, in order (a promote where journaled; -1 none)


def tier_action(journal=False, delete=NONE, demote=NONE, add=NONE) -> TierAction:
    as_slots = lambda slots: jnp.atleast_1d(jnp.asarray(slots, jnp.int32))  # noqa: E731
    return TierAction(
        journal=jnp.asarray(journal, bool), delete=as_slots(delete), demote=as_slots(demote), add=as_slots(add)
    )


def mask_tier(action: TierAction, real) -> TierAction:
    """``action`` where ``real``, else no action (a padding step)."""
    return TierAction(
        journal=action.journal & real,
        delete=jnp.where(real, action.delete, NONE),
        demote=jnp.where(real, action.demote, NONE),
        add=jnp.where(real, action.add, NONE),
    )
