"""Tiered policies (docs/tiers.md): they emit :class:`wpbjax.tiers.actions.TierAction` s; the store's tier rules
(:func:`wpbjax.tiers.store.tier_apply`) decide. Run them with :func:`wpbjax.tiers.engine.simulate_tiers`.

Every policy here shares one **triage** (cheap, no model call): a step passes iff it is real and carries
something new -- it has no api, or its fields differ from the last step seen with its api (an identical
re-observation adds no (fact, version) pair). And one **distillation** rule for the checkpoint: it keeps
the newest version of each fact (``fact_key[:, 0]``; a step without a fact is its own), superseding the
previous one only when the new item fits in its place (else the old version stays, stale but present).

* ``journal_and_checkpoint``: journals every step that passes triage, checkpoints it, *demotes* the
  superseded version (its record is in the journal, so this costs no bytes), and consolidates every
  ``consolidate_every`` steps (wpbjax.tiers.store.consolidate: promotes a fact's newest journaled version that
  did not fit when it arrived).
* ``checkpoint_only``: the same checkpoint, no journal: the superseded version is *deleted*.
* ``journal_only``: journals every step that passes triage; no checkpoint.
* ``deferred_checkpoint``: buffers the steps that pass triage and checkpoints them (the newest of each
  fact) at the end of each session of ``window`` steps -- the blog's deferred write; a crash loses the
  buffer (``lost_at_crash``).
* ``deferred_journaled``: the same, but journals each step as it arrives and consolidates at every
  session end: a crash loses nothing (the next pass rebuilds the checkpoint from the journal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.common.constants import NONE
from wpbjax.policies.common import fields_equal
from wpbjax.state import store as store_lib
from wpbjax.tiers import actions as tier_actions, store as tier_store

MAX_BUFFER = 32  # static size of a deferred policy's buffer; ``window`` is clipped to 1..MAX_BUFFER


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TierState:
    last_seen: jax.Array  # [A]   int32 the last step seen with each api (triage; -1 none)
    newest: jax.Array  # [T*K] int32 per fact: the step of the version the policy checkpointed (-1 none)
    buffer: jax.Array  # [MAX_BUFFER] int32 steps buffered for the next session-end flush (-1 none)


@dataclasses.dataclass(frozen=True, eq=False)
class TierPolicy:
    """A tiered policy: ``act(params, state, store, episode, pos, checkpoint_budget) -> (TierAction, state)``.
    ``params``: defaults (ints or floats); ``consolidate_every`` (0: never) is read by the engine."""

    name: str
    act: Callable[..., Any]
    params: dict = dataclasses.field(default_factory=dict)
    doc: str = ""
    # per-run inputs: (write_cost [n, T], utility [n, T], length [n], (checkpoint [R], journal [R])) ->
    # name -> [n, R, ...] (a Python policy's action log, wpbjax.host.tiers); None: none
    plan: Callable[..., dict] | None = None

    def resolve_params(self, overrides: dict) -> dict:
        unknown = sorted(set(overrides) - set(self.params))
        if unknown:
            raise ArgumentError(
                f"{arg('params')}: tier policy {self.name!r} has no param {', '.join(unknown)}; "
                f"its params: {', '.join(self.params) or 'none'}"
            )
        return {
            name: jnp.asarray(overrides.get(name, default), jnp.int32 if isinstance(default, int) else jnp.float32)
            for name, default in self.params.items()
        }


def init(episode) -> TierState:
    n_facts = episode.fact_key.shape[0] * episode.fact_key.shape[1]
    return TierState(
        last_seen=jnp.full(episode.api_ids.shape[-1], NONE, jnp.int32),
        newest=jnp.full(n_facts, NONE, jnp.int32),
        buffer=jnp.full(MAX_BUFFER, NONE, jnp.int32),
    )


def triage(state: TierState, episode, pos) -> tuple:
    """(passes [] bool, state with ``last_seen`` updated): the step carries something new (module note)."""
    api = episode.api_index[pos]
    previous = jnp.where(api >= 0, state.last_seen[jnp.maximum(api, 0)], NONE)
    passes = episode.valid[pos] & ((api < 0) | ~fields_equal(episode, pos, previous))
    return passes, dataclasses.replace(state, last_seen=store_lib.set_where(state.last_seen, api, pos, api >= 0))


def _supersede(state: TierState, store: tier_store.TierStore, episode, pos, passes, budget) -> tuple:
    """(old, replace, state): the checkpointed version of this step's fact (-1 none) and whether the step
    replaces it (it passes triage and fits once the old version's bytes are freed)."""
    fact = episode.fact_key[pos, 0]
    old = jnp.where(fact >= 0, state.newest[jnp.maximum(fact, 0)], NONE)
    old_held = (old >= 0) & store.in_checkpoint[jnp.maximum(old, 0)]
    freed = jnp.where(old_held, episode.write_cost[jnp.maximum(old, 0)], 0)
    replace = passes & store_lib.fits(store.checkpoint_used - freed, episode.write_cost[pos], budget)
    state = dataclasses.replace(state, newest=store_lib.set_where(state.newest, fact, pos, replace))
    return jnp.where(replace & old_held, old, NONE), replace, state


def journal_and_checkpoint_act(params, state, store, episode, pos, budget):
    passes, state = triage(state, episode, pos)
    old, replace, state = _supersede(state, store, episode, pos, passes, budget)
    return tier_actions.tier_action(journal=passes, demote=old, add=jnp.where(replace, pos, NONE)), state


def checkpoint_only_act(params, state, store, episode, pos, budget):
    passes, state = triage(state, episode, pos)
    old, replace, state = _supersede(state, store, episode, pos, passes, budget)
    return tier_actions.tier_action(delete=old, add=jnp.where(replace, pos, NONE)), state


def journal_only_act(params, state, store, episode, pos, budget):
    passes, state = triage(state, episode, pos)
    return tier_actions.tier_action(journal=passes), state


def _flush(state: TierState, store, episode, journaled: bool) -> tuple:
    """(delete, demote, add [MAX_BUFFER] each, state): checkpoint the newest buffered step of each fact,
    superseding the version checkpointed before (demoted if ``journaled``, else deleted)."""
    steps = state.buffer
    safe = jnp.maximum(steps, 0)
    fact = jnp.where(steps >= 0, episode.fact_key[safe, 0], NONE)
    later_same = (fact[:, None] == fact[None, :]) & (fact[:, None] >= 0) & (steps[None, :] > steps[:, None])
    keep = (steps >= 0) & ~later_same.any(1)  # O(MAX_BUFFER^2): the buffer is small and static
    old = jnp.where(keep & (fact >= 0), state.newest[jnp.maximum(fact, 0)], NONE)
    old = jnp.where((old >= 0) & store.in_checkpoint[jnp.maximum(old, 0)], old, NONE)
    newest = state.newest.at[jnp.where(keep & (fact >= 0), fact, state.newest.shape[0])].set(steps, mode="drop")
    order = jnp.argsort(jnp.where(keep, steps, jnp.iinfo(jnp.int32).max))  # oldest first
    add = jnp.where(keep, steps, NONE)[order]
    none = jnp.full_like(old, NONE)
    delete, demote = (none, old) if journaled else (old, none)
    return delete, demote, add, dataclasses.replace(state, newest=newest, buffer=jnp.full_like(steps, NONE))


def _deferred(journaled: bool):
    def act(params, state, store, episode, pos, budget):
        passes, state = triage(state, episode, pos)
        window = jnp.clip(params["window"], 1, MAX_BUFFER)
        state = dataclasses.replace(state, buffer=store_lib.set_where(state.buffer, pos % window, pos, passes))
        session_end = ((pos + 1) % window == 0) | (pos == episode.length - 1)
        delete, demote, add, flushed = _flush(state, store, episode, journaled)
        action = tier_actions.tier_action(
            journal=passes & journaled,
            delete=jnp.where(session_end, delete, NONE),
            demote=jnp.where(session_end, demote, NONE),
            add=jnp.where(session_end, add, NONE),
        )
        return action, jax.tree_util.tree_map(lambda a, b: jnp.where(session_end, a, b), flushed, state)

    return act


JOURNAL_AND_CHECKPOINT = TierPolicy(
    "journal_and_checkpoint",
    journal_and_checkpoint_act,
    {"consolidate_every": 50},
    doc="journals every triaged step, checkpoints the newest version of each fact "
    "(demoting the old one), consolidates every P steps",
)
CHECKPOINT_ONLY = TierPolicy(
    "checkpoint_only",
    checkpoint_only_act,
    {"consolidate_every": 0},
    doc="checkpoints the newest version of each fact, deleting the old one; no journal",
)
JOURNAL_ONLY = TierPolicy(
    "journal_only", journal_only_act, {"consolidate_every": 0}, doc="journals every triaged step; no checkpoint"
)
DEFERRED_CHECKPOINT = TierPolicy(
    "deferred_checkpoint",
    _deferred(False),
    {"window": 20, "consolidate_every": 0},
    doc="buffers triaged steps, checkpoints them at each session end; a crash loses the buffer",
)
DEFERRED_JOURNALED = TierPolicy(
    "deferred_journaled",
    _deferred(True),
    {"window": 20, "consolidate_every": 20},
    doc="deferred_checkpoint that journals each step at once and consolidates at session ends",
)
TIER_POLICIES = {
    policy.name: policy
    for policy in (JOURNAL_AND_CHECKPOINT, CHECKPOINT_ONLY, JOURNAL_ONLY, DEFERRED_CHECKPOINT, DEFERRED_JOURNALED)
}


_REGISTERED: dict[str, TierPolicy] = {}  # tier policies made at run time (a Python policy's replay)


def register_tier_policy(policy: TierPolicy) -> None:
    """Make ``policy`` a tier policy a tiered sweep resolves by its name (replacing one of that name)."""
    _REGISTERED[policy.name] = policy


def get_tier_policy(name: str) -> TierPolicy:
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name.startswith("py:"):
        raise ArgumentError(
            f"{arg('policies')}: tier policy {name}: a Python policy runs through wj.run_python_policy or wpbjax "
            f"sweep --policies py:MODULE:NAME (it is driven on the host first)"
        )
    if name not in TIER_POLICIES:
        raise ArgumentError(
            f"{arg('policies')}: a tiered sweep takes tier policies, one of {', '.join(TIER_POLICIES)}; got {name!r}"
        )
    return TIER_POLICIES[name]


# the tier line-up a tiered sweep runs for ``policies="published"`` (docs/tiers.md)
TIER_LINEUP = ("journal_and_checkpoint", "checkpoint_only", "journal_only")
