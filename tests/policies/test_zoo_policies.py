"""Each zoo policy's defining behaviour on small hand-built episodes (docs/policies.md)."""

import jax
import numpy as np
import pytest
from helpers import make_episode, run_one

from wpbjax.common.tracks import cost_track
from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.policies import make

# {"api": "a"} is 12 characters, the unprivileged view {"mode": "hand"} 16: 12 + 16 + 48 = 76 bytes.
COST_A = 76


def present(policy_name, observations, budget, track="unprivileged", params=None, **episode_kw):
    """Final store (present [T] list) and counts of one policy on one hand-built episode."""
    policy = make(policy_name)
    params = policy.resolve_params(params or {})
    episode = make_episode(observations, **episode_kw)
    if policy.plan is not None:  # a hindsight plan for this one episode and budget
        encoded = encode_episodes([episode])
        plan = policy.plan(encoded.track_costs(cost_track(track)), encoded.utility64, encoded.arrays.length, [budget])
        params.update({name: value[0, 0] for name, value in plan.items()})
    encoded, stores, counts = run_one(policy, [episode], budget, cost_track(track), params)
    kept = {name: value[0] for name, value in vars(counts).items() if value is not None}
    return stores.present[0].tolist(), kept, encoded


def padded(k, api="a"):
    return {"api": api, "pad": "x" * k}


def test_always_write_emits_every_step_and_the_store_rejects():
    kept, counts, _ = present("always_write", [{"api": "a"}] * 4, budget=2 * COST_A)
    assert kept == [True, True, False, False]
    assert counts["write_actions"] == 4


def test_never_write():
    kept, counts, _ = present("never_write", [{"api": "a"}] * 3, budget=10**6)
    assert kept == [False] * 3 and counts["write_actions"] == 0


def test_uniform_sample_every_n_and_start():
    kept, _, _ = present("uniform_sample", [{"api": "a"}] * 8, 10**6, params={"every_n": 3, "start": 1})
    assert [t for t, k in enumerate(kept) if k] == [1, 4, 7]
    kept, _, _ = present("uniform_sample", [{"api": "a"}] * 12, 10**6)  # published defaults: t mod 10 == 0
    assert [t for t, k in enumerate(kept) if k] == [0, 10]


@pytest.mark.parametrize("seed", range(4))
def test_recency_keeps_exactly_the_most_recent_suffix_that_fits(seed):
    rng = np.random.default_rng(seed)
    observations = [padded(int(k)) for k in rng.integers(0, 120, 14)]
    budget = int(rng.integers(150, 500))
    kept, counts, encoded = present("recency", observations, budget)
    costs = encoded.track_costs("unprivileged")[0].tolist()
    # the longest suffix of the steps that fit an empty store whose total fits the budget
    expected, total = set(), 0
    for t in reversed(range(len(costs))):
        if costs[t] > budget:
            continue
        if total + costs[t] > budget:
            break
        expected.add(t)
        total += costs[t]
    assert {t for t, k in enumerate(kept) if k} == expected
    assert counts["write_actions"] == sum(cost <= budget for cost in costs)  # SKIP only when it cannot fit at all


def test_recency_evicts_several_items_in_one_step():
    observations = [padded(0), padded(0), padded(0), padded(0), padded(170)]  # 87 x 4, then 257 bytes
    kept, counts, _ = present("recency", observations, budget=4 * 87)
    assert kept == [False, False, False, True, True]  # three EXPIREs (two calls) at the last step
    assert counts["expire_actions"] == 3


def test_utility_greedy_evicts_the_lowest_utility_first():
    observations = [{"api": "a"}] * 4
    utilities = [1.0, 5.0, 1.0, 6.0]
    kept, _, _ = present("utility_greedy", observations, 2 * COST_A, track="unprivileged", utilities=utilities)
    # writes 0 and 1; step 2 (u=1) does not beat the lowest stored (1): SKIP; step 3 (u=6) evicts step 0
    assert kept == [False, True, False, True]


