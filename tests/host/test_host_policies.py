"""Python policies on the host, replayed by the engine (wpbjax.host, wj.run_python_policy).

The published baselines written as spec-style Python functions (wpbjax.host.baselines) give, on the
paper grid's first three episodes of each mode (every budget, track and policy), the rows of the JAX
baselines (every column: F1, regret, integrity, reads) and, with the published oracle, the published rows
themselves (../shared/reference/results_paper_grid.csv). The JAX baselines give all 5,280 published rows
(tests/test_parity.py); driving Python policies over all of them took most of this file's time.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

import wpbjax as wj
from wpbjax.host import MemoryAction, PolicyError, baselines
from wpbjax.host.run import HostPolicy, HostRun, prepare_all, prepare_episodes, registered

REF_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "reference"
MODES = ("default", "burst_drift", "redundancy", "burst_redundancy")
PAPER_FILES = [
    str(REF_DIR / "episodes" / f"episodes__schema=priority_v1__mode={mode}__seed=0__steps=200__n=10.jsonl")
    for mode in MODES
]
GRID_CSV = REF_DIR / "results_paper_grid.csv"
BUDGETS = (1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400, 262144, 1048576)
PRIVILEGED_ONLY = ("priority_threshold", "priority_greedy")
INT_COLUMNS = {"budget_bytes", "bytes_used", "episode_id", "expire_actions", "write_actions"}
KEY = ("mode", "budget_bytes", "episode_id", "track", "policy")

needs_reference = pytest.mark.skipif(not GRID_CSV.is_file(), reason=f"reference data not found at {REF_DIR}")


EPISODES_PER_MODE = 3


@pytest.fixture(scope="module")
def paper_rows(tmp_path_factory) -> dict[str, pd.DataFrame]:
    """The seven spec-style baselines driven on the host, swept with the seven JAX baselines in one sweep
    (one oracle, one compiled replay for the seven), on the first EPISODES_PER_MODE episodes of each published
    file (ids 0..2, as published): {"host": rows, "jax": rows}, policy named as the JAX one."""
    folder = tmp_path_factory.mktemp("paper_head")
    heads = []
    for path in PAPER_FILES:
        with open(path) as handle:
            lines = [next(handle) for _ in range(EPISODES_PER_MODE)]
        heads.append(folder / Path(path).name)
        heads[-1].write_text("".join(lines))
    source, encoded, swept = prepare_episodes([str(head) for head in heads])
    host = [
        HostPolicy(policy, ("privileged",) if name in PRIVILEGED_ONLY else None, name=f"paper_grid.{name}")
        for name, policy in baselines.BASELINES.items()
    ]
    tracks = ["unprivileged", "privileged"]
    names = prepare_all(host, source, encoded, BUDGETS, tracks, HostRun(workers=2))
    rows = wj.sweep(swept, grid=wj.Grid(BUDGETS, policies=[*names, *baselines.BASELINES], oracle="published_rule"))
    is_host = rows.policy.str.startswith("py:paper_grid.")
    return {
        "host": rows[is_host].assign(policy=rows.policy[is_host].str.removeprefix("py:paper_grid.")),
        "jax": rows[~is_host],
    }


@pytest.fixture(scope="module")
def host_rows(paper_rows) -> pd.DataFrame:
    return paper_rows["host"]


def _keyed(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["track", "policy", "mode", "episode_id", "budget_bytes", "top_k"]).reset_index(drop=True)


@needs_reference
def test_spec_style_baselines_give_the_jax_baselines_rows(paper_rows):
    host_rows, jax_rows = paper_rows["host"], paper_rows["jax"]
    # 4 modes x 3 episodes x 11 budgets x (5 unprivileged + 7 privileged policies)
    assert len(host_rows) == len(jax_rows) == 4 * EPISODES_PER_MODE * len(BUDGETS) * 12
    pd.testing.assert_frame_equal(_keyed(host_rows), _keyed(jax_rows[host_rows.columns]))


def test_python_policies_of_one_call_share_one_replay_compile():
    from wpbjax.core import rollout
    from wpbjax.testing import max_traces

    # three policies whose logs need different shapes (no_mem: one call, no EXPIRE; last_kb and
    # merge_aggressive: several EXPIREs per call at 1 KB): padded to one shape, one trace on the track
    source, encoded, swept = prepare_episodes(None, modes=["burst_redundancy"], n_episodes=2, steps=60)
    chosen = ("no_mem", "last_kb", "merge_aggressive")
    host = [HostPolicy(baselines.BASELINES[name], name=f"compile_check.{name}") for name in chosen]
    names = prepare_all(host, source, encoded, [1024, 4096], ["unprivileged"], HostRun(workers=1))
    shapes = {next(iter(registered(name.removeprefix("py:")).plan.runs.values()))["log_expire"].shape for name in names}
    assert len(shapes) == 1
    with max_traces(rollout, "_grid_counts", n=1):
        rows = wj.sweep(swept, grid=wj.Grid([1024, 4096], policies=names, tracks=["unprivileged"]))
    assert sorted(set(rows.policy)) == sorted(names) and len(rows) == 3 * 2 * 2


@needs_reference
def test_spec_style_baselines_give_the_published_rows(host_rows):
    with GRID_CSV.open(newline="") as handle:
        expected = {
            tuple(int(row[k]) if k in INT_COLUMNS else row[k] for k in KEY): row for row in csv.DictReader(handle)
        }
    expected = {key: row for key, row in expected.items() if key[KEY.index("episode_id")] < EPISODES_PER_MODE}
    got = {tuple(row[k] for k in KEY): row for row in host_rows.to_dict("records")}
    assert got.keys() == expected.keys() and len(got) == 4 * EPISODES_PER_MODE * len(BUDGETS) * 12
    for key, row in expected.items():
        for column, value in row.items():
            if column in INT_COLUMNS:
                assert int(got[key][column]) == int(value), (key, column)
            elif column not in KEY:
                assert math.isclose(float(got[key][column]), float(value), rel_tol=1e-6, abs_tol=1e-12), (key, column)


class WritesEveryThird:
    """A class policy with state: a fresh instance per run, so its counter starts at 0 in every run."""

    def __init__(self):
        self.seen = 0

    def select(self, step, store):
        self.seen += 1
        if self.seen % 3 == 1:
            yield MemoryAction("WRITE", step)


def test_class_policy_gets_a_fresh_instance_per_run():
    # every third step from each run's first: steps 0, 3, ..., 198 = 67 WRITEs per run, in every run
    rows = wj.run_python_policy(
        WritesEveryThird,
        wj.Generate(["default"], n_episodes=2),
        grid=wj.Grid([1024, 1048576], tracks=("unprivileged",)),
    )
    assert rows["write_actions"].tolist() == [67] * 4
    # at 1 MiB all fit: 67 items
    assert (rows.loc[rows.budget_bytes == 1048576, "write_density"] == 67 / 200).all()


def test_python_policy_errors_are_one_line():
    def emits_text(step, store):
        return ["WRITE"] if step.t == 4 else []

    with pytest.raises(PolicyError, match=r"^episode 0, t=4: not a memory action: 'WRITE'") as error:
        wj.run_python_policy(
            emits_text,
            wj.Generate(["default"], n_episodes=2),
            grid=wj.Grid([1024], tracks=("unprivileged",)),
            workers=1,
        )
    assert "\n" not in str(error.value)


def test_cli_sweeps_a_python_policy_beside_jax_ones(tmp_path, capsys):
    from wpbjax.cli import main

    out = tmp_path / "rows.csv"
    common = ["--n-episodes", "2", "--modes", "default", "--budgets", "1024,10240", "--quiet", "--out", str(out)]
    assert main(["sweep", "--policies", "py:wpbjax.host.baselines:last_kb,last_kb", *common]) == 0
    rows = pd.read_csv(out)
    host = rows[rows.policy == "py:wpbjax.host.baselines:last_kb"].drop(columns="policy").reset_index(drop=True)
    engine = rows[rows.policy == "last_kb"].drop(columns="policy").reset_index(drop=True)
    assert len(host) == 8  # 2 episodes x 2 budgets x 2 tracks
    pd.testing.assert_frame_equal(host, engine)


def test_cli_python_policy_errors_exit_2_with_one_line(tmp_path, capsys):
    from wpbjax.cli import main

    out = tmp_path / "rows.csv"
    code = main(["sweep", "--policies", "py:no_such_module:select", "--n-episodes", "1", "--quiet", "--out", str(out)])
    assert code == 2 and not out.exists()
    error = capsys.readouterr().err.strip()
    assert (
        error
        == "wpbjax sweep: error: policy py:no_such_module:select: cannot import 'no_such_module' (No module named 'no_such_module')"
    )


def test_the_docs_example_runs_as_written():
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "policies.md").read_text()
    section = doc.split("## Python and model-based policies", 1)[1]
    example = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    namespace = {}
    exec(compile(example, "docs/policies.md", "exec"), namespace)
    rows = namespace["rows"].sort_values(["budget_bytes", "mode", "episode_id"])
    assert len(rows) == 40 * 2 and rows.policy.str.endswith(":keep_drift").all()
    # it writes a step iff it is deprecated and fits: never more WRITEs than the episode's deprecated steps,
    # and at 10 KB at least as many as at 1 KB
    from wpbjax.host.run import dict_episodes

    episodes = dict_episodes(wj.EpisodeSource.generated())
    deprecated = {
        (episode["labels"]["mode"], episode["labels"]["episode_id"]): sum(
            step["observation"]["deprecated"] for step in episode["steps"]
        )
        for episode in episodes
    }
    small, large = (rows[rows.budget_bytes == budget] for budget in (1024, 10240))
    assert all(row.write_actions <= deprecated[row.mode, row.episode_id] for row in large.itertuples())
    assert (large.write_actions.values >= small.write_actions.values).all() and large.write_actions.sum() > 0
