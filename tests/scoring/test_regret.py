"""Per-step traces and the oracle-to-date behind the regret curve."""

import jax
import numpy as np
import pytest

from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes
from wpbjax.policies import make
from wpbjax.reports import regret
from wpbjax.scoring import oracle
from wpbjax.scoring.metrics import policy_utility
from wpbjax.testing import max_traces

BUDGETS = [300, 1000, 2048, 5000, 100000]


@pytest.fixture(scope="module")
def encoded():
    return encode_episodes(generate_episodes(DriftConfig(mode="redundancy", steps=40, seed=5), 3))


@pytest.mark.parametrize("name", ["uniform_sample", "priority_greedy", "merge_aggressive"])
def test_trace_ends_at_the_final_counts(encoded, name):
    batch = encoded.batch("privileged")
    counts = rollout.batch_counts(make(name), batch, BUDGETS)
    trace = rollout.step_traces(make(name), batch, BUDGETS)
    assert trace.retained.shape == (3, len(BUDGETS), 40, 5)
    np.testing.assert_array_equal(trace.retained[:, :, -1], counts.retained)
    np.testing.assert_array_equal(trace.bytes_used[:, :, -1], counts.bytes_used)
    np.testing.assert_array_equal(trace.n_hit[:, :, -1], counts.n_hit)
    # the store never holds more than the budget, at any step
    assert (np.asarray(trace.bytes_used) <= np.asarray(BUDGETS)[None, :, None]).all()


def _first_steps(episode: dict, n: int) -> dict:
    """The episode cut after its first ``n`` steps, its labels kept to those steps (loading refuses labels
    that name absent steps)."""
    steps = episode["steps"][:n]
    kept = {step["t"] for step in steps}
    labels = dict(
        episode["labels"],
        critical_steps=[t for t in episode["labels"]["critical_steps"] if t in kept],
        utility_by_step={key: value for key, value in episode["labels"]["utility_by_step"].items() if int(key) in kept},
    )
    return dict(episode, steps=steps, labels=labels)


def test_trace_matches_truncated_episodes(encoded):
    """The store after step t is the final store of the episode cut after t (policies are causal)."""
    policy = make("last_kb")
    trace = rollout.step_traces(policy, encoded.batch("unprivileged"), BUDGETS)
    for t in (0, 7, 23):
        cut = encode_episodes(
            [_first_steps(e, t + 1) for e in generate_episodes(DriftConfig(mode="redundancy", steps=40, seed=5), 3)],
            n_steps=40,
        )
        counts = rollout.batch_counts(policy, cut.batch("unprivileged"), BUDGETS)
        np.testing.assert_array_equal(trace.bytes_used[:, :, t], counts.bytes_used)
        np.testing.assert_array_equal(trace.retained[:, :, t], counts.retained)


def test_default_rollout_does_not_compile_the_trace(encoded):
    batch = encoded.batch("privileged")
    with max_traces(rollout, "_step_traces", n=0):
        rollout.batch_counts(make("fifo_store_all"), batch, BUDGETS)


@pytest.mark.parametrize("jitter", [False, True])  # on a 2^-k grid (DP over value), and off it (over capacity)
def test_prefix_oracle_is_the_exact_oracle_of_each_prefix(encoded, jitter):
    weights, values, lengths = encoded.track_costs("privileged"), encoded.utility64.copy(), encoded.arrays.length
    if jitter:
        values = values + np.random.default_rng(0).random(values.shape) / 7
    prefix = regret.prefix_oracle(weights, values, lengths, BUDGETS)
    assert prefix.shape == (3, 40, len(BUDGETS))
    for t in (0, 1, 17, 39):
        np.testing.assert_allclose(
            prefix[:, t], oracle.exact_batch(weights, values, np.minimum(lengths, t + 1), BUDGETS), rtol=1e-12
        )


def test_regret_curves_rows(encoded):
    curves = regret.regret_curves(encoded, "unprivileged", ["fifo_store_all"], [1000])
    assert len(curves) == 3 * 40
    np.testing.assert_allclose(curves.regret_to_date, curves.oracle_to_date - curves.retained_to_date)
    # retained-to-date at the last step is the run's policy utility
    counts = rollout.batch_counts(make("fifo_store_all"), encoded.batch("unprivileged"), [1000])
    utility = policy_utility(np.asarray(counts.retained)[:, 0], encoded.utility64)
    np.testing.assert_allclose(curves[curves.step == 39].retained_to_date.to_numpy(), utility)
    assert jax.numpy.all(curves.oracle_to_date.to_numpy() >= curves.retained_to_date.to_numpy())