def test_random_writes_with_probability_p_per_episode_key():
    policy = make("random")
    batch = encode_episodes([make_episode([{"api": "a"}] * 400)] * 3).batch("unprivileged")
    counts = rollout.batch_counts(policy, batch, [10**6], params={"p": 0.25}, key=jax.random.key(7))
    written = np.asarray(counts.n_retained)[:, 0]
    assert all(60 <= n <= 140 for n in written)  # 100 expected, sd ~8.7
    assert len(set(written.tolist())) > 1  # each episode draws from its own folded key
    again = rollout.batch_counts(policy, batch, [10**6], params={"p": 0.25}, key=jax.random.key(7))
    assert np.array_equal(np.asarray(again.retained), np.asarray(counts.retained))
    other = rollout.batch_counts(policy, batch, [10**6], params={"p": 0.25}, key=jax.random.key(8))
    assert not np.array_equal(np.asarray(other.retained), np.asarray(counts.retained))
    for p, n in ((0.0, 0), (1.0, 400)):
        assert (
            np.asarray(rollout.batch_counts(policy, batch, [10**6], params={"p": p}).n_retained).tolist() == [[n]] * 3
        )


def test_expire_oldest_drops_items_older_than_max_age():
    kept, counts, _ = present("expire_oldest", [{"api": "a"}] * 9, 10**6, params={"max_age": 2})
    assert kept == [False] * 6 + [True] * 3  # at t = 8, items with 8 - t > 2 are gone
    assert counts["expire_actions"] == 6
    # when full, it writes only once something is old enough to go
    kept, counts, _ = present("expire_oldest", [{"api": "a"}] * 6, 2 * COST_A, params={"max_age": 3})
    assert kept == [False, False, False, False, True, True]  # 0,1 written; 2,3 skipped; 4 and 5 replace 0 and 1
    assert counts["write_actions"] == 4


def test_dedupe_gate_skips_exact_repeats_of_the_latest_stored_item():
    observations = [
        {"api": "a", "x": 1},
        {"api": "a", "x": 1},
        {"api": "b", "x": 1},
        {"api": "a", "x": 1},
        {"api": "a", "x": 2},
        {"api": "a", "x": 1},
        {"api": "a", "x": 1, "y": None},
    ]
    kept, counts, _ = present("dedupe_gate", observations, 10**6)
    # 1 and 3 repeat the latest stored "a" (step 0); 4 differs; 5 differs from the latest (4); 6 has a new key
    assert kept == [True, False, True, False, True, True, True]
    assert counts["write_actions"] == 5


def test_dedupe_gate_writes_a_repeat_once_the_original_was_evicted():
    observations = [{"api": "a"}, {"api": "b"}, {"api": "c"}, {"api": "a"}]
    kept, _, _ = present("dedupe_gate", observations, 2 * COST_A)  # step 0 evicted at step 2
    assert kept == [False, False, True, True]


def test_novelty_gate_writes_first_sightings_only():
    observations = [{"api": "a"}, {"api": "a"}, {"api": "b"}, {"api": "a"}, "text", {"api": "c"}]
    kept, _, _ = present("novelty_gate", observations, 10**6)
    assert kept == [True, False, True, False, False, True]


def test_token_bucket_never_exceeds_its_rate():
    rate, burst, n_steps = 0.25, 3.0, 40
    kept, counts, _ = present("token_bucket", [{"api": "a"}] * n_steps, 10**6, params={"rate": rate, "burst": burst})
    written = np.array(kept, int)
    assert written[:3].tolist() == [1, 1, 1] and written[3] == 0  # the burst, then the rate
    for width in range(1, n_steps + 1):
        windows = np.convolve(written, np.ones(width, int), mode="valid")
        assert windows.max() <= burst + rate * (width - 1)
    assert written.sum() == 3 + int(rate * (n_steps - 3))  # and it does use its rate


def test_memorybank_recall_strengthens_an_item_against_eviction():
    observations = [{"api": "a"}, {"api": "b"}, {"api": "a", "x": 1}]
    kept, _, _ = present("memorybank_decay", observations, 2 * COST_A + 10)
    # at t=2, "a" recalls item 0 (age back to 0, S = 20): item 1 (age 1 / S 10) has the lowest retention
    assert kept == [True, False, True]
    kept, _, _ = present("recency", observations, 2 * COST_A + 10)
    assert kept == [False, True, True]  # recency would have dropped item 0


def test_deferred_batch_writes_several_buffered_steps_at_a_window_end():
    observations = [{"api": "a"}, {"api": "a"}, {"api": "b"}, {"api": "b"}, {"api": "c"}]
    kept, counts, _ = present("deferred_batch", observations, 2 * COST_A, params={"window": 4})
    # window 0..3 scores: new api 1, repeat 0, new 1, repeat 0. Best first (ties: later): 2, then 0; then
    # full. Step 4 is flushed at the episode's end but does not fit.
    assert kept == [True, False, True, False, False]
    assert counts["write_actions"] == 2 and counts["bytes_used"] == 2 * COST_A


