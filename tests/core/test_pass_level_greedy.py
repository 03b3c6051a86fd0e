"""experiments/compacted_greedy.py (priority_greedy with the pass as the unit, its walks done only for the
runs that walk) counts exactly what the engine counts, including steps at which more runs walk than one
gather takes; experiments/eviction_frequency.py records the EXPIREs the engine's policy emits."""

import importlib.util

import jax
import numpy as np
from conftest import REPO

from wpbjax.bench import DEFAULT_BUDGETS, bench_batch
from wpbjax.core import rollout
from wpbjax.policies import make


def _experiment(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pass_level_walks_count_what_the_engine_counts():
    compacted, frequency = _experiment("compacted_greedy"), _experiment("eviction_frequency")
    n_steps, budgets = 120, np.asarray(DEFAULT_BUDGETS, np.int32)
    batch = bench_batch(12, n_steps, devices=jax.local_devices()[:1])
    engine = jax.device_get(rollout.batch_counts(make("priority_greedy"), batch, budgets))
    expires, _ = frequency.eviction_shares(make("priority_greedy"), batch, budgets)  # [N, B, T]
    np.testing.assert_array_equal(expires.sum(-1) > 0, engine.expire_actions > 0)
    walkers_per_step = expires.sum((0, 1))
    assert walkers_per_step.max() >= 2  # one slot per gather: such a step takes the loop of several gathers
    # three passes of four episodes, one slot per gather
    ours = jax.device_get(compacted.program(n_steps, len(budgets), 1, None, 4)(budgets, batch))
    for field in compacted.COMPARED:
        np.testing.assert_array_equal(getattr(ours, field), getattr(engine, field), err_msg=field)
