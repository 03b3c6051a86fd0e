"""Generate and encode large episode sets on every core (worker processes), then join them.

Python generation and encoding cost ~4 ms per 200-step episode; spreading slices over processes
divides that by the core count. Small sets stay in-process.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from wpbjax.episodes.encode import EncodedEpisodes, concat_encoded, encode_episodes
from wpbjax.episodes.reference_gen import DriftConfig, generate_episode

PARALLEL_THRESHOLD = 256  # episodes; below this a process pool costs more than it saves


def _generate_and_encode(config: DriftConfig, start: int, count: int) -> EncodedEpisodes:
    episodes = [generate_episode(config, i) for i in range(start, start + count)]
    return encode_episodes(episodes, source=f"{config.mode} episodes {start}..{start + count - 1}",
                           n_steps=config.steps, validate=False)  # our generator's output (tests validate it)


def generate_encoded(configs: list[DriftConfig], n_episodes: int, workers: int | None = None) -> EncodedEpisodes:
    """Episodes 0..n_episodes-1 of each config, encoded, in config order."""
    workers = workers or os.cpu_count() or 1
    total = len(configs) * n_episodes
    if workers == 1 or total < PARALLEL_THRESHOLD:
        return concat_encoded([_generate_and_encode(config, 0, n_episodes) for config in configs])
    per_job = max(-(-total // (4 * workers)), 32)
    jobs = [(config, start, min(per_job, n_episodes - start)) for config in configs
            for start in range(0, n_episodes, per_job)]
    # forkserver: workers fork from a fresh server process, never from one whose JAX runtime
    # threads are running (forking those can deadlock)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["wpbjax.episodes.parallel"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parts = list(pool.map(_generate_and_encode, *zip(*jobs)))
    return concat_encoded(parts)
