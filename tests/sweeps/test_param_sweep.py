"""Parameter sweeps: one compile for a whole grid, rows equal to single runs, the --param CLI."""

import os

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.policies import make
from wpbjax.sweeps import param_grids, parse_param_values, run_sweep
from wpbjax.testing import max_traces


def _episodes(n=6, steps=30):
    from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes

    return encode_episodes(generate_episodes(DriftConfig(mode="burst_drift", steps=steps), n))


def test_a_101_value_threshold_sweep_compiles_once():
    batch = _episodes().batch("privileged")
    policy = make("priority_threshold")
    with max_traces(rollout, "_grid_counts"):
        rollout.grid_counts(policy, batch, [1024, 4096], params={"threshold": np.linspace(0, 1, 101)})
        for grid in (np.linspace(0.2, 0.9, 101), np.random.default_rng(0).random(101)):
            for budgets in ([1024, 4096], [10, 10**6]):
                rollout.grid_counts(policy, batch, budgets, params={"threshold": grid})


def test_grid_points_equal_single_runs():
    batch = _episodes().batch("privileged")
    policy = make("uniform_sample")
    grid = {"every_n": np.array([2, 2, 5, 5]), "start": np.array([0, 1, 0, 3])}
    counts = rollout.grid_counts(policy, batch, [512, 4096], params=grid)
    for point in range(4):
        single = rollout.batch_counts(
            policy, batch, [512, 4096], params={name: values[point] for name, values in grid.items()}
        )
        for field, value in vars(single).items():
            if value is not None:
                assert np.array_equal(np.asarray(getattr(counts, field))[point], np.asarray(value)), field


def test_sweep_rows_carry_param_columns_and_compile_once_over_chunks():
    encoded = _episodes(n=7)
    # a small memory cap cuts 7 episodes x 2 budgets x 5 points into several chunks of one shape
    with max_traces(rollout, "_grid_counts"):
        table = run_sweep(
            encoded,
            budgets=[1024, 8192],
            policies=["priority_threshold", "fifo_store_all"],
            tracks=["privileged"],
            params={"threshold": [0.0, 0.25, 0.5, 0.75, 1.0]},
            memory_cap=300_000,
        )
    swept = table[table.policy == "priority_threshold"]
    assert len(swept) == 7 * 2 * 5 and sorted(swept.param_threshold.unique()) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert table[table.policy == "fifo_store_all"].param_threshold.isna().all()
    # the rows at threshold 0.5 are the default run's rows
    default = run_sweep(encoded, budgets=[1024, 8192], policies=["priority_threshold"], tracks=["privileged"])
    at_half = swept[swept.param_threshold == 0.5].drop(columns="param_threshold")
    key = ["episode_id", "budget_bytes"]  # chunks differ (so does row order within them)
    pd.testing.assert_frame_equal(
        at_half.sort_values(key).reset_index(drop=True), default.sort_values(key).reset_index(drop=True)
    )
    # higher thresholds never write more
    writes = swept.groupby("param_threshold").write_actions.sum()
    assert writes.is_monotonic_decreasing and writes.iloc[0] > writes.iloc[-1]


def test_param_specs_and_errors():
    assert parse_param_values("0:1:5").tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert parse_param_values("2,5,10").tolist() == [2.0, 5.0, 10.0]
    for bad in ("0:1", "a,b", "0:1:0", ""):
        with pytest.raises(ValueError):
            parse_param_values(bad)
    grids = param_grids({"every_n": [2, 5], "start": [0, 1, 2]}, ["uniform_sample", "no_mem"])
    assert grids["no_mem"] is None
    assert grids["uniform_sample"]["every_n"].tolist() == [2, 2, 2, 5, 5, 5]
    assert grids["uniform_sample"]["start"].tolist() == [0, 1, 2, 0, 1, 2]
    with pytest.raises(ValueError, match="no selected policy has a param 'threshold'"):
        param_grids({"threshold": [0.5]}, ["uniform_sample"])
    with pytest.raises(ValueError, match="integer"):
        param_grids({"every_n": [2.5]}, ["uniform_sample"])


def test_cli_param_sweep(tmp_path, capsys):
    episodes = tmp_path / "episodes.jsonl"
    assert main(["generate", "--steps", "20", "--episodes", "2", "--out", os.fspath(episodes), "--quiet"]) == 0
    out = tmp_path / "results.csv"
    assert (
        main(
            [
                "sweep",
                "--episodes",
                os.fspath(episodes),
                "--budgets",
                "1024,4096",
                "--policies",
                "uniform_sample,random",
                "--param",
                "every_n=2,5",
                "--param",
                "start=0:1:2",
                "--param",
                "p=0.1,0.9",
                "--out",
                os.fspath(out),
                "--quiet",
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    assert {"param_every_n", "param_start", "param_p"} <= set(table.columns)
    sample = table[(table.policy == "uniform_sample") & (table.track == "unprivileged")]
    assert len(sample) == 2 * 2 * 4 and sample.param_p.isna().all()
    assert sorted(set(zip(sample.param_every_n, sample.param_start))) == [(2, 0), (2, 1), (5, 0), (5, 1)]
    capsys.readouterr()
    assert (
        main(
            [
                "sweep",
                "--episodes",
                os.fspath(episodes),
                "--policies",
                "fifo_store_all",
                "--param",
                "threshold=0:1:3",
                "--out",
                os.fspath(out),
                "--quiet",
            ]
        )
        == 2
    )
    assert "no selected policy has a param 'threshold'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "--param", "threshold"])


def test_a_grid_past_the_memory_cap_runs_in_slices_with_the_same_rows():
    """A grid whose runs would pass the memory cap in one call runs in slices of points (each slice's
    rows in the published order): the same rows as one call, none twice."""
    from wpbjax.episodes.generators.parallel import generate_encoded
    from wpbjax.episodes.generators.published_gen import DriftConfig
    from wpbjax.sweeps import points_per_slice

    encoded = generate_encoded([DriftConfig(mode="default", seed=0, steps=30)], 3)
    kwargs = dict(
        budgets=[1024, 4096],
        policies="no_mem,priority_threshold",
        tracks=["privileged"],
        params={"threshold": np.linspace(0, 1, 40)},
    )
    assert points_per_slice(encoded, 2, 40, 300_000, 2) < 40
    sliced = run_sweep(encoded, memory_cap=300_000, **kwargs)
    whole = run_sweep(encoded, **kwargs)
    keys = ["episode_id", "budget_bytes", "policy", "param_threshold"]
    assert len(sliced) == 3 * 2 * 41 and not sliced.duplicated(keys).any()
    pd.testing.assert_frame_equal(
        sliced.sort_values(keys, ignore_index=True), whole.sort_values(keys, ignore_index=True)
    )
