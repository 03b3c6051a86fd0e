"""oracle_optimal and the exact oracle's chosen set: optimal, within budget, regret 0."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from wpbjax.scoring import oracle


def brute_force(weights, values, budget):
    best = 0.0
    for mask in itertools.product([0, 1], repeat=len(weights)):
        if sum(w for w, m in zip(weights, mask) if m) <= budget:
            best = max(best, sum(v for v, m in zip(values, mask) if m))
    return best


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.sampled_from([0.0, 0.5, 1.0, 5.0, 6.0, -1.0, 0.1, 0.3])),
        min_size=1,
        max_size=9,
    ),
    st.lists(st.integers(1, 200), min_size=1, max_size=4),
)
def test_exact_choice_is_an_optimal_feasible_set(items, budgets):
    """On and off the 2^-k grid (0.1, 0.3 force the capacity DP)."""
    weights = np.array([w for w, _ in items])
    values = np.array([v for _, v in items])
    chosen = oracle.exact_choice(weights, values, budgets)
    for row, budget in zip(chosen, budgets):
        assert weights[row].sum() <= budget
        assert (values[row] > 0).all()
        assert values[row].sum() == pytest.approx(brute_force(weights, values, budget), abs=1e-9)


def test_oracle_optimal_equals_the_exact_oracle_on_the_paper_grid():
    """Every paper episode (4 modes x 10) at the 11 paper budgets: utility = exact oracle, regret 0."""
    from wpbjax.episodes.encode import concat_encoded, encode_episodes
    from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
    from wpbjax.sweeps import PAPER_BUDGETS, run_sweep

    encoded = concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode), 10)) for mode in MODES])
    table = run_sweep(encoded, budgets=PAPER_BUDGETS, policies=["oracle_optimal"], tracks=["oracle"])
    assert len(table) == 40 * 11
    assert (table.regret == 0).all()
    assert (table.policy_utility == table.oracle_utility).all()
    assert (table.bytes_used <= table.budget_bytes).all()
    exact = oracle.exact_batch(
        encoded.track_costs("unprivileged"), encoded.utility64, encoded.arrays.length, PAPER_BUDGETS
    )
    assert np.array_equal(table.oracle_utility.to_numpy().reshape(11, 40).T, exact)  # rows: budget, then episode
    assert (exact[:, 0] < exact[:, -1]).all()  # 1 KB is tight for every episode: the plan really chooses


def test_simulate_computes_the_plan_for_hindsight_policies():
    from helpers import make_episode

    from wpbjax.core import rollout
    from wpbjax.episodes.encode import encode_episodes
    from wpbjax.policies import make
    from wpbjax.scoring.metrics import policy_utility

    observations = [{"api": "a", "pad": "x" * k} for k in (0, 60, 60, 5, 30)]
    utilities = [2.0, 3.0, 3.0, 0.5, 1.0]
    encoded = encode_episodes([make_episode(observations, utilities=utilities)])
    budgets = [100, 294, 400, 10**6]
    counts = rollout.batch_counts(make("oracle_optimal"), encoded.batch("unprivileged"), budgets)
    got = policy_utility(np.asarray(counts.retained), encoded.utility64[:, None, :])
    costs = encoded.track_costs("unprivileged")[0].tolist()
    assert got[0].tolist() == [brute_force(costs, utilities, b) for b in budgets]
