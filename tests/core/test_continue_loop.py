"""A multi-action policy's CONTINUE loop over a named batch (the rollout's programs: every run acts while
any acts again, a masked action for the others) counts exactly what vmap's own loop counts (a select of
every carried array of a run that stopped), on policies whose runs CONTINUE at different steps."""

import functools
import importlib.util

import jax
import numpy as np
import pytest
from conftest import REPO

from wpbjax.bench import bench_batch
from wpbjax.core import scan
from wpbjax.core.rollout import with_history
from wpbjax.policies import make
from wpbjax.runtime.devices import QUICK_COMPILER_OPTIONS

BUDGETS = np.asarray([700, 1500, 4096], np.int32)


@functools.cache
def _batch():
    return bench_batch(6, 80, devices=jax.local_devices()[:1])


def _continues(policy) -> np.ndarray:
    """[N, B, T] bool: the run CONTINUEd at that step (experiments/eviction_frequency.py's recorder)."""
    spec = importlib.util.spec_from_file_location("eviction_frequency", REPO / "experiments" / "eviction_frequency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.eviction_shares(policy, _batch(), BUDGETS)[1]


# the quick build (XLA's backend optimisation off): this test compiles six programs, and both builds count alike
@functools.partial(jax.jit, static_argnums=(0, 1), compiler_options=QUICK_COMPILER_OPTIONS)
def _counts(policy, batch_axes, params, batch, budgets, keys):
    one_run = functools.partial(scan.run_counts, batch_axes=batch_axes)
    over_budgets = jax.vmap(one_run, in_axes=(None, None, None, 0, None), axis_name="budgets")
    return jax.vmap(over_budgets, in_axes=(None, None, 0, None, 0), axis_name="episodes")(
        policy, params, batch, budgets, keys
    )


@pytest.mark.parametrize("name", ["supersede", "version_journal", "deferred_batch"])
def test_the_masked_loop_counts_what_the_per_run_loop_counts(name):
    policy = with_history(make(name))  # the history arrays too: when each slot's item left
    continues = _continues(policy).reshape(-1, _batch().n_steps)  # [runs, T]
    # at some step some runs CONTINUE and others do not: the loop turns with masked runs
    assert (continues.any(axis=0) & ~continues.all(axis=0)).any()
    batch, keys = _batch(), scan.episode_keys(None, np.arange(_batch().n_episodes))
    params = policy.resolve_params({})
    masked = jax.device_get(_counts(policy, ("episodes", "budgets"), params, batch, BUDGETS, keys))
    per_run = jax.device_get(_counts(policy, (), params, batch, BUDGETS, keys))
    for field, value in vars(per_run).items():
        if value is not None:
            np.testing.assert_array_equal(getattr(masked, field), value, err_msg=field)
