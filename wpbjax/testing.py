"""Conformance checks for policies: run :func:`check_policy` on your own policy (docs/policies.md).

    from wpbjax.testing import check_policy
    check_policy(MY_POLICY)          # raises AssertionError saying what is wrong

It checks, on a few generated episodes of every kind of the published generator:

1. *Declared features suffice*: the rows with the policy's ``emits`` and ``layout`` equal the rows with
   the defaults added (an action or layout left out compiles the store code for it out, and such actions
   are silently ignored).
2. *One trace per shape*: new budgets, new param values and other episodes of the same shape
   reuse the traced program (``chex.assert_max_traces``); params and budgets must stay traced.
3. *O(1) per step*: the compiled step's work (XLA's flop count) does not grow with the episode
   length T, and the traced rollout does not either (no Python loop over steps).

:func:`max_traces` counts the traces of one of the library's compiled programs in a block, and
:func:`count_compiles` the executables JAX builds (the test suite's recompile checks).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.tracks import cost_track, sees_utility
from wpbjax.core import rollout
from wpbjax.policies.base import Policy
from wpbjax.runtime import programs
from wpbjax.state import store as store_lib
from wpbjax.state.actions import ALL_EMITS, DEFAULT_LAYOUT

CHECK_BUDGETS = (300, 1024, 4096)
_CHECKS = itertools.count()
STEP_GROWTH_ALLOWED = 1.25
QUICK_COMPILE = {
    "xla_backend_optimization_level": 0
}  # checks run small batches: compile time dominates  # flops of a step at 4T over those at T (small constant terms aside)


def check_policy(policy: Policy | str, n_steps: int = 48, constant_step: bool = True) -> None:
    """Raise AssertionError unless ``policy`` (a Policy or a registered name) passes the checks of
    this module (on the last of its tracks). ``constant_step=False`` skips the O(1)-per-step check
    (for policies documented as O(T) per call)."""
    from wpbjax.policies import make

    policy = make(policy) if isinstance(policy, str) else policy
    assert isinstance(policy, Policy), f"check_policy: expected a Policy; got {type(policy).__name__}"
    track = policy.tracks[-1]  # the most informed track it runs on (a track changes costs and views only)
    batch, other = check_batches(track, n_steps)
    counts = _check_one_trace(policy, track, batch, other)
    _check_declared_suffice(policy, track, batch, counts)
    if constant_step:
        _check_constant_step(policy, track, n_steps)


def check_batches(track: str, n_steps: int, n_episodes: int = 4):
    """Two device batches of the same shape with different episodes (every published mode), as a
    sweep hands them to a policy on ``track`` (utility hidden where the track may not see it)."""
    from wpbjax.episodes.encode import concat_encoded, encode_episodes
    from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episode

    configs = [DriftConfig(mode=mode, steps=n_steps, seed=7) for mode in MODES]
    episodes = [generate_episode(configs[i % len(configs)], i) for i in range(2 * n_episodes)]
    encoded = concat_encoded(
        [
            encode_episodes(episodes[:n_episodes], n_steps=n_steps),
            encode_episodes(episodes[n_episodes:], n_steps=n_steps),
        ]
    )
    batches = []
    for part in (range(n_episodes), range(n_episodes, 2 * n_episodes)):
        batch = encoded.host_batch(cost_track(track), list(part))
        if not sees_utility(track):
            batch = dataclasses.replace(batch, utility=np.zeros_like(batch.utility))
        batches.append(jax.device_put(batch))
    return batches


def _check_declared_suffice(policy: Policy, track: str, batch, declared) -> None:
    """``declared``: the policy's counts on ``batch`` at CHECK_BUDGETS (default params, key 0)."""
    every = dataclasses.replace(policy, emits=policy.emits | ALL_EMITS, layout=policy.layout | DEFAULT_LAYOUT)
    expected = rollout.batch_counts(every, batch, CHECK_BUDGETS, key=jax.random.key(0), work=0)
    for field in dataclasses.fields(expected):
        ours, theirs = np.asarray(getattr(declared, field.name)), np.asarray(getattr(expected, field.name))
        assert np.array_equal(ours, theirs), (
            f"policy {policy.name!r} on {track}: {field.name} differs between its declared features "
            f"{sorted(policy.features)} and {sorted(every.features)}: declare every action it emits "
            f"(and layout 'order' if it reads store.oldest/newer/older after expiring)"
        )


def _perturbed(params: dict) -> dict:
    """Other values of the same dtypes (int32 params + 1, float32 params halved)."""
    return {name: value + 1 if value.dtype == np.int32 else value * np.float32(0.5) for name, value in params.items()}


