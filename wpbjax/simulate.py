"""Rollouts: ``lax.scan`` over steps, ``vmap`` over budgets, episodes and policy params.

Shapes (T steps, F fields, R priority levels, A apis) and the policy are static; budgets and
params are traced, so a new budget grid or parameter value never recompiles.
"""
from __future__ import annotations

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


def rollout(policy: Policy, params, episode: EpisodeBatch, budget, key) -> store_lib.StoreState:
    """Final store of one policy on one episode (arrays without the N axis) at one budget."""
    n_steps = episode.valid.shape[0]
    budget = jnp.asarray(budget, jnp.int32)

    def step(carry, pos):
        store, state = carry
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
        return (store, state), None

    initial = (store_lib.empty(n_steps), policy.init(params, episode, key))
    (final, _), _ = jax.lax.scan(step, initial, jnp.arange(n_steps))
    return store_lib.flush(final, n_steps, policy.kinds)


def run_counts(policy: Policy, params, episode: EpisodeBatch, budget, key) -> metrics.Counts:
    return metrics.count(rollout(policy, params, episode, budget, key), episode)


def _simulate_batch(policy: Policy, params, batch: EpisodeBatch, budgets, keys) -> metrics.Counts:
    over_budgets = jax.vmap(run_counts, in_axes=(None, None, None, 0, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0))
    return over_episodes(policy, params, batch, budgets, keys)


_simulate = jax.jit(_simulate_batch, static_argnums=0)
# The same program compiled with XLA's backend optimisation off: compiles in about half the time and
# runs about 2.4x slower (measured on CPU), so it wins below ~10M run-steps of work per compile --
# the paper grid (88k run-steps per policy and track) spends nearly all its time compiling.
_simulate_quick = jax.jit(_simulate_batch, static_argnums=0, compiler_options={"xla_backend_optimization_level": 0})
QUICK_COMPILE_BELOW = 10_000_000  # run-steps


def compiled_count() -> int:
    """Programs compiled so far by :func:`simulate` (both builds): tests use it to catch retracing."""
    return _simulate._cache_size() + _simulate_quick._cache_size()


def simulate(policy: Policy, batch: EpisodeBatch, budgets, params=None, key=None, episode_index=None,
             work: int | None = None) -> metrics.Counts:
    """Counts for every (episode, budget): leaves shaped ``[N, B, ...]``.

    ``budgets``: [B] ints (bytes); ``params``: overrides of the policy's default params (name -> value);
    ``key``: a ``jax.random.key`` for stochastic policies, folded with each episode's index
    (``episode_index``: [N] ints, default 0..N-1) so results do not depend on how a sweep is chunked.
    ``work``: run-steps the caller will run with this compiled program (default: this call's,
    N·B·T); below ``QUICK_COMPILE_BELOW`` a quicker-compiling, slower-running build is used.
    Both builds give identical results.
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
    if work is None:
        work = batch.n_episodes * budgets.shape[0] * batch.valid.shape[1]
    compiled = _simulate_quick if work < QUICK_COMPILE_BELOW else _simulate
    return compiled(policy, params, batch, budgets, keys)
