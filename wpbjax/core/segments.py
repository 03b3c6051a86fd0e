"""Long rollouts in segments of steps, with progress in between.

A rollout of more than ``STEPS_PER_SEGMENT`` steps runs as three compiled programs: one builds
every run's first carry (empty store, policy state), one advances every run of the call by up to
``STEPS_PER_SEGMENT`` steps (called again until the episodes end; the host reports how far they
are after each call, see :func:`listen_to_steps`), and one counts the final stores. The segment's
bounds are traced, so one compile serves every segment of any episode length.

Why not one program that calls the host every so many steps: a program with a host callback is
never found in the persistent compilation cache (the callback's address is part of its key), so
every long sweep would compile every policy again.
"""

from __future__ import annotations

import jax
import numpy as np

from wpbjax.core.scan import GRID_RUN_AXES, RUN_AXES, advance, episode_keys, initial_carry
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.policies.base import Policy
from wpbjax.runtime import devices as devices_lib, programs
from wpbjax.scoring import metrics
from wpbjax.state import store as store_lib

STEPS_PER_SEGMENT = 10_000
_step_listeners: list = []


def listen_to_steps(listener) -> None:
    """Call ``listener(steps_done, n_steps)`` after each segment of a long rollout."""
    _step_listeners.append(listener)


def stop_listening(listener) -> None:
    if listener in _step_listeners:
        _step_listeners.remove(listener)


def _run_axes(grid: bool) -> tuple:
    """The names of a call's vmapped run axes (named for the CONTINUE loop, see scan.step)."""
    return GRID_RUN_AXES if grid else RUN_AXES


def _map_runs(fn, grid: bool):
    """``fn(params, budget, episode, key, run)`` of one run, mapped over a call's runs: ``episode``
    and ``key`` leaves [N, ...], budgets [B], ``run`` leaves [N, (P,) B, ...] (per-run inputs, a
    carry); params shared, or with ``grid`` leaves [P] (one value per grid point). Out: [N, (P,) B, ...]."""
    axes = _run_axes(grid)
    over = jax.vmap(fn, in_axes=(None, 0, None, None, 0), axis_name=axes[-1])
    if grid:
        over = jax.vmap(over, in_axes=(0, None, None, None, 0), axis_name=axes[1])
    return jax.vmap(over, in_axes=(None, None, 0, 0, 0), axis_name=axes[0])


def _start(policy: Policy, mesh, grid: bool, params, run_inputs, batch: EpisodeBatch, budgets, key, episode_index):
    """Every run's carry before step 0: leaves [N, (P,) B, ...]."""

    def first_carry(params, budget, episode, key, run_inputs):
        return initial_carry(policy, {**params, **run_inputs}, episode, budget, key)

    def local(params, budgets, run_inputs, batch, episode_index):
        keys = episode_keys(key, episode_index)
        return _map_runs(first_carry, grid)(params, budgets, batch, keys, run_inputs)

    return devices_lib.on_devices(local, mesh, (params, budgets), (run_inputs, batch, episode_index))


def _advance(policy: Policy, mesh, grid: bool, params, run_inputs, batch: EpisodeBatch, budgets, carry, first, stop):
    """Every run's carry after steps ``first .. stop-1`` ([] int32 each, traced)."""

    def run_steps(params, budget, episode, _, run):
        run_inputs, carry = run
        return advance(policy, {**params, **run_inputs}, episode, budget, carry, first, stop, _run_axes(grid))

    def local(params, budgets, first, stop, run_inputs, batch, carry):
        return _map_runs(run_steps, grid)(params, budgets, batch, None, (run_inputs, carry))

    return devices_lib.on_devices(local, mesh, (params, budgets, first, stop), (run_inputs, batch, carry))


def _finish(policy: Policy, mesh, grid: bool, params, batch: EpisodeBatch, budgets, carry) -> metrics.Counts:
    """Counts of every run's final store: leaves [N, (P,) B, ...]."""
    n_steps = batch.valid.shape[-1]

    def final_counts(params, budget, episode, _, carry):
        return metrics.count(store_lib.finish(carry[0], n_steps, policy.features), episode)

    def local(params, budgets, batch, carry):
        return _map_runs(final_counts, grid)(params, budgets, batch, None, carry)

    return devices_lib.on_devices(local, mesh, (params, budgets), (batch, carry))


_OPTIONS = {"static_argnums": (0, 1, 2), "compiler_options": devices_lib.COMPILER_OPTIONS}
_start_program = programs.jit(_start, **_OPTIONS)
_advance_program = programs.jit(_advance, donate_argnames="carry", **_OPTIONS)  # the carry is updated in place
_finish_program = programs.jit(_finish, **_OPTIONS)


def _twice(tree, like):
    """``tree`` with each leaf's episode axis repeated twice, on ``like``'s device (host arrays stay)."""
    doubled = jax.tree_util.tree_map(lambda leaf: np.concatenate([np.asarray(leaf)] * 2), tree)
    devices = getattr(like, "devices", None)
    return jax.device_put(doubled, next(iter(devices()))) if devices else doubled


def simulate_in_segments(
    policy: Policy,
    batch: EpisodeBatch,
    budgets: np.ndarray,
    params: dict,
    run_inputs: dict,
    key,
    episode_index: np.ndarray,
    grid: bool,
) -> metrics.Counts:
    """Counts [N, (P,) B, ...] of every run, ``STEPS_PER_SEGMENT`` steps per call (see the module
    note); arguments as ``wpbjax.core.rollout``'s programs take them (``run_inputs`` leaves [N, (P,) B, ...])."""
    n_episodes, n_steps = batch.n_episodes, batch.n_steps
    lone = n_episodes == 1
    if lone:  # a batch axis of size 1 makes XLA copy the carried stores every step (see simulate._in_passes)
        batch, run_inputs, episode_index = _twice((batch, run_inputs, episode_index), batch.valid)
    mesh = devices_lib.mesh_of(batch.valid)
    carry = _start_program(policy, mesh, grid, params, run_inputs, batch, budgets, key, episode_index)
    if isinstance(batch.valid, jax.Array):  # where later carries will be (else the second call compiles again)
        carry = jax.device_put(carry, batch.valid.sharding)
    for first in range(0, n_steps, STEPS_PER_SEGMENT):
        stop = min(first + STEPS_PER_SEGMENT, n_steps)
        carry = _advance_program(
            policy, mesh, grid, params, run_inputs, batch, budgets, carry, np.int32(first), np.int32(stop)
        )
        if _step_listeners:
            jax.block_until_ready(carry)
            for listener in list(_step_listeners):
                listener(stop, n_steps)
    counts = _finish_program(policy, mesh, grid, params, batch, budgets, carry)
    return jax.tree_util.tree_map(lambda leaf: leaf[:1], counts) if lone else counts
