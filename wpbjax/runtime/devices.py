"""Where runs execute: every local device, episodes sharded along one mesh axis.

Uses ``jax.sharding`` (a 1-D Mesh over the local devices and a NamedSharding on the episode axis);
each device runs its share of the episodes (``simulate`` maps over it with ``shard_map``), and
results are identical to one device. Multi-host: call ``jax.distributed.initialize()`` first and
each process sweeps its own share of the grid.

On a CPU, the CLI makes one XLA device per core (:func:`use_every_core`); a sweep of few runs per
call starts JAX on one device whose worker threads share one core instead (:func:`local_devices`).
"""

from __future__ import annotations

import importlib.metadata
import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

# Compile options of the rollout and oracle programs. XLA:CPU's newer fusion emitters compile a
# rollout step's many small fusions more slowly and run them no faster (docs/performance.md, "Sweeps at
# scale"). GPU backends ignore xla_cpu_* options.
COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False}
# The same with XLA's backend optimisation off: a program compiles sooner and runs slower, so this build wins
# only where compiling is most of the work, below QUICK_COMPILE_BELOW run-steps in one
# call (docs/performance.md, "Sweeps at scale"). Both builds give identical results.
QUICK_COMPILER_OPTIONS = {**COMPILER_OPTIONS, "xla_backend_optimization_level": 0}
QUICK_COMPILE_BELOW = 1_000_000  # run-steps


def use_every_core(whole_loops: bool = False) -> None:
    """One XLA CPU device per core; call it before any JAX operation (the CLI does, first thing).

    A rollout step is many small kernels; XLA runs them far better as one device per core, each
    on its own episodes, than as one device splitting every kernel over threads (docs/performance.md,
    "Sweeps at scale"). Leaves an explicit
    choice alone (``JAX_NUM_CPU_DEVICES``, ``XLA_FLAGS=--xla_force_host_platform_device_count=N``),
    and does nothing once JAX has started (the library used in-process keeps its devices).
    GPU runs are unaffected: the GPU stays the default device.

    ``whole_loops``: XLA:CPU also compiles each loop as one kernel (:func:`_compile_loops_whole`); the CLI
    asks for it for the commands whose outputs it leaves unchanged (``wpbjax.cli.WHOLE_LOOP_COMMANDS``).
    """
    global _DEVICE_COUNT_IS_OURS
    if _device_count_chosen_by_user():
        return
    try:
        jax.config.update("jax_num_cpu_devices", len(os.sched_getaffinity(0)))
        _DEVICE_COUNT_IS_OURS = True
    except RuntimeError:  # backends already started, their XLA flags read
        return
    if whole_loops:
        _compile_loops_whole()


# XLA:CPU compiles a loop whose buffers total fewer bytes than this as one kernel ("small while loop"
# hoisting; XLA's default is 1 kB). A larger loop's body runs as separate kernels that XLA's runtime
# dispatches one by one at every turn, and a rollout's step is many small kernels
# (docs/performance.md, "Loops compiled whole").
WHOLE_LOOP_BELOW_BYTES = 1 << 30


