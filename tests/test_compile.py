"""Budgets and params are traced: a new budget grid or param value never recompiles."""
import jax
import numpy as np

from helpers import make_episode
from wpbjax import simulate
from wpbjax.episodes.encode import encode_episodes
from wpbjax.policies import make


def test_new_budgets_and_params_do_not_retrace():
    batch = encode_episodes([make_episode([{"api": "a", "x": i} for i in range(6)])] * 2).batch("privileged")
    policy = make("priority_threshold")
    simulate.simulate(policy, batch, [100, 200])
    before = simulate.compiled_count()
    for budgets in ([1, 2], [300, 400], [10**6, 5]):
        for threshold in (0.1, 0.9):
            simulate.simulate(policy, batch, budgets, params={"threshold": np.float32(threshold)})
    assert simulate.compiled_count() == before


def test_rollout_traces_once_per_shape():
    import chex

    batch = encode_episodes([make_episode([{"api": "a"}] * 4)]).batch("unprivileged")
    policy = make("last_kb")
    episode = jax.tree_util.tree_map(lambda leaf: leaf[0], batch)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(budget):
        return simulate.rollout(policy, policy.default_params(), episode, budget, jax.random.key(0)).used

    # each write costs 76 bytes (see test_store): 1, 2 and all 4 steps fit
    assert [int(run(b)) for b in (100, 200, 1000)] == [76, 152, 304]


def test_quick_and_full_builds_agree():
    from wpbjax.episodes.reference_gen import DriftConfig, generate_episodes

    batch = encode_episodes(generate_episodes(DriftConfig(mode="burst_redundancy", steps=60), 3)).batch("privileged")
    budgets = [300, 1024, 4096]
    for name in ("priority_greedy", "merge_aggressive"):
        quick = simulate.simulate(make(name), batch, budgets, work=0)
        full = simulate.simulate(make(name), batch, budgets, work=simulate.QUICK_COMPILE_BELOW)
        for field, value in vars(quick).items():
            np.testing.assert_array_equal(np.asarray(value), np.asarray(getattr(full, field)), err_msg=f"{name} {field}")
