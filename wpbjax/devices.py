"""Where runs execute: every local device, episodes sharded along one mesh axis.

Uses ``jax.sharding`` (a 1-D Mesh over the local devices and a NamedSharding on the episode axis),
so XLA partitions the vmapped rollout; results are identical to one device. Multi-host: call
``jax.distributed.initialize()`` first and each process sweeps its own share of the grid.
"""
from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


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
