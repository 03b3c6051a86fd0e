"""A .csv sweep's rows are made CSV text part by part while the chunk runs, then put in order line by
line (wpbjax.sweeps.run.write_chunks): the file must be byte for byte the one the whole-table write
makes, for every kind of row (param grids with blank params, read columns, several chunks)."""

import pyarrow as pa
import pytest

import wpbjax as wj
from wpbjax.cli import main
from wpbjax.files import results_io
from wpbjax.sweeps import run as sweep_run

SWEEPS = {
    "published line-up, 3 chunks": ["--n-episodes", "3", "--budgets", "1024,4096", "--memory-cap", "2M"],
    "param grid beside a policy without it": [
        "--n-episodes",
        "2",
        "--budgets",
        "2048",
        "--policies",
        "priority_threshold,no_mem",
        "--tracks",
        "privileged",
        "--param",
        "threshold=0.2:0.8:3",
    ],
    "reads at two K": ["--n-episodes", "2", "--budgets", "4096", "--probes", "generate", "--top-k", "1,5"],
}


@pytest.mark.parametrize("arguments", SWEEPS.values(), ids=SWEEPS.keys())
def test_rows_made_apart_equal_the_whole_table_write(tmp_path, monkeypatch, arguments):
    by_lines, by_table = tmp_path / "lines.csv", tmp_path / "table.csv"
    assert main(["sweep", *arguments, "--quiet", "--out", str(by_lines)]) == 0
    monkeypatch.setattr(sweep_run, "csv_rows", lambda table: None)  # every part "spans lines": the table path
    assert main(["sweep", *arguments, "--quiet", "--out", str(by_table)]) == 0
    assert by_lines.read_bytes() == by_table.read_bytes()
    assert by_lines.read_bytes().count(b"\n") > 3


def test_a_value_spanning_lines_is_not_a_line():
    """A quoted line break inside a value: rows are not lines, so no line-by-line ordering."""
    assert results_io.csv_rows(pa.table({"a": [1, 2], "s": ["x", "y\nz"]})) is None
    lines = results_io.csv_rows(pa.table({"a": [1, 2], "s": ["x", 'y "q"']}))
    assert lines.to_pylist() == [b'1,"x"\n', b'2,"y ""q"""\n']


@pytest.mark.parametrize("grid", [False, True])
def test_chunk_sums_by_part_number_equal_the_tables(grid):
    """The leaderboard's running sums of a chunk, grouped by part number and named after, are the
    sums of the chunk's table (index order and dtypes included)."""
    import pandas.testing

    from wpbjax.api import _encoded, episode_source
    from wpbjax.scoring.rows import leaderboard_sums
    from wpbjax.sweeps import make_plan

    encoded, set_index = _encoded(None, episode_source(wj.Generate(n_episodes=2)))
    if grid:
        plan = make_plan(
            encoded,
            set_index=set_index,
            budgets=[1024, 4096],
            policies=["priority_threshold", "no_mem"],
            tracks=["privileged"],
            params={"threshold": [0.2, 0.5]},
        )
    else:
        plan = make_plan(encoded, set_index=set_index, budgets=[1024, 4096])
    rows = sweep_run.chunk_rows(plan, plan.chunks()[0])
    sums = sweep_run._chunk_sums(rows)
    pandas.testing.assert_frame_equal(sums, leaderboard_sums([rows.table()]))
    assert len(sums) == (2 * 2 + 2 if grid else 2 * 12)  # (points + no_mem) x budgets; 12 (track, policy) x budgets
