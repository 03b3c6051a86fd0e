"""Throughput benchmark: compile time and steady-state episode-steps per second, per policy.

Throughput = runs × steps ÷ wall time of one batched ``simulate`` call (best of ``repeats`` after a
warm-up), runs = episodes × budgets. Episodes: up to 256 distinct reference-generator episodes
(the four modes in turn), tiled to the asked count; the tiles share one distribution, and the
engine does the same work per step whether or not episodes repeat.
"""

from __future__ import annotations

import functools
import time

import jax
import numpy as np

from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episode
from wpbjax.policies import lineup, make
from wpbjax.runtime import devices as devices_lib

DISTINCT_EPISODES = 256
DEFAULT_BUDGETS = (1024, 10240, 102400)


def bench_batch(n_episodes: int, n_steps: int, track: str = "privileged", devices=None, seed: int = 0):
    distinct = [
        generate_episode(DriftConfig(mode=MODES[i % len(MODES)], steps=n_steps, seed=seed), i)
        for i in range(min(n_episodes, DISTINCT_EPISODES))
    ]
    encoded = encode_episodes(distinct)
    tiles = np.arange(n_episodes) % len(distinct)
    return encoded.batch(track, tiles, devices or devices_lib.local_devices())


def run_bench(
    n_episodes: int = 10000,
    n_steps: int = 200,
    policies=None,
    budgets=DEFAULT_BUDGETS,
    repeats: int = 3,
    devices=None,
    per_pass: int | None = None,
) -> dict:
    """``per_pass``: episodes per pass on each device (default :func:`wpbjax.core.rollout.episodes_per_pass`,
    sized for a CPU's cache; at least the episodes per device: one pass), reported as run."""
    devices = devices or devices_lib.local_devices()
    n_episodes = -(-n_episodes // len(devices)) * len(devices)  # shardable
    per_device = n_episodes // len(devices)
    per_pass = min(per_pass or rollout.episodes_per_pass(n_steps, len(budgets)), per_device)
    names = list(policies or lineup("privileged"))
    batch = bench_batch(n_episodes, n_steps, devices=devices)
    runs = n_episodes * len(budgets)
    results = []
    for name in names:
        policy = make(name)
        # steady-state throughput is what large sweeps get: always the fully optimised build
        run = functools.partial(
            rollout.batch_counts, policy, batch, budgets, work=rollout.QUICK_COMPILE_BELOW, per_pass=per_pass
        )
        started = time.perf_counter()
        jax.block_until_ready(run())
        first = time.perf_counter() - started
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            jax.block_until_ready(run())
            best = min(best, time.perf_counter() - started)
        # run_s to 4 significant digits: rounding to fixed decimals loses a tiny run's precision (docs/performance.md)
        results.append(
            {
                "policy": name,
                "compile_s": round(max(first - best, 0.0), 4),
                "run_s": float(f"{best:.4g}"),
                "episode_steps_per_s": runs * n_steps / best,
            }
        )
    return {
        "devices": len(devices),
        "platform": devices[0].platform,
        "device_kind": devices[0].device_kind,
        "episodes": n_episodes,
        "steps": n_steps,
        "budgets": list(budgets),
        "runs": runs,
        "per_pass": per_pass,
        "policies": results,
    }
