"""The learned package writer: streaming (a choice never depends on later groups), feasible, its
relaxation meets the hard writer as the temperature goes to 0, checkpoints round-trip, and a
seconds-long training improves on its initial weights."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from wpbjax.cli import main
from wpbjax.packages import learned, learned_train
from wpbjax.packages.distributions import generate
from wpbjax.packages.model import KINDS, check_feasible

BUDGETS = [1, 2, 4, 8, 16]


@pytest.fixture(scope="module")
def small_set():
    return generate("memaudit_small", range(40))


@pytest.fixture(scope="module")
def tiny_writer(tmp_path_factory):
    """A writer after a few seconds of training (2 shapes, 32 packages each), through the CLI."""
    path = tmp_path_factory.mktemp("writer") / "writer.npz"
    assert (
        main(
            [
                "packages",
                "train",
                "--out",
                str(path),
                "--shapes",
                "3x2,2x1",
                "--packages",
                "32",
                "--check-packages",
                "12",
                "--steps",
                "40",
                "--batch",
                "64",
                "--hidden",
                "8",
                "--eval-every",
                "20",
                "--budgets",
                "1,4,8",
                "--quiet",
            ]
        )
        == 0
    )
    params, info = learned.load_writer(str(path))
    return path, {"params": params, "history": info["history"], "config": info["config"]}


def test_group_features_by_hand():
    """One group of two candidates against a store that half-covers unit 0 (weights 2 and 1)."""
    weight = jnp.asarray([2.0, 1.0])
    totals = jnp.asarray([0.5, 0.0])
    coverage = jnp.asarray([[1.0, 0.0], [0.4, 1.0]])
    inputs, state, affordable = learned.group_features(
        weight,
        totals,
        jnp.ones(2),
        jnp.float32(3.0),
        jnp.float32(4.0),
        jnp.float32(2.0),
        jnp.asarray([2, 4]),
        jnp.ones(2),
        jnp.zeros((2, 1)),
        coverage,
        learned.h_function("min"),
    )
    named = dict(zip(learned.CANDIDATE_FEATURES, np.asarray(inputs[:, 1 : 1 + len(learned.CANDIDATE_FEATURES)]).T))
    # gain: 2*(min(1, 1.5) - 0.5) = 1.0; 2*(0.9 - 0.5) + 1*1 = 1.8. F({u}): 2.0; 2*0.4 + 1 = 1.8
    np.testing.assert_allclose(named["gain"], [1.0, 1.8], rtol=1e-6)
    np.testing.assert_allclose(named["singleton"], [2.0, 1.8], rtol=1e-6)
    np.testing.assert_allclose(named["density"], [0.5, 0.45], rtol=1e-6)
    np.testing.assert_allclose(named["already_covered"], [0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(affordable, [1.0, 0.0])  # cost 4 > 3 left: the second cannot be afforded
    # best gain / density among the affordable only (the first candidate)
    np.testing.assert_allclose(named["gain_share"], [1.0, 1.8], rtol=1e-6)
    state = dict(zip(learned.STATE_FEATURES, np.asarray(state)))
    assert state["left_share"] == pytest.approx(0.75) and state["log2_groups_left"] == pytest.approx(np.log2(3))
    assert state["seen_value_share"] == pytest.approx(1.0 / 3.0)  # 2 * 0.5 of 3 seen weight


def test_hard_writer_is_feasible_and_streaming(small_set, tiny_writer):
    path, _ = tiny_writer
    batch = small_set.batch
    _, chosen = learned.write(str(path), batch, BUDGETS)
    assert chosen.shape == (40, len(BUDGETS), batch.cost.shape[1]) and chosen.dtype == np.int32
    for b, budget in enumerate(BUDGETS):
        check_feasible(batch, chosen[:, b], budget)
    # Rewrite everything after group 3 (costs, coverage, and the weights of units only those groups
    # cover): the choices at groups 0..3 must not move.
    cut = 4
    later_units = (np.asarray(batch.coverage)[:, cut:] > 0).any((1, 2)) & ~(
        np.asarray(batch.coverage)[:, :cut] > 0
    ).any((1, 2))
    rng = np.random.default_rng(0)
    changed = dataclasses.replace(
        batch,
        cost=np.concatenate(
            [batch.cost[:, :cut], np.where(batch.valid[:, cut:], rng.integers(1, 7, batch.cost[:, cut:].shape), 0)], 1
        ).astype(np.int32),
        coverage=np.concatenate(
            [batch.coverage[:, :cut], batch.coverage[:, cut:] * rng.uniform(0, 2, batch.coverage[:, cut:].shape)], 1
        ),
        weight=np.where(later_units, batch.weight * 3.0, batch.weight),
    )
    _, again = learned.write(str(path), changed, BUDGETS)
    np.testing.assert_array_equal(again[:, :, :cut], chosen[:, :, :cut])


def test_relaxation_meets_hard_rollout_at_low_temperature(small_set, tiny_writer):
    _, result = tiny_writer
    arrays = learned.package_arrays(small_set.batch, len(KINDS))
    pool = learned_train.pairs(arrays, BUDGETS, np.ones((40, len(BUDGETS))))
    hard = learned_train.hard_values(result["params"], pool[0], pool[1])
    soft, overspend = jax.vmap(learned_train.soft_rollout, in_axes=(None, 0, 0, None))(
        result["params"], pool[0], pool[1], jnp.float32(1e-4)
    )
    np.testing.assert_allclose(soft, hard, atol=1e-3)
    np.testing.assert_allclose(overspend, 0.0, atol=1e-3)


def test_training_beats_its_initial_weights(tiny_writer):
    """The untrained writer (the same seed's initial weights) scored on the same held-back packages,
    by hard rollouts against their OPT, as training scores its checkpoints."""
    _, result = tiny_writer
    config = learned_train.WriterTrainConfig(
        shapes=((3, 2), (2, 1)), packages=32, check_packages=12, budgets=(1, 4, 8), hidden=8
    )  # the fixture's training
    check = learned_train.join_pools(
        [
            learned_train.labelled_pairs(
                learned_train.training_sets(config, distribution, shape)[1], config, len(KINDS)
            )
            for distribution in config.distributions
            for shape in config.shapes
        ]
    )
    scored = np.asarray(check[2]) > 0

    def ratio(params) -> float:
        values = np.asarray(learned_train.hard_values(params, check[0], check[1]))
        return float(np.mean(values[scored] / np.asarray(check[2])[scored]))

    untrained = ratio(learned.init_writer(jax.random.split(jax.random.key(0))[1], len(KINDS), 8))
    kept = result["history"][-1]
    assert ratio(result["params"]) == pytest.approx(kept["kept_hard_ratio"], abs=1e-5)  # the same scoring
    assert kept["kept_step"] > 0 and kept["kept_hard_ratio"] > untrained + 0.05, (untrained, kept)


def test_checkpoint_round_trip_and_errors(tmp_path, tiny_writer):
    path, result = tiny_writer
    params, info = learned.load_writer(str(path))
    assert info["kinds"] == list(KINDS) and info["config"]["shapes"] == [[3, 2], [2, 1]]
    for head in learned.HEADS:
        for name in learned.LAYERS:
            np.testing.assert_array_equal(params[head][name], result["params"][head][name])
    start = learned_train._initial(learned_train.WriterTrainConfig(init=str(path), hidden=8), len(KINDS))
    np.testing.assert_array_equal(start["discard"]["w_out"], result["params"]["discard"]["w_out"])
    with pytest.raises(ValueError, match="^init .*: built with other kinds or hidden 8$"):
        learned_train._initial(learned_train.WriterTrainConfig(init=str(path), hidden=4), len(KINDS))
    with pytest.raises(ValueError, match="no such file"):
        learned.load_writer(str(tmp_path / "missing.npz"))
    (tmp_path / "junk.npz").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="malformed"):
        learned.load_writer(str(tmp_path / "junk.npz"))


def test_unknown_kinds_read_as_unknown(small_set, tiny_writer):
    """A writer saved with fewer kinds sees the others as all-zero one-hots, whatever their id."""
    lookup = learned.kind_lookup(["atomic_fact", "raw_span"])
    assert lookup[KINDS.index("raw_span")] == 1 and lookup[KINDS.index("atomic_fact")] == 0
    assert (np.delete(lookup, [KINDS.index("raw_span"), KINDS.index("atomic_fact")]) == -1).all()
    onehot = learned.kind_onehot(jnp.asarray([0, 1, -1, 5]), 2)
    np.testing.assert_array_equal(onehot, [[1, 0], [0, 1], [0, 0], [0, 0]])


def test_sweep_method_learned_path(tiny_writer, tmp_path, capsys):
    path, _ = tiny_writer
    out = tmp_path / "pk.csv"
    assert (
        main(
            [
                "packages",
                "sweep",
                "--seeds",
                "20",
                "--budgets",
                "2,8",
                "--methods",
                f"opt,oracle_gvt,learned:{path}",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    import pandas as pd

    rows = pd.read_csv(out)
    learned_rows = rows[rows.method == f"learned:{path}"]
    assert len(learned_rows) == 40 and (learned_rows.ratio <= 1 + 1e-12).all()
    assert (learned_rows.cost <= learned_rows.budget).all()
    assert main(["packages", "sweep", "--seeds", "2", "--methods", f"learned:{tmp_path / 'none.npz'}", "--quiet"]) == 2
    assert "no such learned writer file" in capsys.readouterr().err