def test_deferred_batch_ranks_by_priority_on_the_privileged_track():
    observations = [{"api": "a"}] * 4
    metadata = [{"mode": "hand", "priority": p} for p in (0.9, 0.1, 0.5, 0.2)]
    encoded = encode_episodes([make_episode(observations, metadata=metadata)])
    cost = int(encoded.track_costs("privileged")[0, 0])
    kept, _, _ = present(
        "deferred_batch", observations, 2 * cost, track="privileged", params={"window": 4}, metadata=metadata
    )
    assert kept == [True, False, True, False]  # step 0 (new api, 1.9), then step 2 (0.5) beats 3 (0.2) and 1


def _bandit_writes(name, new_utility, repeat_utility, params):
    # fresh api "n<i>" at odd steps (type NEW_API), the repeated api "r" at even steps (SEEN/REPEAT)
    observations = [{"api": f"n{t}"} if t % 2 else {"api": "r", "t": t} for t in range(60)]
    utilities = [new_utility if t % 2 else repeat_utility for t in range(60)]
    kept, _, _ = present(name, observations, 10**6, track="feedback", params=params, utilities=utilities)
    return np.array(kept)


@pytest.mark.parametrize("name,params", [("epsilon_greedy", {"epsilon": 0.0}), ("bandit_ucb", {"c": 0.1})])
def test_bandits_learn_which_step_type_pays(name, params):
    new_pays = _bandit_writes(name, 5.0, 0.5, params)
    repeat_pays = _bandit_writes(name, 0.5, 5.0, params)
    assert new_pays[1::2].sum() > 25 and new_pays[0::2].sum() < 10
    assert repeat_pays[0::2].sum() > 25


@pytest.mark.parametrize("name", ["epsilon_greedy", "bandit_ucb"])
def test_feedback_policies_see_a_utility_only_after_deciding_on_its_step(name):
    """Changing u_t for t >= k must not change any decision at steps <= k (big budget: no evictions)."""
    observations = [{"api": f"n{t % 5}"} if t % 3 else {"api": "r"} for t in range(40)]
    base = [float((t * 7) % 5) for t in range(40)]
    kept, _, _ = present(name, observations, 10**6, track="feedback", utilities=base)
    for k in (5, 17, 30):
        changed = base[:k] + [9.0 - u for u in base[k:]]
        kept_changed, _, _ = present(name, observations, 10**6, track="feedback", utilities=changed)
        assert kept_changed[: k + 1] == kept[: k + 1]
    earlier = [9.0 - u for u in base[:10]] + base[10:]
    assert present(name, observations, 10**6, track="feedback", utilities=earlier)[0] != kept  # it does learn


def test_oracle_optimal_writes_a_knapsack_optimum_where_greedy_does_not():
    # costs 87+k: a dense small item tempts a greedy pick that blocks the two better ones
    observations = [padded(0), padded(60), padded(60)]  # 87, 147, 147 bytes
    utilities = [2.0, 3.0, 3.0]
    kept, _, _ = present("oracle_optimal", observations, 294, track="oracle", utilities=utilities)
    assert kept == [False, True, True]


def test_info_tracks_gate_what_policies_can_read():
    from wpbjax.policies.base import Policy
    from wpbjax.state import actions
    from wpbjax.sweeps import run_sweep

    peek = Policy(
        "peek_utility",
        lambda params, state, store, episode, pos, budget: (actions.write_if(episode.utility[pos] > 0), state),
        tracks=("unprivileged", "privileged", "feedback", "oracle"),
        emits=frozenset({"write"}),
        layout=frozenset(),
    )
    from wpbjax.policies import registry

    registry.register(peek, replace=True)
    encoded = encode_episodes([make_episode([{"api": "a"}] * 3, utilities=[1.0, 0.0, 2.0])])
    table = run_sweep(
        encoded, budgets=[10**6], policies=["peek_utility"], tracks=["unprivileged", "privileged", "oracle"]
    )
    retained = dict(zip(table.track, table.policy_utility))
    assert retained == {"unprivileged": 0.0, "privileged": 0.0, "oracle": 3.0}
    # the information tracks pay the unprivileged write costs
    assert table.set_index("track").bytes_used["oracle"] == 2 * COST_A
