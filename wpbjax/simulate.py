"""Rollouts: ``lax.scan`` over steps, ``vmap`` over budgets, episodes and policy params.

Shapes (T steps, F fields, R priority levels, A apis) and the policy are static; budgets and
params are traced, so a new budget grid or parameter value never recompiles.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from wpbjax import actions, metrics, store as store_lib
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.policies.base import Policy


def _act_and_apply(policy: Policy, params, episode: EpisodeBatch, pos, budget, store, state):
    action, state = policy.act(params, state, store, episode, pos, budget)
    # Make every read the policy made an ancestor of the store update (through action.kind), so
    # XLA can update carried arrays in place instead of copying them (faster for evicting policies).
    action, state = jax.lax.optimization_barrier((action, state))
    # Padding steps do nothing: mask the action rather than select over the whole store.
    real = episode.valid[pos]
    action = actions.mask(action, real)
    return action, store_lib.apply(store, action, episode, pos, budget, policy.kinds), state


def _step(policy: Policy, params, episode: EpisodeBatch, budget, store, state, pos):
    """One step of the rollout: (store, state) before step ``pos`` -> after it."""
    store = store_lib.flush(store, pos, policy.kinds)  # last step's item, before any read
    action, store, state = _act_and_apply(policy, params, episode, pos, budget, store, state)
    if policy.multi_action:
        # CONTINUE: the policy acts again at this step (at most once per stored item).
        def again(loop):
            return loop[0].kind == actions.CONTINUE

        def act_again(loop):
            _, store, state = loop
            return _act_and_apply(policy, params, episode, pos, budget, store, state)

        _, store, state = jax.lax.while_loop(again, act_again, (action, store, state))
    return store, state


def rollout(policy: Policy, params, episode: EpisodeBatch, budget, key) -> store_lib.StoreState:
    """Final store of one policy on one episode (arrays without the N axis) at one budget."""
    n_steps = episode.valid.shape[0]
    budget = jnp.asarray(budget, jnp.int32)

    def step(carry, pos):
        return _step(policy, params, episode, budget, *carry, pos), None

    initial = (store_lib.empty(n_steps), policy.init(params, episode, key))
    (final, _), _ = jax.lax.scan(step, initial, jnp.arange(n_steps))
    return store_lib.flush(final, n_steps, policy.kinds)


def run_counts(policy: Policy, params, episode: EpisodeBatch, budget, key) -> metrics.Counts:
    return metrics.count(rollout(policy, params, episode, budget, key), episode)


@functools.partial(jax.jit, static_argnums=0)
def _simulate(policy: Policy, params, batch: EpisodeBatch, budgets, keys) -> metrics.Counts:
    over_budgets = jax.vmap(run_counts, in_axes=(None, None, None, 0, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0))
    return over_episodes(policy, params, batch, budgets, keys)


def simulate(policy: Policy, batch: EpisodeBatch, budgets, params=None, key=None, episode_index=None) -> metrics.Counts:
    """Counts for every (episode, budget): leaves shaped ``[N, B, ...]``.

    ``budgets``: [B] ints (bytes); ``params``: overrides of the policy's default params (name -> value);
    ``key``: a ``jax.random.key`` for stochastic policies, folded with each episode's index
    (``episode_index``: [N] ints, default 0..N-1) so results do not depend on how a sweep is chunked.
    """
    budgets = jnp.asarray(budgets, jnp.int32)
    if budgets.ndim != 1:
        raise ValueError(f"budgets must be a 1-D list of byte counts; got shape {budgets.shape}")
    params = policy.resolve_params(params or {})
    if key is None:
        key = jax.random.key(0)
    if episode_index is None:
        episode_index = jnp.arange(batch.n_episodes)
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, jnp.asarray(episode_index, jnp.uint32))
    return _simulate(policy, params, batch, budgets, keys)


# --- Per-step traces (off by default: only these functions compute them) ---------------------------

@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Trace:
    """The store after every step of one run (leaves gain leading [N, B] axes from :func:`simulate_trace`)."""

    retained: jax.Array    # [T, ceil(T/8)] uint8 bit-packed W after step t (exact utility-to-date on host)
    bytes_used: jax.Array  # [T] int32 bytes in use after step t
    n_hit: jax.Array       # [T] int32 |W ∩ R| after step t


def rollout_trace(policy: Policy, params, episode: EpisodeBatch, budget, key) -> tuple[store_lib.StoreState, Trace]:
    """:func:`rollout` that also records the retained set after every step. The same step function;
    O(T) extra work per step (the retained set is re-derived), so keep it for analysis runs."""
    n_steps = episode.valid.shape[0]
    budget = jnp.asarray(budget, jnp.int32)

    def step(carry, pos):
        store, state = _step(policy, params, episode, budget, *carry, pos)
        settled = store_lib.flush(store, pos + 1, policy.kinds)  # this step's item in place (not carried)
        kept = metrics.retained_mask(settled, episode)
        trace = Trace(retained=jnp.packbits(kept), bytes_used=settled.used,
                      n_hit=(kept & episode.critical).sum(dtype=jnp.int32))
        return (store, state), trace

    initial = (store_lib.empty(n_steps), policy.init(params, episode, key))
    (final, _), trace = jax.lax.scan(step, initial, jnp.arange(n_steps))
    return store_lib.flush(final, n_steps, policy.kinds), trace


@functools.partial(jax.jit, static_argnums=0)
def _simulate_trace(policy: Policy, params, batch: EpisodeBatch, budgets, keys) -> Trace:
    def run(policy, params, episode, budget, key):
        return rollout_trace(policy, params, episode, budget, key)[1]

    over_budgets = jax.vmap(run, in_axes=(None, None, None, 0, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0))
    return over_episodes(policy, params, batch, budgets, keys)


def simulate_trace(policy: Policy, batch: EpisodeBatch, budgets, params=None, key=None, episode_index=None) -> Trace:
    """Per-step traces for every (episode, budget): leaves shaped ``[N, B, T, ...]``. Arguments as
    :func:`simulate` (same keys per episode, so the last step matches its counts)."""
    budgets = jnp.asarray(budgets, jnp.int32)
    if budgets.ndim != 1:
        raise ValueError(f"budgets must be a 1-D list of byte counts; got shape {budgets.shape}")
    params = policy.resolve_params(params or {})
    if key is None:
        key = jax.random.key(0)
    if episode_index is None:
        episode_index = jnp.arange(batch.n_episodes)
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, jnp.asarray(episode_index, jnp.uint32))
    return _simulate_trace(policy, params, batch, budgets, keys)
