"""A tiered sweep (``wj.sweep(tiers=wj.Tiers(...))`` / ``wpbjax sweep --journal-budgets``) runs through the one
sweep pipeline (plan, chunks, writer, sidecar, output lock, resume, progress), keeping every K and every param
point, and ``wpbjax report`` reads its table: one test per gap the tiered path used to have (issue 33)."""

import json
import os

import numpy as np
import pandas as pd
import pytest

import wpbjax as wj
from wpbjax.api import read_plan
from wpbjax.cli import main
from wpbjax.common.argument_errors import ArgumentError
from wpbjax.files import resume as resume_lib
from wpbjax.files.output_lock import output_lock
from wpbjax.files.results_io import ResultsWriter, partial_path, read_sidecar, sidecar_path
from wpbjax.tiers import engine as tier_engine, rows as tier_rows
from wpbjax.tiers.policies import TIER_POLICIES

# 4 episodes of 20 steps under a 64K memory cap: several chunks, so a run can be caught between two of them
ARGV = [
    "sweep",
    "--modes",
    "default",
    "--n-episodes",
    "4",
    "--steps",
    "20",
    "--budgets",
    "1024,4096",
    "--journal-budgets",
    "0,2048",
    "--policies",
    "deferred_checkpoint",
    "--tracks",
    "unprivileged",
    "--probes",
    "generate",
    "--top-k",
    "1,5",
    "--param",
    "window=1,4",
    "--crash-rate",
    "0.2",
    "--memory-cap",
    "64K",
    "--quiet",
]
GENERATE = wj.Generate(modes=["default"], n_episodes=4, steps=20)
GRID = wj.Grid([1024, 4096], policies=["deferred_checkpoint"], tracks=["unprivileged"], params={"window": [1.0, 4.0]})
READS = wj.Reads(top_k=(1, 5), probes="generate")
TIERS = wj.Tiers(journal_budgets=[0, 2048], crash_rate=0.2)
RUN = wj.Run(memory_cap=65_536)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The CLI's tiered table and its sidecar."""
    out = tmp_path_factory.mktemp("tiers") / "tiers.csv"
    assert main([*ARGV, "--out", str(out)]) == 0
    return out


def test_every_k_and_every_param_point_is_a_row(written):
    table = pd.read_csv(written)
    # 4 episodes x 2 checkpoint x 2 journal budgets x 2 window values x 2 K
    assert len(table) == 4 * 2 * 2 * 2 * 2
    assert sorted(table.top_k.unique()) == [1, 5] and sorted(table.param_window.unique()) == [1, 4]
    assert not table.duplicated().any()
    # K changes the reads only: the runs' columns are the same at K = 1 and K = 5
    at = {k: table[table.top_k == k].reset_index(drop=True) for k in (1, 5)}
    pd.testing.assert_series_equal(at[1].history_coverage, at[5].history_coverage)
    assert (at[1].read_accuracy.fillna(-1) <= at[5].read_accuracy.fillna(-1)).all()  # more records, more right


def test_the_rows_are_the_tier_engines_numbers(written):
    """Chunked (one episode per chunk) and run through the writer, each row is what the tier engine gives for
    the whole set at once (wpbjax.tiers.rows.tier_rows; the crash draws keyed by the episode's number)."""
    table = pd.read_csv(written)
    encoded = read_plan(READS).apply(wj.episodes.generate(modes=["default"], n_episodes=4, steps=20))
    checkpoint, journal = np.repeat([1024, 4096], 2), np.tile([0, 2048], 2)
    for window in (1, 4):
        result = tier_engine.simulate_tiers(
            TIER_POLICIES["deferred_checkpoint"],
            encoded.host_batch("unprivileged"),
            checkpoint,
            journal,
            params={"window": window},
            crash_rate=0.2,
            crash_pos=encoded.crash_pos,
        )
        retriever = read_plan(READS).retriever  # K = 1, 5: tier_rows reads at the first
        rows = tier_rows.tier_rows(result, encoded, "unprivileged", checkpoint, journal, retriever=retriever)
        ours = table[(table.param_window == window) & (table.top_k == 1)]
        ours = ours.sort_values(["episode_id", "budget_bytes", "journal_budget_bytes"])
        for column in ("history_coverage", "crashes", "lost_at_crash", "total_cost", "read_accuracy"):
            np.testing.assert_allclose(ours[column].to_numpy(), np.ravel(rows[column]), err_msg=column)


def test_a_sidecar_records_the_tiered_run(written):
    meta = read_sidecar(sidecar_path(written))
    assert meta["rows"] == 64 and meta["budgets"] == [1024, 4096] and meta["journal_budgets"] == [0, 2048]
    assert meta["tracks"] == {"unprivileged": ["deferred_checkpoint"]}
    assert meta["arguments"]["tiers"]["crash_rate"] == 0.2 and meta["arguments"]["tiers"]["calls_per_step"] is None
    assert meta["policy_params"]["deferred_checkpoint"]["window"] == 20  # its default; the swept values below
    assert meta["swept_params"] == {"window": [1.0, 4.0]}