def _check_one_trace(policy: Policy, track: str, batch, other):
    """Run three calls that must share one trace; returns the first call's counts."""
    budgets = np.asarray(CHECK_BUDGETS, np.int32)

    def run_inputs(batch, budgets):
        if policy.plan is None:
            return {}
        plan = policy.plan(
            np.asarray(batch.write_cost),
            np.asarray(batch.utility, np.float64),
            np.asarray(batch.length),
            np.asarray(budgets),
        )
        return {name: np.asarray(value) for name, value in plan.items()}

    def run(params, inputs, batch, budgets, key):
        over_budgets = jax.vmap(rollout.run_counts_with_inputs, in_axes=(None, None, 0, None, 0, None))
        over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, 0, None, 0))
        keys = rollout.episode_keys(key, jnp.arange(batch.valid.shape[0]))
        return over_episodes(policy, params, inputs, batch, budgets, keys)

    # chex counts traces per definition site and name: a name of its own gives this check its own count
    run.__name__ = f"check_policy_{next(_CHECKS)}"
    run = jax.jit(chex.assert_max_traces(run, n=1), compiler_options=QUICK_COMPILE)

    defaults = policy.default_params()
    calls = [(defaults, batch, budgets), (_perturbed(defaults), batch, budgets), (defaults, other, budgets[::-1] * 2)]
    try:
        results = [
            run(params, run_inputs(episodes, grid), episodes, grid, jax.random.key(0))
            for params, episodes, grid in calls
        ]
        return jax.block_until_ready(results[0])
    except AssertionError as err:
        raise AssertionError(
            f"policy {policy.name!r} on {track}: traced again for new budgets, params or "
            f"episodes of the same shape; keep them as traced arrays ({err})"
        ) from None


def _step_flops(policy: Policy, track: str, n_steps: int) -> float:
    """XLA's flop count of one compiled rollout step (act + store) at episode length ``n_steps``."""
    batch, _ = check_batches(track, n_steps, n_episodes=1)
    episode = jax.tree_util.tree_map(lambda leaf: leaf[0], batch)
    params = policy.default_params()
    if policy.plan is not None:
        plan = policy.plan(
            np.asarray(batch.write_cost),
            np.asarray(batch.utility, np.float64),
            np.asarray(batch.length),
            np.asarray([1024]),
        )
        params = {**params, **{name: jnp.asarray(np.asarray(value)[0, 0]) for name, value in plan.items()}}

    def step(episode, budget, pos):
        state = policy.init(params, episode, jax.random.key(0))
        return rollout.step(policy, params, episode, budget, store_lib.empty(n_steps), state, pos)

    cost = jax.jit(step).lower(episode, jnp.int32(1024), jnp.int32(3)).cost_analysis()  # of the HLO, uncompiled
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost.get("flops", 0.0))


def _check_constant_step(policy: Policy, track: str, n_steps: int) -> None:
    short, long = _step_flops(policy, track, n_steps), _step_flops(policy, track, 4 * n_steps)
    assert long <= STEP_GROWTH_ALLOWED * short + 64, (
        f"policy {policy.name!r}: a step does O(T) work ({short:.0f} flops at T={n_steps}, {long:.0f} at "
        f"T={4 * n_steps}); keep act O(1) per step (index the store and episode at a few positions, keep "
        f"running summaries in the policy state), or pass constant_step=False if that is intended"
    )


@contextlib.contextmanager
def max_traces(owner, name: str, n: int = 1):
    """Within the block, ``owner.name`` (a program made by :func:`wpbjax.runtime.programs.jit`, e.g.
    ``rollout._batch_counts_quick``) is a fresh program of the same function and options under
    ``chex.assert_max_traces(n)``: the block may trace it at most ``n`` times (compile once: n=1)."""
    original = getattr(owner, name)
    fn, options = programs.source(original)

    def counted(*args, **kwargs):
        return fn(*args, **kwargs)

    counted.__name__ = f"{name}_{next(_CHECKS)}"  # chex counts per site and name: its own count
    setattr(owner, name, jax.jit(chex.assert_max_traces(counted, n=n), **options))
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def count_compiles():
    """Within the block, count the executables JAX builds (compiled or loaded from the persistent
    cache), by program name (``"jit(_advance)"``): yields a ``collections.Counter`` it fills. Unlike
    :func:`max_traces` it also sees a program compiled again for differently placed inputs."""
    counts = collections.Counter()

    def listener(event: str, duration: float, fun_name: str = "", **_) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            counts[fun_name] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counts
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
