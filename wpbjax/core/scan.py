"""One run: one policy on one episode at one budget (arrays without the N axis), as a scan over its
steps -- ``step`` (act, then the store applies the action), ``advance`` (a range of steps), ``rollout``
(the final store), ``run_counts`` -- and the helpers that key and place batches of runs on devices.

:mod:`wpbjax.core.rollout` vmaps these over budgets, episodes and params into compiled programs;
:mod:`wpbjax.core.segments` runs long episodes a segment of steps at a time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.policies.base import Policy
from wpbjax.scoring import metrics
from wpbjax.state import actions, store as store_lib

# The names of the vmapped axes of a call's runs (episodes, budgets; a param grid's points between them),
# which the rollout's programs give so that a multi-action policy's CONTINUE loop can ask whether any run
# acts again (see step).
RUN_AXES = ("run_episodes", "run_budgets")
GRID_RUN_AXES = ("run_episodes", "run_points", "run_budgets")


def _act_and_apply(policy: Policy, params, episode: EpisodeBatch, pos, budget, store, state, active=True):
    """The policy acts and the store applies its action; where ``active`` is False, a masked action."""
    action, state = policy.act(params, state, store, episode, pos, budget)
    # Make every read the policy made an ancestor of the store update (through action.kind), so
    # XLA can update carried arrays in place instead of copying them (docs/performance.md).
    action, state = jax.lax.optimization_barrier((action, state))
    # Padding steps do nothing: mask the action rather than select over the whole store.
    action = actions.mask(action, episode.valid[pos] & active)
    return action, store_lib.apply(store, action, episode, pos, budget, policy.features), state


def step(policy: Policy, params, episode: EpisodeBatch, budget, store, state, pos, batch_axes: tuple = ()):
    """One step of the rollout: (store, state) before step ``pos`` -> after it (one episode, one budget).

    ``batch_axes``: the names of the vmapped axes this run is one of, where the caller named them (the
    rollout's programs do): a multi-action policy's CONTINUE loop then runs while any run of the batch
    acts again, and the runs that do not leave their store as it was through a masked action (see
    :func:`_act_again_masked`). Without names, vmap's own rule for a loop whose condition differs from run
    to run keeps every carried array of a run that stopped by a select, which copies it at each turn."""
    store = store_lib.flush(store, pos, policy.features)  # last step's item, before any read
    action, store, state = _act_and_apply(policy, params, episode, pos, budget, store, state)
    if policy.multi_action and batch_axes:
        return _act_again_masked(policy, params, episode, pos, budget, action, store, state, batch_axes)
    if policy.multi_action:
        # CONTINUE: the policy acts again at this step (at most once per stored item).
        def again(loop):
            return actions.acts_again(loop[0].kind)  # CONTINUE, or WRITE_PAST (policy zoo)

        def act_again(loop):
            _, store, state = loop
            return _act_and_apply(policy, params, episode, pos, budget, store, state)

        _, store, state = jax.lax.while_loop(again, act_again, (action, store, state))
    return store, state


def _act_again_masked(policy: Policy, params, episode: EpisodeBatch, pos, budget, action, store, state, batch_axes):
    """The CONTINUE loop of a run vmapped over ``batch_axes``: while any run of the batch acts again, every
    run acts; a run that does not has its action masked, which leaves the store's arrays as they were
    (each of their writes is conditional on the action), and keeps its store's scalars and its policy
    state by a select. The condition, a sum over the batch, is the same for every run, so vmap adds no
    select of its own over the store's [T] arrays, and XLA updates them in place."""

    def acting(action):
        return actions.acts_again(action.kind)  # CONTINUE, or WRITE_PAST (policy zoo)

    def again(loop):
        return jax.lax.psum(acting(loop[0]).astype(jnp.int32), batch_axes) > 0

    def act_again(loop):
        previous, store, state = loop
        go = acting(previous)
        action, new_store, new_state = _act_and_apply(policy, params, episode, pos, budget, store, state, go)
        new_store = jax.tree_util.tree_map(
            lambda new, old: new if new.ndim else jnp.where(go, new, old), new_store, store
        )
        new_state = jax.tree_util.tree_map(lambda new, old: jnp.where(go, new, old), new_state, state)
        return action, new_store, new_state

    _, store, state = jax.lax.while_loop(again, act_again, (action, store, state))
    return store, state


def initial_carry(policy: Policy, params, episode: EpisodeBatch, budget, key, fast_trace: bool = False) -> tuple:
    """(empty store, policy state): a rollout's first carry.

    ``fast_trace`` marks every leaf as varying with the budget and the episode from the start (a
    select XLA removes). vmap's scan rule then traces the step once per vmap level instead of twice
    (the second pass finds which carried leaves vary), so it traces faster. But leaves that never
    vary, such as no_mem's empty store, become per-run work and the cheap policies run slower
    (docs/performance.md), so only the quick build, for small sweeps, uses it."""
    initial = (store_lib.empty(episode.valid.shape[0], policy.features), policy.init(params, episode, key))
    if not fast_trace:
        return initial
    varies = (budget >= 0) | episode.valid[0]
    return jax.tree_util.tree_map(
        lambda leaf: leaf if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) else jnp.where(varies, leaf, leaf),
        initial,
    )


def advance(
    policy: Policy, params, episode: EpisodeBatch, budget, carry: tuple, first, stop, batch_axes: tuple = ()
) -> tuple:
    """Steps ``first .. stop-1`` of a rollout: the carry (store, policy state) before step ``first``
    -> after step ``stop - 1``. Python-int bounds compile to a scan; traced bounds to a loop that
    serves every segment of a long rollout (:func:`wpbjax.core.segments.simulate_in_segments`)."""
    budget = jnp.asarray(budget, jnp.int32)
    return jax.lax.fori_loop(
        first, stop, lambda pos, carry: step(policy, params, episode, budget, *carry, pos, batch_axes), carry
    )


def rollout(
    policy: Policy, params, episode: EpisodeBatch, budget, key, fast_trace: bool = False, batch_axes: tuple = ()
) -> store_lib.StoreState:
    """Final store of one policy on one episode (arrays without the N axis) at one budget
    (``fast_trace``: see :func:`initial_carry`; ``batch_axes``: see :func:`step`; the same store either way)."""
    n_steps = episode.valid.shape[0]
    carry = initial_carry(policy, params, episode, budget, key, fast_trace)
    final, _ = advance(policy, params, episode, budget, carry, 0, n_steps, batch_axes)
    return store_lib.finish(final, n_steps, policy.features)


def run_counts(
    policy: Policy, params, episode: EpisodeBatch, budget, key, fast_trace: bool = False, batch_axes: tuple = ()
) -> metrics.Counts:
    return metrics.count(rollout(policy, params, episode, budget, key, fast_trace, batch_axes), episode)


def episode_keys(key, episode_index) -> jax.Array:
    """[N] keys: ``key`` (None: ``jax.random.key(0)``) folded with each episode's index ([N] ints).
    Called inside the compiled programs (outside, each key op would compile a small program)."""
    key = jax.random.key(0) if key is None else key
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, jnp.asarray(episode_index, jnp.uint32))
