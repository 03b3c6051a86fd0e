"""Rollouts: ``lax.scan`` over steps, ``vmap`` over budgets, episodes and policy params.

Shapes (T steps, F fields, R priority levels, A apis) and the policy are static; budgets and
params are traced, so a new budget grid or parameter value never recompiles.

One compiled call runs its episodes in *passes* of a few hundred (a ``lax.map``): every step of a
rollout touches each run's store, so a pass whose runs' stores and episodes fit in the CPU cache
runs faster, and far more steadily, than one sweep over a large batch (docs/performance.md; see
:func:`episodes_per_pass`). On several devices each device makes its own passes (``shard_map``).

The public, scored entry point is :func:`wpbjax.api.simulate` (``wj.simulate``); this module is its engine.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.budgets import check_budgets
from wpbjax.core import segments
from wpbjax.core.scan import (  # noqa: F401 (re-exported)
    GRID_RUN_AXES,
    RUN_AXES,
    advance,
    episode_keys,
    initial_carry,
    rollout,
    run_counts,
    step,
)
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.policies.base import Policy
from wpbjax.runtime import devices as devices_lib, programs, traced
from wpbjax.scoring import metrics
from wpbjax.state import actions, store as store_lib

# --- Passes: cache-sized groups of episodes -------------------------------------------------------
PASS_CACHE_BYTES = 8 << 20  # working set of one pass: well inside a 32 MiB L3 shared with others
CACHE_BYTES_PER_RUN_STEP = 40  # store links and costs (16), policy state, the run's share of its episode
MIN_RUNS_PER_PASS = 256  # fewer, and per-step overheads outweigh the cache (docs/performance.md)


def episodes_per_pass(n_steps: int, n_runs_per_episode: int) -> int:
    """Episodes one pass holds: about PASS_CACHE_BYTES of working set, at least MIN_RUNS_PER_PASS runs.
    Why: a pass whose working set stays in cache runs the store-heavy policies steadily faster than one
    large pass (docs/performance.md, "Sweeps at scale")."""
    runs = max(PASS_CACHE_BYTES // (n_steps * CACHE_BYTES_PER_RUN_STEP), MIN_RUNS_PER_PASS)
    return max(runs // n_runs_per_episode, 1)


def _in_passes(fn, per_pass: int, *episode_trees):
    """``fn(*episode_trees)`` with leaves [N, ...] in, [N, ...] out, computed ``per_pass`` episodes
    at a time (the last pass padded with copies of the last episode)."""
    n = jax.tree_util.tree_leaves(episode_trees)[0].shape[0]
    if n == 1:
        # A lone episode runs beside a copy of itself: with a batch axis of size 1, XLA copies the
        # carried [1, B, T] store arrays every step (O(T) per step); with two episodes it updates them
        # in place (docs/performance.md, "Long episodes").
        doubled = jax.tree_util.tree_map(lambda leaf: jnp.concatenate([leaf, leaf]), episode_trees)
        return jax.tree_util.tree_map(lambda leaf: leaf[:1], fn(*doubled))
    if per_pass >= n:
        return fn(*episode_trees)
    n_passes = -(-n // per_pass)
    size = -(-n // n_passes)  # balanced passes: the padding is less than one pass
    pad = n_passes * size - n

    def split(leaf):
        if pad:
            leaf = jnp.concatenate([leaf, jnp.repeat(leaf[-1:], pad, axis=0)])
        return leaf.reshape((n_passes, size) + leaf.shape[1:])

    out = jax.lax.map(lambda trees: fn(*trees), jax.tree_util.tree_map(split, episode_trees))
    return jax.tree_util.tree_map(lambda leaf: leaf.reshape((n_passes * size,) + leaf.shape[2:])[:n], out)


def _counts_of_batch(
    policy: Policy,
    mesh,
    per_pass: int,
    params,
    batch: EpisodeBatch,
    budgets,
    key,
    episode_index,
    fast_trace: bool = False,
) -> metrics.Counts:
    keys = episode_keys(key, episode_index)
    one_run = functools.partial(run_counts, fast_trace=fast_trace, batch_axes=RUN_AXES)
    over_budgets = jax.vmap(one_run, in_axes=(None, None, None, 0, None), axis_name=RUN_AXES[1])
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0), axis_name=RUN_AXES[0])

    def local(params, budgets, batch, keys):
        return _in_passes(
            lambda batch, keys: over_episodes(policy, params, batch, budgets, keys), per_pass, batch, keys
        )

    return devices_lib.on_devices(local, mesh, (params, budgets), (batch, keys))


# The quick build's rollouts are also traced faster (see initial_carry); it wins only where compiling is most of
# the work (the paper grid; docs/performance.md, "Sweeps at scale").
_batch_counts, _batch_counts_quick = programs.full_and_quick(
    _counts_of_batch, functools.partial(_counts_of_batch, fast_trace=True), static_argnums=(0, 1, 2)
)
QUICK_COMPILE_BELOW = devices_lib.QUICK_COMPILE_BELOW
# (Long episodes run in segments, always fully optimised: the quick build's slower steps run one
# after another, so a long episode would pay them in full.)


def _episode_index(episode_index, n_episodes: int) -> np.ndarray:
    """[N] uint32 episode indices (default 0..N-1) for :func:`episode_keys`."""
    index = np.arange(n_episodes) if episode_index is None else np.asarray(episode_index)
    if index.shape != (n_episodes,):
        raise ValueError(f"episode_index: expected {n_episodes} indices, one per episode; got shape {index.shape}")
    return index.astype(np.uint32)


def _as_budgets(budgets) -> np.ndarray:
    return check_budgets(budgets).astype(np.int32)


@functools.cache
def with_history(policy: Policy) -> Policy:
    """``policy`` with a store that records its history (when each slot's item was added and left: the
    ``Counts`` fields ``left_at``, ``parent``, ``written_at``, what reads are scored on, wpbjax.scoring.reads).
    The same rows otherwise; one compiled program per policy (cached, so calls reuse it)."""
    return dataclasses.replace(policy, layout=policy.layout | {actions.HISTORY})


def batch_counts(
    policy: Policy,
    batch: EpisodeBatch,
    budgets,
    params=None,
    key=None,
    episode_index=None,
    work: int | None = None,
    per_pass: int | None = None,
) -> metrics.Counts:
    """Counts for every (episode, budget): leaves shaped ``[N, B, ...]``.

    ``budgets``: [B] ints (bytes); ``params``: overrides of the policy's default params (name -> value);
    ``key``: a ``jax.random.key`` for stochastic policies, folded with each episode's index
    (``episode_index``: [N] ints, default 0..N-1) so results do not depend on how a sweep is chunked.
    ``work``: run-steps the caller will run with this compiled program (default: this call's,
    N·B·T); below ``QUICK_COMPILE_BELOW`` a quicker-compiling, slower-running build is used.
    ``per_pass``: episodes per pass (per device; default :func:`episodes_per_pass`). Both builds and
    every pass size give identical results.
    """
    budgets = _as_budgets(budgets)
    if policy.plan is not None:  # hindsight policies need per-run inputs (policy zoo)
        return jax.tree_util.tree_map(
            lambda leaf: leaf[0],
            grid_counts(policy, batch, budgets, params=params, key=key, episode_index=episode_index, work=work),
        )
    params = policy.resolve_params(params or {})
    episode_index = _episode_index(episode_index, batch.n_episodes)
    if work is None:
        work = batch.n_episodes * budgets.shape[0] * batch.valid.shape[1]
    if batch.n_steps > segments.STEPS_PER_SEGMENT:  # long episodes: progress between segments
        return segments.simulate_in_segments(policy, batch, budgets, params, {}, key, episode_index, grid=False)
    compiled = _batch_counts_quick if work < QUICK_COMPILE_BELOW else _batch_counts
    per_pass = per_pass or episodes_per_pass(batch.n_steps, budgets.shape[0])
    mesh = devices_lib.mesh_of(batch.valid)
    return traced.call(compiled, policy, mesh, per_pass, params, batch, budgets, key, episode_index)


# --- Parameter grids and per-run inputs (policy zoo, docs/policies.md) -----------------------------
def run_counts_with_inputs(
    policy: Policy,
    params,
    run_inputs,
    episode: EpisodeBatch,
    budget,
    key,
    fast_trace: bool = False,
    batch_axes: tuple = (),
) -> metrics.Counts:
    return run_counts(policy, {**params, **run_inputs}, episode, budget, key, fast_trace, batch_axes)


def _counts_of_grid(
    policy: Policy,
    mesh,
    per_pass: int,
    params,
    run_inputs,
    batch: EpisodeBatch,
    budgets,
    key,
    episode_index,
    fast_trace: bool = False,
) -> metrics.Counts:
    """[P, N, B] counts: params leaves [P] (one value per grid point), run_inputs leaves [N, B, ...]."""
    keys = episode_keys(key, episode_index)
    one_run = functools.partial(run_counts_with_inputs, fast_trace=fast_trace, batch_axes=GRID_RUN_AXES)
    over_budgets = jax.vmap(one_run, in_axes=(None, None, 0, None, 0, None), axis_name=GRID_RUN_AXES[2])
    over_params = jax.vmap(over_budgets, in_axes=(None, 0, None, None, None, None), axis_name=GRID_RUN_AXES[1])
    over_episodes = jax.vmap(  # [N, P, B]: episodes lead
        over_params, in_axes=(None, None, 0, 0, None, 0), axis_name=GRID_RUN_AXES[0]
    )

    def local(params, budgets, run_inputs, batch, keys):
        return _in_passes(
            lambda run_inputs, batch, keys: over_episodes(policy, params, run_inputs, batch, budgets, keys),
            per_pass,
            run_inputs,
            batch,
            keys,
        )

    counts = devices_lib.on_devices(local, mesh, (params, budgets), (run_inputs, batch, keys))
    return jax.tree_util.tree_map(lambda leaf: jnp.moveaxis(leaf, 1, 0), counts)


_grid_counts, _grid_counts_quick = programs.full_and_quick(  # as _batch_counts: small grids are mostly compiling
    _counts_of_grid, functools.partial(_counts_of_grid, fast_trace=True), static_argnums=(0, 1, 2)
)


def grid_counts(
    policy: Policy,
    batch: EpisodeBatch,
    budgets,
    params=None,
    run_inputs=None,
    key=None,
    episode_index=None,
    work: int | None = None,
) -> metrics.Counts:
    """Counts for every (param point, episode, budget): leaves shaped ``[P, N, B, ...]``, in one compiled call.

    ``params``: name -> [P] values, one per grid point (a scalar counts as P = 1; every swept name must
    have the same P; unswept params keep their defaults). The grid is vmapped like the other axes, so
    any P values of the same length reuse one compile. ``run_inputs``: name -> [N, B, ...] arrays handed
    to each run as extra params (a hindsight plan); for a policy with a ``plan`` they default to
    ``policy.plan`` computed from the batch's write costs and (float32) utilities. ``work``: as
    :func:`batch_counts` (default: this call's, P·N·B·T).
    """
    budgets = _as_budgets(budgets)
    overrides = {name: np.atleast_1d(np.asarray(value)) for name, value in (params or {}).items()}
    lengths = {name: value.shape[0] for name, value in overrides.items()}
    if len(set(lengths.values())) > 1 or any(value.ndim != 1 for value in overrides.values()):
        raise ValueError(f"params: give every swept param as a 1-D list of the same length; got lengths {lengths}")
    n_points = next(iter(lengths.values()), 1)
    resolved = policy.resolve_params(overrides)
    resolved = {name: np.broadcast_to(value, (n_points,)) for name, value in resolved.items()}
    resolved = resolved or {"grid_point": np.arange(n_points)}  # vmap needs one mapped leaf
    if run_inputs is None:
        run_inputs = {}
        if policy.plan is not None:
            run_inputs = policy.plan(
                np.asarray(batch.write_cost),
                np.asarray(batch.utility, np.float64),
                np.asarray(batch.length),
                np.asarray(budgets),
            )
    run_inputs = {name: np.asarray(value) for name, value in run_inputs.items()}
    episode_index = _episode_index(episode_index, batch.n_episodes)
    if batch.n_steps > segments.STEPS_PER_SEGMENT:  # long episodes: progress between segments
        per_run = {
            name: np.broadcast_to(value[:, None], (value.shape[0], n_points) + value.shape[1:])
            for name, value in run_inputs.items()
        }  # [N, B, ...] -> [N, P, B, ...]
        counts = segments.simulate_in_segments(policy, batch, budgets, resolved, per_run, key, episode_index, grid=True)
        return jax.tree_util.tree_map(lambda leaf: jnp.moveaxis(leaf, 1, 0), counts)
    per_pass = episodes_per_pass(batch.n_steps, n_points * budgets.shape[0])
    mesh = devices_lib.mesh_of(batch.valid)
    if work is None:
        work = n_points * batch.n_episodes * budgets.shape[0] * batch.n_steps
    compiled = _grid_counts_quick if work < QUICK_COMPILE_BELOW else _grid_counts
    return traced.call(compiled, policy, mesh, per_pass, resolved, run_inputs, batch, budgets, key, episode_index)


# --- Per-step traces (off by default: only these functions compute them) ---------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Trace:
    """The store after every step of one run (leaves gain leading [N, B] axes from :func:`step_traces`)."""

    retained: jax.Array  # [T, ceil(T/8)] uint8 bit-packed W after step t (exact utility-to-date on host)
    bytes_used: jax.Array  # [T] int32 bytes in use after step t
    n_hit: jax.Array  # [T] int32 |W ∩ R| after step t


def rollout_trace(policy: Policy, params, episode: EpisodeBatch, budget, key) -> tuple[store_lib.StoreState, Trace]:
    """:func:`rollout` that also records the retained set after every step. The same step function;
    O(T) extra work per step (the retained set is re-derived), so keep it for analysis runs."""
    n_steps = episode.valid.shape[0]
    budget = jnp.asarray(budget, jnp.int32)

    def traced_step(carry, pos):
        store, state = step(policy, params, episode, budget, *carry, pos)
        settled = store_lib.finish(store, pos + 1, policy.features)  # this step's item in place (not carried)
        kept = metrics.retained_mask(settled, episode)
        trace = Trace(
            retained=jnp.packbits(kept), bytes_used=settled.used, n_hit=(kept & episode.critical).sum(dtype=jnp.int32)
        )
        return (store, state), trace

    (final, _), trace = jax.lax.scan(
        traced_step, initial_carry(policy, params, episode, budget, key), jnp.arange(n_steps)
    )
    return store_lib.finish(final, n_steps, policy.features), trace


def _traces_of_batch(policy: Policy, params, run_inputs, batch: EpisodeBatch, budgets, key, episode_index) -> Trace:
    keys = episode_keys(key, episode_index)

    def run(policy, params, run_inputs, episode, budget, key):
        return rollout_trace(policy, {**params, **run_inputs}, episode, budget, key)[1]

    over_budgets = jax.vmap(run, in_axes=(None, None, 0, None, 0, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, 0, None, 0))
    return over_episodes(policy, params, run_inputs, batch, budgets, keys)


_step_traces = programs.jit(_traces_of_batch, static_argnums=0)


def step_traces(
    policy: Policy, batch: EpisodeBatch, budgets, params=None, key=None, episode_index=None, run_inputs=None
) -> Trace:
    """Per-step traces for every (episode, budget): leaves shaped ``[N, B, T, ...]``. Arguments as
    :func:`batch_counts` (same keys per episode, so the last step matches its counts); ``run_inputs``:
    name -> [N, B, ...] arrays of a policy that plans (default: its plan from ``batch``, as
    :func:`grid_counts`)."""
    budgets = _as_budgets(budgets)
    params = policy.resolve_params(params or {})
    if run_inputs is None:
        run_inputs = {}
        if policy.plan is not None:
            run_inputs = policy.plan(
                np.asarray(batch.write_cost), np.asarray(batch.utility, np.float64), np.asarray(batch.length), budgets
            )
    run_inputs = {name: np.asarray(value) for name, value in run_inputs.items()}
    return _step_traces(
        policy, params, run_inputs, batch, budgets, key, _episode_index(episode_index, batch.n_episodes)
    )
