"""The published generator straight to arrays (no JSON): the same encoding, the same sweep rows,
and configs whose ids would overflow go through JSON."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import assert_same_encoding

from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.generators import parallel, published_arrays
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.sweeps import run_sweep


def _both(config: DriftConfig, n_episodes: int, start: int = 0):
    via_arrays = published_arrays.generate_encoded(published_arrays.as_jax_config(config), start, n_episodes)
    episodes = generate_episodes(config, start + n_episodes)[start:]
    return via_arrays, encode_episodes(episodes)


@pytest.mark.parametrize("mode", MODES)
def test_arrays_equal_the_encoding_of_the_json(mode):
    direct, via_json = _both(DriftConfig(mode=mode, seed=11), 12, start=5)
    assert_same_encoding(direct, via_json)
    assert list(direct.episode_id) == list(via_json.episode_id) == list(range(5, 17))
    assert list(direct.mode) == list(via_json.mode) and direct.field_keys == via_json.field_keys


@pytest.mark.parametrize(
    "config",
    [
        # versions past 9 and 99 (digit classes), lists popped to empty and pushed again
        DriftConfig(api_pool=1, drift_prob=0.95, steps=260, max_params=12, seed=5),
        DriftConfig(api_pool=2, drift_prob=0.9, steps=120, max_params=2, seed=6),
        # two-digit endpoints and initial params; bursts every step; no bursts at all
        DriftConfig(mode="burst_redundancy", api_pool=12, max_params=12, burst_interval=1, burst_len=1, seed=7),
        DriftConfig(mode="burst_drift", burst_interval=0, steps=80, seed=8),
    ],
)
def test_arrays_at_the_extremes_of_the_byte_model(config):
    direct, via_json = _both(config, 4)
    assert direct.arrays.version_number.max() >= (100 if config.steps > 200 else 2)
    assert_same_encoding(direct, via_json)


def test_sweep_rows_are_the_same_either_way():
    configs = [DriftConfig(mode=mode, steps=60, seed=2) for mode in MODES]
    direct = parallel.generate_encoded(configs, 5)
    via_json = encode_episodes([episode for config in configs for episode in generate_episodes(config, 5)])
    kwargs = dict(budgets=[300, 1500, 8192], policies="published", set_index=np.repeat(np.arange(4), 5))
    pd.testing.assert_frame_equal(run_sweep(direct, **kwargs), run_sweep(via_json, **kwargs))


def test_ids_that_would_overflow_go_through_json():
    """A seed past int32 (the JAX generator's key) or 600 endpoints: episodes made as JSON and encoded."""
    for config in (DriftConfig(seed=2**31 + 3, steps=30), DriftConfig(api_pool=600, steps=30)):
        assert published_arrays.as_jax_config(config) is None
        encoded = parallel.generate_encoded([config], 3)
        assert_same_encoding(encoded, encode_episodes(generate_episodes(config, 3)))
