"""The published generator's episodes as encoded arrays, never written as JSON.

The episodes' random draws are the published ones (:func:`wpbjax.episodes.generators.published_gen.draw_episode`'s,
from ``random.Random(seed + episode)``), read for all episodes of a set at once from their Python random
streams (:mod:`wpbjax.episodes.generators.python_random`) rather than by a Python loop per episode. They are
replayed into the JAX generator's latent (per step: endpoint, drift, and the endpoint's version, list
length, initial params left, digit-class counts and api slot), and :func:`wpbjax.episodes.generators.jax_gen.post`
computes the encoded arrays from it on numpy: the byte arithmetic the JAX generator uses. The arrays equal
what the encoder makes of the generated JSON, up to the numbering of ids (tests/episodes/test_reference_arrays.py).
"""

from __future__ import annotations

import numpy as np

import wpbjax.episodes.generators.jax_gen as jax_gen
import wpbjax.episodes.generators.python_random as python_random
from wpbjax.episodes.batch import EncodedEpisodes
from wpbjax.episodes.generators.published_gen import DriftConfig


def as_jax_config(config: DriftConfig) -> jax_gen.JaxGenConfig | None:
    """``config`` as the JAX generator's config (the same process), or None where its ids would
    not fit int32 (``api_pool`` > 512, ``max_params`` > 1000, ``steps`` >= 2^20, a seed past int32):
    such sets go through JSON."""
    try:
        return jax_gen.JaxGenConfig(**vars(config))
    except ValueError:
        return None


def published_draws(config: DriftConfig, start: int, count: int) -> dict[str, np.ndarray]:
    """The random draws of episodes ``start .. start+count-1`` that
    :func:`wpbjax.episodes.generators.published_gen.draw_episode` makes one episode at a time (the
    published order, from ``random.Random(config.seed + episode)``), read for all episodes a step at a
    time: ``n_initial`` [N, A] and per step ``endpoint``, ``drift``, ``coin``, ``deprecated`` [N, T]."""
    seeds = np.arange(count) + config.seed + start
    draws = dict(
        n_initial=np.empty((count, config.api_pool), np.int64),
        endpoint=np.empty((count, config.steps), np.int64),
        **{name: np.empty((count, config.steps), bool) for name in ("drift", "coin", "deprecated")},
    )
    redundant = config.mode in ("redundancy", "burst_redundancy")
    # A step takes <= 2 words (a repeat's draw) + ~2 (an endpoint, at worst half rejected) + 2 (drift)
    # + 4 per drift; an episode whose stream runs short is read again from twice as many words.
    n_words = 4 * config.api_pool + config.steps * (6 + 2 * redundant) + 64
    todo = np.arange(count)
    while len(todo):
        streams = python_random.Streams(python_random.words(seeds[todo].tolist(), n_words))
        read = _read_draws(config, streams)
        done = ~streams.short
        for name, values in read.items():
            draws[name][todo[done]] = values[done]
        todo, n_words = todo[streams.short], 2 * n_words
    return draws


def _read_draws(config: DriftConfig, streams: python_random.Streams) -> dict[str, np.ndarray]:
    """:func:`published_draws` of every stream of ``streams`` (a short stream's values are void)."""
    n, every = len(streams.at), np.arange(len(streams.at))
    bursty = config.mode in ("burst_drift", "burst_redundancy")
    redundant = config.mode in ("redundancy", "burst_redundancy")
    n_initial = np.stack([2 + streams.below(every, config.max_params - 1) for _ in range(config.api_pool)], 1)
    endpoint = np.zeros((n, config.steps), np.int64)
    drift, coin, deprecated = (np.zeros((n, config.steps), bool) for _ in range(3))
    current = np.zeros(n, np.int64)
    for t in range(config.steps):
        in_burst = config.burst_interval > 0 and (t % config.burst_interval) < config.burst_len
        drawing = every
        if redundant and t > 0:  # a repeat keeps the previous step's endpoint
            drawing = every[streams.uniform(every) >= config.redundancy_prob]
        current[drawing] = streams.below(drawing, config.api_pool)
        endpoint[:, t] = current
        drift[:, t] = streams.uniform(every) < (config.burst_drift_prob if bursty and in_burst else config.drift_prob)
        drifted = np.flatnonzero(drift[:, t])
        coin[drifted, t] = streams.uniform(drifted) < 0.5
        deprecated[drifted, t] = streams.uniform(drifted) < 0.3
    return dict(n_initial=n_initial, endpoint=endpoint, drift=drift, coin=coin, deprecated=deprecated)


