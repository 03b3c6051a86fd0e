"""Generate and encode large episode sets, on every core (worker processes) when that pays, then join them.

Configs the JAX generator can express (every published one) go straight to arrays
(:mod:`wpbjax.episodes.generators.published_arrays`); others are generated as JSON and encoded, far
slower. Worker processes take time to start, so only large sets use them (the thresholds' figures:
docs/performance.md).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import wpbjax.episodes.generators.published_arrays as published_arrays
from wpbjax.episodes.encode import EncodedEpisodes, concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episode

# episodes (of 200 steps) above which worker processes pay for their start, per path (docs/performance.md)
PARALLEL_THRESHOLD = {"arrays": 8192, "json": 256}


def _generate_and_encode(config: DriftConfig, start: int, count: int) -> EncodedEpisodes:
    jax_config = published_arrays.as_jax_config(config)
    if jax_config is not None:
        return published_arrays.generate_encoded(jax_config, start, count)
    episodes = [generate_episode(config, i) for i in range(start, start + count)]
    return encode_episodes(
        episodes, source=f"{config.mode} episodes {start}..{start + count - 1}", n_steps=config.steps, validate=False
    )  # our generator's output (tests validate it)


def generate_encoded(
    configs: list[DriftConfig], n_episodes: int, workers: int | None = None, start: int = 0, stop: int | None = None
) -> EncodedEpisodes:
    """Episodes 0..n_episodes-1 of each config, encoded, in config order; or of those
    ``len(configs) * n_episodes`` episodes only numbers ``start .. stop-1`` (config-major)."""
    workers = workers or os.cpu_count() or 1
    path = "arrays" if all(published_arrays.as_jax_config(config) for config in configs) else "json"
    stop = len(configs) * n_episodes if stop is None else stop
    # (config, first episode, count) of each config's part of the range
    parts = [
        (config, max(start - first, 0), min(stop - first, n_episodes) - max(start - first, 0))
        for config, first in zip(configs, range(0, len(configs) * n_episodes, n_episodes))
        if first < stop and first + n_episodes > start
    ]
    total = stop - start
    if workers == 1 or total * max(config.steps for config in configs) / 200 < PARALLEL_THRESHOLD[path]:
        return concat_encoded([_generate_and_encode(*part) for part in parts])
    per_job = max(-(-total // (4 * workers)), 32)
    jobs = [
        (config, begin, min(per_job, first + count - begin))
        for config, first, count in parts
        for begin in range(first, first + count, per_job)
    ]
    # forkserver: workers fork from a fresh server process, never from one whose JAX runtime
    # threads are running (forking those can deadlock)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["wpbjax.episodes.generators.parallel"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parts = list(pool.map(_generate_and_encode, *zip(*jobs)))
    return concat_encoded(parts)
