"""The robust-gate loop of experiments/robust_gate.py at tiny sizes: the traced gate is the learned gate,
the pool grows by the found regimes' episodes, the retrained gate differs, and the comparison confirms
each gate's own worst regime."""

import importlib.util
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from wpbjax.adversarial import evaluate as ev, knobs as knobs_lib
from wpbjax.adversarial.search import Search
from wpbjax.episodes.generators import jax_gen
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.gate import init_gate
from wpbjax.learn.gate_policy import gate_policy

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _experiment():
    spec = importlib.util.spec_from_file_location("robust_gate", ROOT / "experiments" / "robust_gate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


rg = _experiment()
LOOP = rg.Loop(
    train=TrainConfig(steps=4, pool_per_mode=8, batch=8, calibration_per_mode=4, episode_steps=40, log_every=2),
    search=Search(population=3, generations=2, episodes_per_regime=4, method="random"),
    modes=("burst_redundancy",),
    named_modes=("default", "rollback"),
    rounds=1,
    episodes_per_found=4,
    budget=1024,
)


@pytest.fixture(scope="module")
def document():
    return rg.run(LOOP, log=lambda line: None)


def test_the_traced_gate_runs_exactly_as_the_learned_gate_policy():
    """Same weights and threshold: the traced gate (weights as params) and wpbjax.learn's gate policy (weights
    baked in) keep the same steps on the same regimes; other weights as params change them."""
    weights = jax.device_get(init_gate(jax.random.key(3), 8))
    space = knobs_lib.space("burst_redundancy", steps=40)
    knobs = space.to_knobs(jnp.asarray([[0.2] * space.dim, [0.7] * space.dim]))
    setup = ev.Setup(jax_gen.Shape("burst_redundancy", 40, 8, 6), "unprivileged", (ev.Group(2, 1, "none"),))
    seeds, budgets = jax_gen.episode_seeds(2, 0, 6), np.array([700, 1500], np.int32)
    traced = rg.traced_gate(weights, "unprivileged", 0.5)
    baked = ev.evaluate(gate_policy(weights, "unprivileged", afford_threshold=0.5), setup, knobs, budgets, seeds)
    ours = ev.evaluate(traced, setup, knobs, budgets, seeds, rg.gate_params(weights, 0.5))
    for name in ("policy_units", "hits", "retained"):
        np.testing.assert_array_equal(ours[name], baked[name])
    assert baked["retained"].sum() > 0
    other = jax.device_get(init_gate(jax.random.key(4), 8))
    moved = ev.evaluate(traced, setup, knobs, budgets, seeds, rg.gate_params(other, 0.5))
    assert not np.array_equal(moved["retained"], baked["retained"])


def test_the_loop_adds_the_found_regimes_and_retrains(document):
    base = 4 * LOOP.train.pool_per_mode
    assert document["pool_sizes"] == [base, base + LOOP.episodes_per_found * len(LOOP.modes)]
    (round_one,) = document["rounds"]
    assert round_one["against"] == 0
    (found,) = round_one["found"]
    assert found["regime"]["mode"] == "burst_redundancy" and len(found["trace"]) == LOOP.search.generations
    added = rg.regime_episodes([found["regime"]], LOOP, rg.ADVERSARIAL_SEED_BASE + 1)
    assert added.n_episodes == LOOP.episodes_per_found and set(added.mode) == {"burst_redundancy"}


def test_the_comparison_confirms_each_gates_own_worst_case(document):
    gates = document["gates"]
    (found,) = document["rounds"][0]["found"]
    standard, robust = gates["standard"], gates["robust"]
    assert standard["own_worst"]["regime"] == found["regime"]  # round 1 searched the standard gate
    assert standard["own_worst"]["search"] == found["objective"]
    assert standard["own_worst"]["mean"] == standard["on_standard_worst"]["mean"]
    assert robust["own_worst"]["mean"] == robust["on_robust_worst"]["mean"]
    for gate in (standard, robust):
        low, high = gate["own_worst"]["ci95"]
        assert low <= gate["own_worst"]["mean"] <= high and 0 <= gate["own_worst"]["mean"] <= 1
        assert set(gate["named"]) == set(LOOP.named_modes)
        assert gate["worst_named"]["objective"] == min(gate["named"].values())
    assert 0 < standard["named_mean"] < 1  # at 1 KB the gate cannot keep everything
    text = rg.table(document)
    assert f"{standard['own_worst']['mean']:.3f}" in text and "| rollback |" in text


def test_the_docs_table_is_the_saved_run():
    """docs/adversarial.md's robust-gate table is what the experiment makes of its saved document."""
    saved = rg.saved_documents()
    assert saved, "no saved run in experiments/robust_gate/"
    doc = rg.DOC.read_text()
    for document in saved:
        for line in rg.table(document).splitlines():
            assert line in doc, line
