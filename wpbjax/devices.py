"""Where runs execute: every local device, episodes sharded along one mesh axis.

Uses ``jax.sharding`` (a 1-D Mesh over the local devices and a NamedSharding on the episode axis);
each device runs its share of the episodes (``simulate`` maps over it with ``shard_map``), and
results are identical to one device. Multi-host: call ``jax.distributed.initialize()`` first and
each process sweeps its own share of the grid.

On a CPU, the CLI makes one XLA device per core (:func:`use_every_core`).
"""
from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


# Compile options of the rollout and oracle programs. XLA:CPU's newer fusion emitters compile a
# rollout step's many small fusions about twice as slowly and run them no faster (measured on 2
# cores: fifo_store_all 81-92M -> 125-141M episode-steps/s, priority_greedy 9.5M -> 10.4M, compile
# 20-40% shorter). GPU backends ignore xla_cpu_* options.
COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False}


def use_every_core() -> None:
    """One XLA CPU device per core; call it before any JAX operation (the CLI does, first thing).

    A rollout step is many small kernels; XLA runs them far better as one device per core, each
    on its own episodes, than as one device splitting every kernel over threads: measured on
    2 cores, 1.3-2x more episode-steps/s (merge_aggressive 7.4M -> 15M). Leaves an explicit
    choice alone (``JAX_NUM_CPU_DEVICES``, ``XLA_FLAGS=--xla_force_host_platform_device_count=N``),
    and does nothing once JAX has started (the library used in-process keeps its devices).
    GPU runs are unaffected: the GPU stays the default device.
    """
    if jax.config.jax_num_cpu_devices != -1 or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return
    try:
        jax.config.update("jax_num_cpu_devices", len(os.sched_getaffinity(0)))
    except RuntimeError:  # backends already started
        pass


def enable_compilation_cache() -> None:
    """Persist compiled programs across processes (``$WPBJAX_CACHE_DIR``, default
    ``~/.cache/wpbjax/xla``; set it empty to turn the cache off). The CLI's commands call it first."""
    path = os.environ.get("WPBJAX_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "wpbjax", "xla"))
    if path:
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def local_devices() -> list:
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
