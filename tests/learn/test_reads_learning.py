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
from wpbjax.learn.soft_reads import probe_tables, soft_read_accuracy, soft_reads


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


# --- Probes of several facts and history probes ------------------------------------------------------------------
# tests/scoring/test_reads_multi.py's five steps (t = 0..4: city Bergen, pet cat, city Oslo, city Rome, job baker);
# relevance only (the fact names share no token), ties to the newer record.
@pytest.fixture(scope="module")
def multi_tables():
    from tests.scoring.test_reads_multi import HISTORY, RETRIEVER as MULTI, TWO, _episode

    encoded = encode_episodes([_episode([dict(TWO, weights=[3, 1]), HISTORY])])
    return {name: jnp.asarray(value[0]) for name, value in probe_tables(encoded, "unprivileged", MULTI).items()}


def test_multi_fact_and_history_probes_stored_by_hand(multi_tables):
    # K = 5 = T: every present slot is retrieved, so slot s is read with its store probability w_s. City + pet (weights
    # 3, 1) after step 4: city is right when Rome's slot 3 is read (the newest city record), w3; pet when slot 1 is,
    # w1; the probe is right w3 * w1, its credit (3 w3 + w1) / 4. The history of city (Bergen 0, Oslo 2, Rome 3) is
    # right when all three are read: w0 w2 w3. With w = (0.8, 0.5, 0.6, 0.25, 1): probe 1 right 0.125, credit
    # (0.75 + 0.5) / 4 = 0.3125; history 0.8 * 0.6 * 0.25 = 0.12. Means over the two probes: 0.1225 and 0.21625
    stored = jnp.asarray([0.8, 0.5, 0.6, 0.25, 1.0])
    accuracy, credit = soft_reads(stored, multi_tables, 5)
    assert float(accuracy) == pytest.approx(0.1225, abs=1e-6)
    assert float(credit) == pytest.approx(0.21625, abs=1e-6)
    # pet never stored, the rest always, K = 3 (ranking 3, 2, 0 of city, then 1 absent, 4): city right, pet not
    # (credit 3/4); the history reads all three versions: accuracy (0 + 1) / 2, credit (0.75 + 1) / 2
    accuracy, credit = soft_reads(jnp.asarray([1.0, 0.0, 1.0, 1.0, 1.0]), multi_tables, 3)
    assert (float(accuracy), float(credit)) == pytest.approx((0.5, 0.875), abs=1e-5)  # (log floor 1e-6 per slot)
    # the gradient reaches the history's versions and pet's step
    gradient = np.asarray(jax.grad(lambda w: soft_reads(w, multi_tables, 5)[1])(stored))
    assert gradient[0] > 0 and gradient[1] > 0 and gradient[2] > 0 and abs(gradient[4]) < 1e-6


def test_with_every_probability_0_or_1_the_soft_reads_are_the_hard_reads():
    # the default generated probes (several facts, histories) on two episodes of each mode; a store that keeps a
    # random half of the steps forever, read by the hard scorer (wpbjax.scoring.reads) and by the soft one
    from wpbjax.episodes import probes as probes_lib
    from wpbjax.episodes.encode import concat_encoded
    from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
    from wpbjax.scoring import reads

    encoded = probes_lib.with_default_probes(
        concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode, seed=3), 2)) for mode in MODES])
    )
    assert (encoded.probe_kind == probes_lib.HISTORY).any() and (
        np.bincount(encoded.probe_group[0][encoded.probe_group[0] >= 0]) > 1
    ).any()
    n, steps = encoded.n_episodes, encoded.arrays.valid.shape[1]
    stored = np.random.default_rng(0).random((n, steps)) < 0.5
    history = {
        "left_at": np.where(stored, reads.STILL_HELD, -1)[:, None, :].astype(np.int32),
        "parent": np.full((n, 1, steps), -1, np.int32),
    }
    hard = reads.read_metrics(history, encoded, np.arange(n), "unprivileged", reads.Retriever(top_k=(1, 5, 20)))
    tables = {name: jnp.asarray(value) for name, value in probe_tables(encoded, "unprivileged").items()}
    for index, k in enumerate((1, 5, 20)):
        accuracy, credit = jax.vmap(lambda w, t, k=k: soft_reads(w, t, k))(jnp.asarray(stored, jnp.float32), tables)
        np.testing.assert_allclose(accuracy, hard["read_accuracy"][:, 0, index], atol=1e-5)
        np.testing.assert_allclose(credit, hard["read_credit"][:, 0, index], atol=1e-5)
    assert not np.allclose(hard["read_accuracy"], hard["read_credit"])  # credit differs where a probe is half right


def test_the_credit_term_reaches_training_and_its_shares_are_checked():
    from wpbjax.learn.train import train

    small = TrainConfig(steps=2, batch=4, pool_per_mode=1, episode_steps=30, f1_weight=0.0, credit_weight=1.0)
    _, history = train(small)
    # the soft objective is 1 - soft read credit alone: within (0, 1) (0 if the term were not wired)
    assert 0 < history[-1]["soft_loss"] < 1
    for bad in (dict(read_multi_fact_rate=1.5), dict(read_history_rate=float("nan")), dict(credit_weight=-1.0)):
        with pytest.raises(ArgumentError):
            TrainConfig(**bad)