def latent(config: jax_gen.JaxGenConfig, start: int, count: int) -> dict:
    """The step-major latent ([T, N]; ``below`` [T, C-1, N]) of episodes ``start .. start+count-1``,
    replayed from the published draws (:func:`published_draws`) with the JAX generator's state updates
    (``jax_gen.latent``), every episode's step ``t`` at once."""
    draws = published_draws(config, start, count)
    bounds = np.array([10**c for c in range(1, config.shape.version_digit_classes)])
    every = np.arange(count)
    # each endpoint's state: version, list length, initial params left, api slot, and per digit class
    # the running minimum of the length since the version last had that class's digits (jax_gen)
    version = np.ones((count, config.api_pool), np.int64)
    length = draws["n_initial"].copy()
    initial_left = length.copy()
    slot = np.broadcast_to(np.arange(config.api_pool), length.shape).copy()
    below = np.repeat(length[:, :, None], len(bounds), 2)
    changes = np.zeros(count, np.int64)  # drifts so far: a drift's new state takes slot api_pool + changes
    table = np.empty((7 + len(bounds), config.steps, count), np.int32)
    for t in range(config.steps):
        endpoint = draws["endpoint"][:, t]
        rows = np.flatnonzero(draws["drift"][:, t])
        changed = endpoint[rows]
        version[rows, changed] += 1
        popped = draws["coin"][rows, t] & (length[rows, changed] > 0)  # a pop of an empty list pushes
        length[rows, changed] += np.where(popped, -1, 1)
        initial_left[rows, changed] = np.minimum(initial_left[rows, changed], length[rows, changed])
        new_version, new_length = version[rows, changed][:, None], length[rows, changed][:, None]
        below[rows, changed] = np.where(new_version < bounds, new_length, np.minimum(below[rows, changed], new_length))
        slot[rows, changed] = config.api_pool + changes[rows]
        changes[rows] += 1
        table[0, t], table[1, t], table[2, t] = endpoint, draws["drift"][:, t], draws["deprecated"][:, t]
        table[3, t], table[4, t] = version[every, endpoint], length[every, endpoint]
        table[5, t], table[6, t] = initial_left[every, endpoint], slot[every, endpoint]
        table[7:, t] = below[every, endpoint].T
    t = np.arange(config.steps)[:, None]
    in_burst = (config.burst_interval > 0) & (t % max(config.burst_interval, 1) < config.burst_len)
    zeros = np.zeros_like(table[0])
    return dict(
        endpoint=table[0],
        drift=table[1].astype(bool),
        deprecated=table[2].astype(bool),
        version=table[3],
        length=table[4],
        initial_left=table[5],
        slot=table[6],
        below=table[7:].transpose(1, 0, 2),
        in_burst=np.broadcast_to(in_burst, zeros.shape),
        kind=zeros,
        op=zeros,
        decoy=zeros,
        docs_rev=zeros,
    )


def generate_encoded(config: jax_gen.JaxGenConfig, start: int, count: int) -> EncodedEpisodes:
    """Episodes ``start .. start+count-1`` of ``config`` (a published mode), encoded."""
    arrays = jax_gen.post(
        np,
        config.shape,
        config.knobs(),
        jax_gen.metadata_lengths(config.mode),
        latent(config, start, count),
        with_latent=False,
    )
    return jax_gen.to_encoded(config, arrays, start)
