"""The published generator's episodes as encoded arrays, never written as JSON.

Each episode's random draws (:func:`wpbjax.episodes.generators.published_gen.draw_episode`, the published
order) are replayed into the JAX generator's latent (per step: endpoint, drift, and the endpoint's
version, list length, initial params left, digit-class counts and api slot), and
:func:`wpbjax.episodes.generators.jax_gen.post` computes the encoded arrays from it on numpy: the byte
arithmetic the JAX generator uses. The arrays equal what the encoder makes of the generated
JSON, up to the numbering of ids (tests/episodes/test_reference_arrays.py), at a tenth of the cost.
"""

from __future__ import annotations

import numpy as np

import wpbjax.episodes.generators.jax_gen as jax_gen
from wpbjax.episodes.batch import EncodedEpisodes
from wpbjax.episodes.generators.published_gen import DriftConfig, draw_episode


def as_jax_config(config: DriftConfig) -> jax_gen.JaxGenConfig | None:
    """``config`` as the JAX generator's config (the same process), or None where its ids would
    not fit int32 (``api_pool`` > 512, ``max_params`` > 1000, ``steps`` >= 2^20, a seed past int32):
    such sets go through JSON."""
    try:
        return jax_gen.JaxGenConfig(**vars(config))
    except ValueError:
        return None


def latent(config: jax_gen.JaxGenConfig, start: int, count: int) -> dict:
    """The step-major latent ([T, N]; ``below`` [T, C-1, N]) of episodes ``start .. start+count-1``,
    replayed from the published draws with the JAX generator's state updates (``jax_gen.latent``)."""
    n_apis, bounds = config.api_pool, [10**c for c in range(1, config.shape.version_digit_classes)]
    # per episode and step: endpoint, drift, deprecated, version, length, initial_left, slot, below...
    table = np.empty((count, config.steps, 7 + len(bounds)), np.int32)
    for index, episode in enumerate(range(start, start + count)):
        n_initial, draws = draw_episode(config, episode)
        # An endpoint's state (version, length, initial_left, slot, below...) changes only on its
        # drifts (8% of steps by default): the states are made once each, and every step takes its
        # endpoint's current one (a Python loop over steps is most of the generator's time).
        states = [
            (1, initial, initial, endpoint) + (initial,) * len(bounds) for endpoint, initial in enumerate(n_initial)
        ]
        current = list(range(n_apis))  # endpoint -> its state's row in ``states``
        state_of_step = []
        for endpoint, drift, coin, _ in draws:
            if drift:
                version, length, initial_left, _, *below = states[current[endpoint]]
                version += 1
                if coin and length:
                    length -= 1
                    initial_left = min(initial_left, length)
                else:
                    length += 1
                below = [length if version < bound else min(under, length) for under, bound in zip(below, bounds)]
                current[endpoint] = len(states)
                states.append((version, length, initial_left, len(states), *below))  # slot: n_apis + changes so far
            state_of_step.append(current[endpoint])
        table[index, :, :3] = np.array(draws, np.int32)[:, (0, 1, 3)]  # endpoint, drift, deprecated
        table[index, :, 3:] = np.array(states, np.int32)[state_of_step]
    table = table.transpose(2, 1, 0)  # [K, T, N]
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
