"""Budgets and params are traced: a new budget grid or param value never recompiles."""

import jax
import numpy as np
from helpers import make_episode

from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.policies import make
from wpbjax.testing import max_traces


def test_new_budgets_and_params_do_not_retrace():
    batch = encode_episodes([make_episode([{"api": "a", "x": i} for i in range(6)])] * 2).batch("privileged")
    policy = make("priority_threshold")
    with max_traces(rollout, "_batch_counts_quick"), max_traces(rollout, "_batch_counts"):
        rollout.batch_counts(policy, batch, [100, 200])
        for budgets in ([1, 2], [300, 400], [10**6, 5]):
            for threshold in (0.1, 0.9):
                rollout.batch_counts(policy, batch, budgets, params={"threshold": np.float32(threshold)})


def test_rollout_traces_once_per_shape():
    import chex

    batch = encode_episodes([make_episode([{"api": "a"}] * 4)]).batch("unprivileged")
    policy = make("last_kb")
    episode = jax.tree_util.tree_map(lambda leaf: leaf[0], batch)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(budget):
        return rollout.rollout(policy, policy.default_params(), episode, budget, jax.random.key(0)).used

    # each write costs 76 bytes (see test_store): 1, 2 and all 4 steps fit
    assert [int(run(b)) for b in (100, 200, 1000)] == [76, 152, 304]


def test_quick_and_full_builds_agree():
    from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes

    batch = encode_episodes(generate_episodes(DriftConfig(mode="burst_redundancy", steps=60), 3)).batch("privileged")
    budgets = [300, 1024, 4096]
    for name in ("priority_greedy", "merge_aggressive"):
        quick = rollout.batch_counts(make(name), batch, budgets, work=0)
        full = rollout.batch_counts(make(name), batch, budgets, work=rollout.QUICK_COMPILE_BELOW)
        for field, value in vars(quick).items():
            np.testing.assert_array_equal(
                np.asarray(value), np.asarray(getattr(full, field)), err_msg=f"{name} {field}"
            )
    # param grids and per-run inputs (a hindsight policy's plan) have their own programs, in both builds
    for name, params in (("uniform_sample", {"every_n": [2, 5]}), ("oracle_optimal", None)):
        quick = rollout.grid_counts(make(name), batch, budgets, params=params, work=0)
        full = rollout.grid_counts(make(name), batch, budgets, params=params, work=rollout.QUICK_COMPILE_BELOW)
        _assert_same_counts(quick, full, name)


def _generated_batch(n_episodes, track="privileged"):
    from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes

    return encode_episodes(generate_episodes(DriftConfig(mode="burst_redundancy", steps=60), n_episodes)).batch(track)


def _assert_same_counts(ours, expected, what):
    for field, value in vars(expected).items():
        np.testing.assert_array_equal(np.asarray(getattr(ours, field)), np.asarray(value), err_msg=f"{what} {field}")


def test_passes_give_the_same_counts_as_one_pass():
    # 7 episodes in passes of 3: three passes, the last padded with two copies of episode 6
    batch, budgets = _generated_batch(7), [300, 1024, 4096]
    for name in ("priority_greedy", "merge_aggressive"):
        whole = rollout.batch_counts(make(name), batch, budgets, per_pass=7)
        _assert_same_counts(rollout.batch_counts(make(name), batch, budgets, per_pass=3), whole, name)
    grid = rollout.grid_counts(make("uniform_sample"), batch, budgets, params={"every_n": [2, 5]})
    for point, every_n in enumerate((2, 5)):
        one = rollout.batch_counts(make("uniform_sample"), batch, budgets, params={"every_n": every_n}, per_pass=2)
        _assert_same_counts(
            jax.tree_util.tree_map(lambda leaf, point=point: leaf[point], grid), one, f"every_n={every_n}"
        )


PASSES_ON_FOUR_DEVICES = """
import sys, jax, numpy as np
sys.path[:0] = [{tests!r}, {tests_root!r}]
from test_compile import _generated_batch
from wpbjax.runtime import devices
from wpbjax.core import rollout
from wpbjax.policies import make
from wpbjax.testing import max_traces
assert len(jax.devices()) == 4
batch = devices.place(_generated_batch(8), jax.devices())
counts = rollout.batch_counts(make("merge_aggressive"), batch, [300, 1024, 4096], per_pass=1)
assert devices.mesh_of(batch.valid) is not None
np.savez({out!r}, **{{field: np.asarray(value) for field, value in vars(counts).items() if value is not None}})
"""


def test_passes_on_four_devices_give_the_same_counts(tmp_path):
    import os
    import pathlib
    import subprocess
    import sys

    out = tmp_path / "four.npz"
    script = PASSES_ON_FOUR_DEVICES.format(
        tests=str(pathlib.Path(__file__).parent), tests_root=str(pathlib.Path(__file__).parents[1]), out=str(out)
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", WPBJAX_CACHE_DIR="")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    four = np.load(out)
    one = rollout.batch_counts(make("merge_aggressive"), _generated_batch(8), [300, 1024, 4096])
    for field, value in vars(one).items():
        if value is not None:
            np.testing.assert_array_equal(four[field], np.asarray(value), err_msg=field)
