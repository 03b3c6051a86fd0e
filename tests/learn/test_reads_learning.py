"""Read-aware learning (wpbjax/learn/soft_reads.py): the soft read accuracy is the hard one in the limit, on the
hand-computed store of tests/scoring/test_reads.py, its gradient is finite, and the read term reaches training."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.scoring.test_reads import RETRIEVER, _hand_episode
from wpbjax.common.argument_errors import ArgumentError
from wpbjax.episodes.encode import encode_episodes
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.soft_reads import probe_tables, soft_read_accuracy


@pytest.fixture(scope="module")
def tables():
    encoded = encode_episodes([_hand_episode()])
    return {name: jnp.asarray(value[0]) for name, value in probe_tables(encoded, "unprivileged", RETRIEVER).items()}


def test_every_step_stored_at_a_low_temperature_reads_as_oracle_memory(tables):
    # every step stored = tests/scoring/test_reads.py's oracle memory: 3 of 6 probes right at K = 1, 5 of 6 at K = 2
    # (its comments rank each probe's records by hand); with every probability 0 or 1 the soft reads are hard
    for top_k, expected in ((1, 3 / 6), (2, 5 / 6)):
        got = float(soft_read_accuracy(jnp.ones(6), tables, top_k))
        assert got == pytest.approx(expected, abs=1e-5)


def test_nothing_stored_reads_as_no_memory(tables):
    # only the never-seen probe (abstain) is right
    assert float(soft_read_accuracy(jnp.zeros(6), tables, 2)) == pytest.approx(1 / 6, abs=1e-5)


def test_half_stored_by_hand(tables):
    # each step held with probability 1/2, K = 1: the ranked slots up to the probe's step are retrieved w.p.
    # 1/2, 1/4, 1/8, ... (score = relevance + 0.5 ** age). p0 (t=2, A now, v1; usable and right: 2, 0): ranking
    # 2 (2.0), 0 (1.25), 1 (1.1): 2 retrieved 1/2, plus 0 retrieved (1/4) times 2 missed (1/2): 5/8 — the reader's
    # product takes the two as independent, though at K = 1 retrieving 0 implies 2 was absent (exact: 3/4).
    # p1 (t=3, A as of 1, v1; usable: 0): 3 (2.0), 2 (1.5), 0 (1.125): 1/8. p2 (t=4, A now, v2; right 3): 4 (B,
    # 1.6), 3 (1.5): 1/4. p3 never seen: 1. p4 (t=5, A now, v3; right 5): 5 first: 1/2. p5 (t=5, B now, v2;
    # right 4, the newest of B): 5 (A, 1.6), 4 (1.5): 1/4. Total (5/8 + 1/8 + 1/4 + 1 + 1/2 + 1/4) / 6 = 2.75 / 6
    assert float(soft_read_accuracy(jnp.full(6, 0.5), tables, 1)) == pytest.approx(2.75 / 6, abs=1e-5)


def test_the_gradient_is_finite_and_favours_the_step_the_probes_need(tables):
    gradient = np.asarray(jax.grad(lambda stored: soft_read_accuracy(stored, tables, 2))(jnp.full(6, 0.5)))
    assert np.isfinite(gradient).all()
    # step 4 (B v2) answers p5 and step 3 (A v2) answers p2: storing them helps; step 5 (A v3) answers p4
    assert gradient[4] > 0 and gradient[5] > 0


def test_read_settings_are_checked():
    for bad in (dict(read_top_k=0), dict(read_weight=-1.0), dict(f1_weight=float("nan"))):
        with pytest.raises(ArgumentError):
            TrainConfig(**bad)
