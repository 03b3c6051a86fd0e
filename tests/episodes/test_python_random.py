"""Python's random draws for many seeds at once (wpbjax.episodes.generators.python_random) against
Python's own ``random.Random``, and the published generator's draws read that way against
``draw_episode``, which makes them one episode at a time."""

from __future__ import annotations

import random

import numpy as np
import pytest

from wpbjax.episodes.generators import published_arrays, python_random
from wpbjax.episodes.generators.published_gen import DriftConfig, draw_episode

# 0 (a zero key), one-word seeds at both ends, a negative seed (Python seeds its absolute value),
# seeds of two and more 32-bit words (taken from Python's own state)
SEEDS = [0, 1, 77, 2**32 - 1, -9, 2**32, 2**32 + 7, 12345678901234567890]


def test_words_are_pythons_getrandbits_32():
    words = python_random.words(SEEDS, 1500)  # more than two MT19937 blocks of 624
    assert words.shape == (1500, len(SEEDS)) and words.dtype == np.uint32
    for column, seed in enumerate(SEEDS):
        stream = random.Random(seed)
        assert words[:, column].tolist() == [stream.getrandbits(32) for _ in range(1500)], seed


def test_draws_are_pythons_random_and_randrange():
    """Each stream draws only when its row is asked for, as a per-stream loop would: stream 0 draws
    uniform, randrange(5) (3 bits, rejects 5..7) and randrange(9) (4 bits, rejects 9..15); stream 1
    only the last; stream 2 uniform twice."""
    seeds = [3, 4, 5]
    streams = python_random.Streams(python_random.words(seeds, 200))
    first, second, third = (random.Random(seed) for seed in seeds)
    rows = np.array([0, 2])
    assert streams.uniform(rows).tolist() == [first.random(), third.random()]
    assert streams.below(np.array([0]), 5).tolist() == [first.randrange(5)]
    assert streams.below(np.array([1, 0]), 9).tolist() == [second.randrange(9), first.randrange(9)]
    assert streams.uniform(np.array([2])).tolist() == [third.random()]
    assert not streams.short.any()


def test_a_stream_read_past_its_words_is_short_and_stops():
    """Hand-made words [W=2, N=2]: stream 0's words both have the top bit set, so randrange(1)
    (getrandbits(1) until 0) rejects them and reads on past the end: it stops, short; stream 1's
    first word is 0, accepted at once."""
    streams = python_random.Streams(np.array([[0xFFFFFFFF, 0], [0x80000000, 5]], np.uint32))
    assert streams.below(np.array([0, 1]), 1).tolist()[1] == 0
    assert streams.short.tolist() == [True, False]
    streams.uniform(np.array([1]))  # words 1 and 2 of a stream of two
    assert streams.short.tolist() == [True, True]


@pytest.mark.parametrize(
    "config",
    [
        DriftConfig(),
        DriftConfig(mode="burst_redundancy", redundancy_prob=1.0),  # every later step repeats
        DriftConfig(api_pool=1, max_params=2),  # getrandbits(1), never rejected
        DriftConfig(api_pool=9, max_params=1000, steps=40),  # 4 bits for 9, 10 bits for 999
        DriftConfig(mode="redundancy", seed=-3, drift_prob=0.9),  # seeds -3, -2, ...: Python's absolute values
        DriftConfig(seed=2**32 - 2, steps=30),  # episodes' seeds cross into two 32-bit words
    ],
)
def test_published_draws_are_draw_episodes(config):
    draws = published_arrays.published_draws(config, 2, 6)
    for row in range(6):
        n_initial, steps = draw_episode(config, 2 + row)
        assert draws["n_initial"][row].tolist() == n_initial
        columns = [draws[name][row].tolist() for name in ("endpoint", "drift", "coin", "deprecated")]
        assert list(zip(*columns)) == steps


def test_episodes_that_need_more_words_are_read_again(monkeypatch):
    """At a drift every step a step takes ~8 words, past the first guess of 6: every episode is read
    again from twice the words, and the draws are still draw_episode's."""
    calls = []
    words = python_random.words
    monkeypatch.setattr(python_random, "words", lambda seeds, n: calls.append((len(seeds), n)) or words(seeds, n))
    config = DriftConfig(steps=300, drift_prob=1.0)
    draws = published_arrays.published_draws(config, 0, 3)
    assert len(calls) >= 2 and calls[1][1] == 2 * calls[0][1]
    for row in range(3):
        n_initial, steps = draw_episode(config, row)
        assert draws["n_initial"][row].tolist() == n_initial and draws["endpoint"][row].tolist() == [
            s[0] for s in steps
        ]
