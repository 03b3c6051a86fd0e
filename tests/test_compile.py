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
    before = simulate._simulate._cache_size()
    for budgets in ([1, 2], [300, 400], [10**6, 5]):
        for threshold in (0.1, 0.9):
            simulate.simulate(policy, batch, budgets, params={"threshold": np.float32(threshold)})
    assert simulate._simulate._cache_size() == before


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
