"""Rollouts: ``lax.scan`` over steps, ``vmap`` over budgets, episodes and policy params.

Shapes (T steps, F fields, R priority levels, A apis) and the policy are static; budgets and
params are traced, so a new budget grid or parameter value never recompiles.

One compiled call runs its episodes in *passes* of a few hundred (a ``lax.map``): every step of a
rollout touches each run's store, so a pass whose runs' stores and episodes fit in the CPU cache
runs 1.5-2x faster, and far more steadily, than one sweep over a large batch (measured; see
:func:`episodes_per_pass`). On several devices each device makes its own passes (``shard_map``).

The module is callable: ``wpbjax.simulate(policy, episodes, budgets, track=...)`` runs
:func:`wpbjax.api.simulate` (scored metrics per run).
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from wpbjax import actions, devices as devices_lib, metrics, programs, store as store_lib
from wpbjax.budgets import check_budgets
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


def step(policy: Policy, params, episode: EpisodeBatch, budget, store, state, pos):
    """One step of the rollout: (store, state) before step ``pos`` -> after it (one episode, one budget)."""
    store = store_lib.flush(store, pos, policy.kinds)  # last step's item, before any read
    action, store, state = _act_and_apply(policy, params, episode, pos, budget, store, state)
    if policy.multi_action:
        # CONTINUE: the policy acts again at this step (at most once per stored item).
        def again(loop):
            return actions.acts_again(loop[0].kind)  # CONTINUE, or WRITE_PAST (policy zoo)

        def act_again(loop):
            _, store, state = loop
            return _act_and_apply(policy, params, episode, pos, budget, store, state)

        _, store, state = jax.lax.while_loop(again, act_again, (action, store, state))
    return store, state


def _initial(policy: Policy, params, episode: EpisodeBatch, budget, key, fast_trace: bool = False) -> tuple:
    """(empty store, policy state): a rollout's first carry.

    ``fast_trace`` marks every leaf as varying with the budget and the episode from the start (a
    select XLA removes). vmap's scan rule then traces the step once per vmap level instead of twice
    (the second pass finds which carried leaves vary): 30-50% less tracing. But leaves that never
    vary, such as no_mem's empty store, become per-run work: runs up to 4x slower for the cheap
    policies (measured: no_mem 575M -> 148M, priority_threshold 164M -> 115M episode-steps/s).
    So only the quick build, for small sweeps, uses it."""
    initial = (store_lib.empty(episode.valid.shape[0]), policy.init(params, episode, key))
    if not fast_trace:
        return initial
    varies = (budget >= 0) | episode.valid[0]
    return jax.tree_util.tree_map(
        lambda leaf: leaf if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) else jnp.where(varies, leaf, leaf),
        initial)


def advance(policy: Policy, params, episode: EpisodeBatch, budget, carry: tuple, first, stop) -> tuple:
    """Steps ``first .. stop-1`` of a rollout: the carry (store, policy state) before step ``first``
    -> after step ``stop - 1``. Python-int bounds compile to a scan; traced bounds to a loop that
    serves every segment of a long rollout (:func:`wpbjax.segments.simulate_in_segments`)."""
    budget = jnp.asarray(budget, jnp.int32)
    return jax.lax.fori_loop(first, stop, lambda pos, carry: step(policy, params, episode, budget, *carry, pos), carry)


def rollout(policy: Policy, params, episode: EpisodeBatch, budget, key, fast_trace: bool = False) -> store_lib.StoreState:
    """Final store of one policy on one episode (arrays without the N axis) at one budget
    (``fast_trace``: see :func:`_initial`; the same store either way)."""
    n_steps = episode.valid.shape[0]
    final, _ = advance(policy, params, episode, budget, _initial(policy, params, episode, budget, key, fast_trace),
                       0, n_steps)
    return store_lib.flush(final, n_steps, policy.kinds)


def run_counts(policy: Policy, params, episode: EpisodeBatch, budget, key, fast_trace: bool = False) -> metrics.Counts:
    return metrics.count(rollout(policy, params, episode, budget, key, fast_trace), episode)


# --- Passes: cache-sized groups of episodes -------------------------------------------------------
PASS_CACHE_BYTES = 8 << 20     # working set of one pass: well inside a 32 MiB L3 shared with others
CACHE_BYTES_PER_RUN_STEP = 40  # store links and costs (16), policy state, the run's share of its episode
MIN_RUNS_PER_PASS = 256        # fewer, and per-step overheads outweigh the cache (T=2000: 256 beat 128 and 512)


def episodes_per_pass(n_steps: int, n_runs_per_episode: int) -> int:
    """Episodes one pass holds: about PASS_CACHE_BYTES of working set, at least MIN_RUNS_PER_PASS runs.
    Measured on a 2-core EPYC (T=200, 3 budgets): passes of 170-680 episodes run merge_aggressive at
    7-9M episode-steps/s where one 10,000-episode pass varies between 3.5M and 7M."""
    runs = max(PASS_CACHE_BYTES // (n_steps * CACHE_BYTES_PER_RUN_STEP), MIN_RUNS_PER_PASS)
    return max(runs // n_runs_per_episode, 1)


def _in_passes(fn, per_pass: int, *episode_trees):
    """``fn(*episode_trees)`` with leaves [N, ...] in, [N, ...] out, computed ``per_pass`` episodes
    at a time (the last pass padded with copies of the last episode)."""
    n = jax.tree_util.tree_leaves(episode_trees)[0].shape[0]
    if n == 1:
        # A lone episode runs beside a copy of itself: with a batch axis of size 1, XLA copies the
        # carried [1, B, T] store arrays every step (O(T) per step: a 200,000-step merge_aggressive
        # run took 97 s); with two episodes it updates them in place (1.5 s).
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


def _on_devices(local, mesh, replicated, sharded):
    """``local(*replicated, *sharded)`` on each device's share of the episode axis (``shard_map``),
    or directly when ``mesh`` is None (one device)."""
    if mesh is None:
        return local(*replicated, *sharded)
    episodes = PartitionSpec(mesh.axis_names[0])
    specs = (PartitionSpec(),) * len(replicated) + (episodes,) * len(sharded)
    return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=episodes, check_vma=False)(*replicated, *sharded)


def _mesh_of(batch: EpisodeBatch):
    """The device mesh ``batch`` is sharded over (see ``wpbjax.devices.place``), or None for one device."""
    mesh = getattr(batch.valid.sharding, "mesh", None)
    return mesh if mesh is not None and mesh.devices.size > 1 else None


def _simulate_batch(policy: Policy, mesh, per_pass: int, params, batch: EpisodeBatch, budgets, key,
                    episode_index, fast_trace: bool = False) -> metrics.Counts:
    keys = episode_keys(key, episode_index)
    over_budgets = jax.vmap(functools.partial(run_counts, fast_trace=fast_trace), in_axes=(None, None, None, 0, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0))

    def local(params, budgets, batch, keys):
        return _in_passes(lambda batch, keys: over_episodes(policy, params, batch, budgets, keys), per_pass, batch, keys)

    return _on_devices(local, mesh, (params, budgets), (batch, keys))


_simulate = programs.jit(_simulate_batch, static_argnums=(0, 1, 2), compiler_options=devices_lib.COMPILER_OPTIONS)
# The same rollouts traced faster (see _initial) and compiled with XLA's backend optimisation off:
# 0.2-0.7 s sooner per policy, and runs 5-7x slower (measured on 2 cores: fifo_store_all 16M vs 113M
# episode-steps/s, priority_greedy 2.2M vs 10.6M), so it wins below ~1-4M run-steps of work per
# compile -- the paper grid (88k run-steps per policy and track) spends nearly all its time compiling.
_simulate_quick = programs.jit(functools.partial(_simulate_batch, fast_trace=True), static_argnums=(0, 1, 2),
                          compiler_options={**devices_lib.COMPILER_OPTIONS, "xla_backend_optimization_level": 0})
QUICK_COMPILE_BELOW = 1_000_000  # run-steps
# (Long episodes run in segments, always fully optimised: the quick build's slower steps run one
# after another, so a long episode pays them in full: 200,000 steps of merge_aggressive took 22 s
# quick, 11 s full, measured.)


def episode_keys(key, episode_index) -> jax.Array:
    """[N] keys: ``key`` (None: ``jax.random.key(0)``) folded with each episode's index ([N] ints).
    Called inside the compiled programs (outside, each key op would compile a small program)."""
    key = jax.random.key(0) if key is None else key
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, jnp.asarray(episode_index, jnp.uint32))


def _episode_index(episode_index, n_episodes: int) -> np.ndarray:
    """[N] uint32 episode indices (default 0..N-1) for :func:`episode_keys`."""
    index = np.arange(n_episodes) if episode_index is None else np.asarray(episode_index)
    if index.shape != (n_episodes,):
        raise ValueError(f"episode_index: expected {n_episodes} indices, one per episode; got shape {index.shape}")
    return index.astype(np.uint32)


def _as_budgets(budgets) -> np.ndarray:
    return check_budgets(budgets).astype(np.int32)


def simulate(policy: Policy, batch: EpisodeBatch, budgets, params=None, key=None, episode_index=None,
             work: int | None = None, per_pass: int | None = None) -> metrics.Counts:
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
        return jax.tree_util.tree_map(lambda leaf: leaf[0], simulate_grid(
            policy, batch, budgets, params=params, key=key, episode_index=episode_index))
    params = policy.resolve_params(params or {})
    episode_index = _episode_index(episode_index, batch.n_episodes)
    if work is None:
        work = batch.n_episodes * budgets.shape[0] * batch.valid.shape[1]
    if batch.n_steps > _segments().STEPS_PER_SEGMENT:  # long episodes: progress between segments
        return _segments().simulate_in_segments(policy, batch, budgets, params, {}, key, episode_index, grid=False)
    compiled = _simulate_quick if work < QUICK_COMPILE_BELOW else _simulate
    per_pass = per_pass or episodes_per_pass(batch.n_steps, budgets.shape[0])
    return compiled(policy, _mesh_of(batch), per_pass, params, batch, budgets, key, episode_index)


def _segments():
    """:mod:`wpbjax.segments`, which builds on this module (imported when first needed)."""
    from wpbjax import segments

    return segments


# --- Parameter grids and per-run inputs (policy zoo, docs/policies.md) -----------------------------
def run_counts_with_inputs(policy: Policy, params, run_inputs, episode: EpisodeBatch, budget, key) -> metrics.Counts:
    return run_counts(policy, {**params, **run_inputs}, episode, budget, key)


def _simulate_grid_batch(policy: Policy, mesh, per_pass: int, params, run_inputs, batch: EpisodeBatch, budgets,
                         key, episode_index) -> metrics.Counts:
    """[P, N, B] counts: params leaves [P] (one value per grid point), run_inputs leaves [N, B, ...]."""
    keys = episode_keys(key, episode_index)
    over_budgets = jax.vmap(run_counts_with_inputs, in_axes=(None, None, 0, None, 0, None))
    over_params = jax.vmap(over_budgets, in_axes=(None, 0, None, None, None, None))
    over_episodes = jax.vmap(over_params, in_axes=(None, None, 0, 0, None, 0))  # [N, P, B]: episodes lead

    def local(params, budgets, run_inputs, batch, keys):
        return _in_passes(lambda run_inputs, batch, keys: over_episodes(policy, params, run_inputs, batch, budgets, keys),
                          per_pass, run_inputs, batch, keys)

    counts = _on_devices(local, mesh, (params, budgets), (run_inputs, batch, keys))
    return jax.tree_util.tree_map(lambda leaf: jnp.moveaxis(leaf, 1, 0), counts)


_simulate_grid = programs.jit(_simulate_grid_batch, static_argnums=(0, 1, 2), compiler_options=devices_lib.COMPILER_OPTIONS)


def simulate_grid(policy: Policy, batch: EpisodeBatch, budgets, params=None, run_inputs=None, key=None,
                  episode_index=None) -> metrics.Counts:
    """Counts for every (param point, episode, budget): leaves shaped ``[P, N, B, ...]``, in one compiled call.

    ``params``: name -> [P] values, one per grid point (a scalar counts as P = 1; every swept name must
    have the same P; unswept params keep their defaults). The grid is vmapped like the other axes, so
    any P values of the same length reuse one compile. ``run_inputs``: name -> [N, B, ...] arrays handed
    to each run as extra params (a hindsight plan); for a policy with a ``plan`` they default to
    ``policy.plan`` computed from the batch's write costs and (float32) utilities.
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
            run_inputs = policy.plan(np.asarray(batch.write_cost), np.asarray(batch.utility, np.float64),
                                     np.asarray(batch.length), np.asarray(budgets))
    run_inputs = {name: np.asarray(value) for name, value in run_inputs.items()}
    episode_index = _episode_index(episode_index, batch.n_episodes)
    if batch.n_steps > _segments().STEPS_PER_SEGMENT:  # long episodes: progress between segments
        per_run = {name: np.broadcast_to(value[:, None], (value.shape[0], n_points) + value.shape[1:])
                   for name, value in run_inputs.items()}  # [N, B, ...] -> [N, P, B, ...]
        counts = _segments().simulate_in_segments(policy, batch, budgets, resolved, per_run, key, episode_index,
                                                     grid=True)
        return jax.tree_util.tree_map(lambda leaf: jnp.moveaxis(leaf, 1, 0), counts)
    per_pass = episodes_per_pass(batch.n_steps, n_points * budgets.shape[0])
    return _simulate_grid(policy, _mesh_of(batch), per_pass, resolved, run_inputs, batch, budgets, key, episode_index)


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

    def traced_step(carry, pos):
        store, state = step(policy, params, episode, budget, *carry, pos)
        settled = store_lib.flush(store, pos + 1, policy.kinds)  # this step's item in place (not carried)
        kept = metrics.retained_mask(settled, episode)
        trace = Trace(retained=jnp.packbits(kept), bytes_used=settled.used,
                      n_hit=(kept & episode.critical).sum(dtype=jnp.int32))
        return (store, state), trace

    (final, _), trace = jax.lax.scan(traced_step, _initial(policy, params, episode, budget, key), jnp.arange(n_steps))
    return store_lib.flush(final, n_steps, policy.kinds), trace


def _simulate_trace_batch(policy: Policy, params, batch: EpisodeBatch, budgets, key, episode_index) -> Trace:
    keys = episode_keys(key, episode_index)

    def run(policy, params, episode, budget, key):
        return rollout_trace(policy, params, episode, budget, key)[1]

    over_budgets = jax.vmap(run, in_axes=(None, None, None, 0, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0))
    return over_episodes(policy, params, batch, budgets, keys)


_simulate_trace = programs.jit(_simulate_trace_batch, static_argnums=0)


def simulate_trace(policy: Policy, batch: EpisodeBatch, budgets, params=None, key=None, episode_index=None) -> Trace:
    """Per-step traces for every (episode, budget): leaves shaped ``[N, B, T, ...]``. Arguments as
    :func:`simulate` (same keys per episode, so the last step matches its counts)."""
    budgets = _as_budgets(budgets)
    params = policy.resolve_params(params or {})
    return _simulate_trace(policy, params, batch, budgets, key, _episode_index(episode_index, batch.n_episodes))


from wpbjax._callable import make_callable  # noqa: E402

make_callable(__name__, "simulate")
