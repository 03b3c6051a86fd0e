"""Python policies in tiered runs (wpbjax.host.tiers; docs/policies.md, "Python policies in tiered runs").

The five tier policies of docs/tiers.md written as spec-style Python classes (wpbjax.host.tier_baselines),
driven on the host store and replayed by the tier engine, give the JAX tier policies' rows, every column,
with crashes (drawn), a compute budget, consolidation, deferred buffers and reads at two K.
"""

from __future__ import annotations

import pandas as pd
import pytest

import wpbjax as wj
from wpbjax.host import MemoryAction, PolicyError
from wpbjax.host.run import HostPolicy
from wpbjax.host.tier_baselines import TIER_BASELINES

EPISODES = wj.Generate(["default", "burst_drift"], n_episodes=2, steps=200)
GRID = wj.Grid([1024, 4096], tracks=("unprivileged",))
READS = wj.Reads(probes="generate", top_k=(1, 5))
TIERS = wj.Tiers(journal_budgets=[0, 2048, 8192], crash_rate=0.02, calls_per_step=0.5, call_burst=60)
KEY = ["policy", "mode", "episode_id", "budget_bytes", "journal_budget_bytes", "top_k"]


def _keyed(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def tier_rows() -> dict[str, pd.DataFrame]:
    host = [HostPolicy(policy, name=f"tiers.{name}") for name, policy in TIER_BASELINES.items()]
    rows = wj.run_python_policy(host, EPISODES, grid=GRID, reads=READS, tiers=TIERS, workers=2)  # forked workers
    engine = wj.sweep(
        EPISODES,
        grid=wj.Grid(GRID.budgets, policies=list(TIER_BASELINES), tracks=GRID.tracks),
        reads=READS,
        tiers=TIERS,
    )
    return {"host": rows.assign(policy=rows.policy.str.removeprefix("py:tiers.")), "jax": engine}


def test_spec_style_tier_policies_give_the_jax_tier_policies_rows(tier_rows):
    host, engine = tier_rows["host"], tier_rows["jax"]
    # 5 policies x 4 episodes x 6 budget pairs x 2 K
    assert len(host) == len(engine) == 240
    pd.testing.assert_frame_equal(_keyed(host), _keyed(engine[host.columns]))


def test_the_tier_comparison_exercises_every_rule(tier_rows):
    # the equality above is not vacuous: each rule the host store mirrors acts somewhere in these runs
    rows = tier_rows["host"].groupby("policy").sum(numeric_only=True)
    assert rows.loc["journal_and_checkpoint", ["demotes", "promotes", "journal_adds"]].gt(0).all()
    assert rows.loc["checkpoint_only", "deletes"] > 0 and rows.loc["checkpoint_only", "journal_adds"] == 0
    assert rows.loc["deferred_checkpoint", "lost_at_crash"] > 0  # its buffered() steps, lost at crashes
    assert rows["throttled_adds"].sum() > 0 and rows["crashes"].min() > 0 and rows["rejected"].sum() > 0


def test_cli_tiered_sweep_takes_python_policies(tmp_path):
    from wpbjax.cli import main

    out = tmp_path / "tiers.csv"
    args = ["sweep", "--journal-budgets", "0,4096", "--budgets", "2048", "--probes", "generate", "--top-k", "1,5",
            "--crash-rate", "0.01", "--n-episodes", "2", "--modes", "burst_drift", "--quiet", "--out", str(out),
            "--policies", "py:wpbjax.host.tier_baselines:CheckpointOnly,checkpoint_only"]  # fmt: skip
    assert main(args) == 0
    rows = pd.read_csv(out)
    host = rows[rows.policy.str.startswith("py:")].drop(columns="policy").reset_index(drop=True)
    engine = rows[rows.policy == "checkpoint_only"].drop(columns="policy").reset_index(drop=True)
    assert len(host) == 2 * 2 * 2 * 2  # 2 episodes x 2 tracks x 2 journal budgets x 2 K
    pd.testing.assert_frame_equal(host, engine)


def merges(step, store):
    return [MemoryAction("MERGE", step, target_t=0)] if step.t == 3 else []


def journals(step, store):
    return [MemoryAction("JOURNAL", step)]


def writes_ahead(step, store):
    return [MemoryAction("WRITE", target_t=step.t + 1)] if step.t == 2 else []


@pytest.mark.parametrize(
    "policy, tiers, message",
    [
        (
            merges,
            TIERS,
            "episode 0, t=3: MERGE in a tiered run: the tier store keeps no deltas (WRITE the step instead)",
        ),
        (
            journals,
            None,
            "episode 0, t=0: JOURNAL is a tiered run's action (give journal budgets); this run has one tier",
        ),
        (writes_ahead, TIERS, "episode 0, t=2: WRITE of step t=3, which has not arrived yet"),
    ],
)
def test_what_cannot_combine_is_one_line(policy, tiers, message):
    with pytest.raises(PolicyError) as error:
        wj.run_python_policy(policy, wj.Generate(["default"], n_episodes=1), grid=GRID, tiers=tiers, workers=1)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--journal-budgets", "0,4096", "--param", "consolidate_every=10"],
         "wpbjax sweep: error: --param consolidate_every: no selected policy has a param 'consolidate_every' "
         "(their params: py:wpbjax.host.tier_baselines:JournalOnly: none)"),
        (["--tracks", "oracle"],
         "wpbjax sweep: error: policy py:wpbjax.host.tier_baselines:JournalOnly: a Python policy runs on "
         "unprivileged, privileged (its steps carry no utility); got --tracks oracle"),
    ],
)  # fmt: skip
def test_cli_refusals_exit_2_with_one_line(tmp_path, capsys, extra, message):
    from wpbjax.cli import main

    out = tmp_path / "rows.csv"
    args = ["sweep", "--policies", "py:wpbjax.host.tier_baselines:JournalOnly", "--n-episodes", "1", "--quiet",
            "--out", str(out), *extra]  # fmt: skip
    assert main(args) == 2 and not out.exists()
    assert capsys.readouterr().err.strip() == message


def test_engine_constants_match_the_host_mirror():
    from wpbjax.host import tiers as host_tiers
    from wpbjax.tiers import engine, policies

    assert host_tiers.CALLS_PER_ADD == engine.CALLS_PER_ADD and host_tiers.MAX_BUFFER == policies.MAX_BUFFER
