"""Large random packages of memaudit_small's shape, drawn with ``jax.random`` (on device).

Same groups, candidates, coverage and units as memaudit_small at the given counts (hundreds of
groups with ``normal_count=200, update_count=150``); the per-package draws (fact weight in
{1.0, 1.2, 1.4}, raw span extra cost in {0, 1}, current and invalidation weights 2.0 + 0.25 k,
k in {0, 1, 2}) come from a ``jax.random`` key instead of Python's ``random.Random(seed)``: not
the artifact's packages, the same distribution. Reservoir order hashes the artifact's ids with
the package index as the seed.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.packages.memaudit_gen import build_batch, drawn_arrays, placement, reservoir_keys, static_arrays
from wpbjax.packages.model import PackageMeta, PackageSet
from wpbjax.runtime.devices import COMPILER_OPTIONS


@functools.partial(jax.jit, static_argnames=("n_packages",), compiler_options=COMPILER_OPTIONS)
def _draw(key, n_packages: int, cost0, weight0, placement):
    """The per-package arrays: (cost [P, G, C] int32, weight [P, R] float64)."""
    fact_key, raw_key, update_key = jax.random.split(key, 3)
    n_facts, n_updates = placement[0].shape[0], placement[2].shape[0]
    fact_pick = jax.random.randint(fact_key, (n_packages, n_facts), 0, 3)
    raw_extra = jax.random.randint(raw_key, (n_packages, n_facts), 0, 2)
    update_pick = jax.random.randint(update_key, (n_packages, n_updates, 2), 0, 3)
    return drawn_arrays(jnp, fact_pick, raw_extra, update_pick, cost0, weight0, placement)


def random_packages(key, n_packages: int, normal_count: int = 3, update_count: int = 2) -> PackageSet:
    """``n_packages`` random packages: a PackageSet on the host (float64 values). Arrays that are
    the same for every package are broadcast views (dense coverage of 500 groups would not fit)."""
    with jax.enable_x64(True):
        static = static_arrays(normal_count, update_count)
        cost, weight = (
            np.asarray(a) for a in _draw(key, n_packages, static[0], static[4], placement(normal_count, update_count))
        )
    shared = build_batch(
        np,
        np.zeros((1, normal_count), np.int64),
        np.zeros((1, normal_count), np.int32),
        np.zeros((1, update_count, 2), np.int64),
        normal_count,
        update_count,
    )
    batch = dataclasses.replace(
        jax.tree_util.tree_map(lambda a: np.broadcast_to(a, (n_packages,) + a.shape[1:]), shared),
        cost=cost,
        weight=weight,
    )
    reservoir = reservoir_keys(range(n_packages), normal_count, update_count)
    meta = PackageMeta(tuple(f"random_{i}" for i in range(n_packages)), (), (), (), tuple(range(n_packages)))
    return PackageSet(batch, meta, reservoir)