def test_report_reads_a_tiered_table(written, tmp_path):
    paths = wj.report(written, tmp_path / "report")
    summary = pd.read_csv(tmp_path / "report" / "tier_summary.csv")
    assert sorted(os.path.basename(path) for path in paths) == ["tier_summary.csv", "tier_summary.md"]
    assert len(summary) == 2 * 2 * 2 * 2 and (summary.runs == 4).all()  # a row per setting, each over 4 episodes
    table = pd.read_csv(written)
    at = table[(table.param_window == 4) & (table.budget_bytes == 4096) & (table.journal_budget_bytes == 2048)]
    row = summary[(summary.param_window == 4) & (summary.budget_bytes == 4096) & (summary.journal_budget_bytes == 2048)]
    assert row[row.top_k == 5].history_coverage.item() == pytest.approx(at[at.top_k == 5].history_coverage.mean())


def test_an_out_that_names_an_input_or_a_missing_folder_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    episodes = tmp_path / "in.csv"  # JSONL under a results name: only the input check stops it
    wj.episodes.write_generated(episodes, "default", 1, steps=20)
    before = episodes.read_bytes()
    monkeypatch.setattr(tier_engine, "simulate_tiers", lambda *a, **k: pytest.fail("ran before refusing"))
    base = [*ARGV[:1], "--episodes", str(episodes), *ARGV[7:]]
    for out, says in (
        (episodes, "an input of this sweep"),
        (tmp_path / "missing" / "t.csv", "does not exist"),
        (tmp_path / "t.txt", ".csv or .parquet"),
    ):
        assert main([*base, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
    assert episodes.read_bytes() == before


def test_a_second_tiered_sweep_on_the_same_out_is_refused(tmp_path, capsys):
    out = tmp_path / "t.csv"
    with output_lock(out):  # a first sweep, live
        assert main([*ARGV, "--out", str(out)]) == 2
    assert f"pid {os.getpid()}" in capsys.readouterr().err and not out.exists()


def test_repeated_journal_budgets_are_refused_by_the_library_and_dropped_by_the_cli(tmp_path, capsys):
    with pytest.raises(ArgumentError, match="journal_budgets lists 2048 more than once"):
        wj.sweep(GENERATE, grid=GRID, reads=READS, tiers=wj.Tiers(journal_budgets=[2048, 0, 2048]), run=RUN)
    argv = [*ARGV[:15], "--top-k", "1", "--memory-cap", "1G", "--quiet"]  # one K, one call
    argv[argv.index("0,2048")] = "2048,2048"
    assert main([*argv, "--out", str(tmp_path / "t.csv")]) == 0
    assert "--journal-budgets lists 2048 more than once; each runs once" in capsys.readouterr().err
    assert len(pd.read_csv(tmp_path / "t.csv")) == 4 * 2  # 4 episodes x 2 checkpoint budgets x 1 journal budget


def test_a_killed_tiered_sweep_resumes_to_the_same_bytes(written, tmp_path, monkeypatch):
    out = tmp_path / "t.csv"
    chunks, write = [], ResultsWriter._write_text

    def dies_after_one_chunk(self, texts):
        if len(chunks) == 1:
            raise KeyboardInterrupt  # as a kill would, between chunks
        chunks.append(len(texts))
        write(self, texts)

    monkeypatch.setattr(ResultsWriter, "_write_text", dies_after_one_chunk)
    monkeypatch.setattr(ResultsWriter, "abort", lambda self: None)  # killed outright: nothing cleans up
    monkeypatch.setattr(resume_lib, "finish", lambda target: None)
    with pytest.raises(KeyboardInterrupt):
        wj.sweep(GENERATE, grid=GRID, reads=READS, tiers=TIERS, run=RUN, out=out)
    assert not out.exists() and os.path.exists(partial_path(out))
    manifest = json.loads(open(resume_lib.manifest_path(out)).read())
    assert manifest["chunks"] == 1  # of 2 (a slice of the window grid each): written chunk by chunk
    monkeypatch.undo()
    notes = []
    done = wj.sweep(GENERATE, grid=GRID, reads=READS, tiers=TIERS, run=wj.Run(memory_cap=65_536, log=notes.append),
                    out=out, resume=True)  # fmt: skip
    assert any("resuming" in note and "after 1 chunks" in note for note in notes), notes
    assert done.rows == 64 and out.read_bytes() == written.read_bytes()


def test_a_tiered_sweep_shows_progress(capsys):
    wj.sweep(GENERATE, grid=GRID, reads=READS, tiers=TIERS, run=wj.Run(memory_cap=65_536, quiet=False))
    err = capsys.readouterr().err
    assert "64/64" in err and "unprivileged deferred_checkpoint" in err