def _compile_loops_whole() -> None:
    """Raise XLA:CPU's bound for compiling a loop as one kernel to WHOLE_LOOP_BELOW_BYTES: an XLA flag, read
    at JAX's first compile, so only before it (:func:`use_every_core` knows). Sweeps, the bench and the adversary
    give the same outputs bit for bit; training's weights round differently in their last bits. Not where a user
    set their own ``--xla_backend_extra_options``, nor where a JAX plugin (a GPU, a TPU) is installed: such
    backends take those options too."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_extra_options" in flags or _accelerator_plugin_installed():
        return
    option = f"--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold={WHOLE_LOOP_BELOW_BYTES}"
    os.environ["XLA_FLAGS"] = f"{flags} {option}".strip()


_DEVICE_COUNT_IS_OURS = False  # use_every_core chose the CPU device count (not the user)


def _device_count_chosen_by_user() -> bool:
    return (
        jax.config.jax_num_cpu_devices != -1 and not _DEVICE_COUNT_IS_OURS
    ) or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")


def _accelerator_plugin_installed() -> bool:
    """A JAX plugin (a GPU or a TPU backend) is installed."""
    return bool(list(importlib.metadata.entry_points(group="jax_plugins")))


# A call of fewer runs than this per core starts JAX on one core (see start_on_one_core): below it, the
# hand-offs of a step's small kernels between cores cost more than the second core gives
# (docs/performance.md, "Long episodes").
FEW_RUNS_PER_CORE = 64


def start_on_one_core() -> bool:
    """Start JAX with one CPU device whose worker threads are all created on one core; threads
    started afterwards (a sweep's, which trace and compile) still use every core. Returns whether
    it did: not once JAX has started, where the user chose the device count, or where a JAX plugin
    (a GPU or TPU) is installed.

    Why: a rollout step is many small kernels, which XLA's runtime hands between its worker
    threads; across cores every hand-off waits for a sleeping core, so a small call runs faster with
    its threads on one core (docs/performance.md, "Long episodes"). Large calls keep their speed on
    every core (their kernels do real work): see FEW_RUNS_PER_CORE.
    """
    if _device_count_chosen_by_user() or _accelerator_plugin_installed():
        return False
    try:
        # JAX refuses a *new* device count once it has started (the same value passes): step
        # through a different one first, so that a started JAX is always caught here
        jax.config.update("jax_num_cpu_devices", jax.config.jax_num_cpu_devices + 2)
        jax.config.update("jax_num_cpu_devices", 1)
    except RuntimeError:  # backends already started
        return False
    cores = os.sched_getaffinity(0)  # this thread's; the threads JAX starts now inherit it
    os.sched_setaffinity(0, {min(cores)})
    try:
        jax.local_devices()
    finally:
        os.sched_setaffinity(0, cores)
    return True


def enable_compilation_cache() -> None:
    """Persist compiled programs across processes (``$WPBJAX_CACHE_DIR``, default
    ``~/.cache/wpbjax/xla``; set it empty to turn the cache off). The CLI's commands call it first."""
    path = os.environ.get("WPBJAX_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "wpbjax", "xla"))
    if path:
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def local_devices(runs_per_call: int | None = None) -> list:
    """This process's devices. ``runs_per_call``: the most runs one call of the coming work holds; if
    that is few (under FEW_RUNS_PER_CORE per core) and JAX has not started, it starts on one core
    (:func:`start_on_one_core`)."""
    if runs_per_call is not None and runs_per_call < FEW_RUNS_PER_CORE * len(os.sched_getaffinity(0)):
        start_on_one_core()
    return jax.local_devices()


def describe(devices) -> str:
    kinds = sorted({device.device_kind for device in devices})
    return f"{len(devices)} x {devices[0].platform} ({', '.join(kinds)})"


def episode_sharding(devices) -> NamedSharding:
    """Split the leading (episode) axis of every array over ``devices``."""
    return NamedSharding(Mesh(np.asarray(devices), ("episodes",)), PartitionSpec("episodes"))


def place(tree, devices):
    """Put a pytree whose leaves share a leading episode axis onto ``devices`` (sharded)."""
    if len(devices) == 1:
        return jax.device_put(tree, devices[0])
    return jax.device_put(tree, episode_sharding(devices))


def on_devices(local, mesh, replicated, sharded):
    """``local(*replicated, *sharded)`` on each device's share of the episode axis (``shard_map``),
    or directly when ``mesh`` is None (one device)."""
    if mesh is None:
        return local(*replicated, *sharded)
    episodes = PartitionSpec(mesh.axis_names[0])
    specs = (PartitionSpec(),) * len(replicated) + (episodes,) * len(sharded)
    return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=episodes, check_vma=False)(*replicated, *sharded)


def mesh_of(array):
    """The device mesh ``array`` (an episode batch's leaf) is sharded over (see :func:`place`), or None for one
    device."""
    mesh = getattr(array.sharding, "mesh", None)
    return mesh if mesh is not None and mesh.devices.size > 1 else None
