"""The integrity scorecard of `wpbjax report` (wpbjax/reports/integrity.py)."""

from __future__ import annotations

import numpy as np
from helpers import make_episode

from tests.scoring.test_integrity import HAND
from wpbjax.episodes.encode import encode_episodes
from wpbjax.reports import integrity as integrity_report, write_report
from wpbjax.reports.plots import policy_styles
from wpbjax.scoring.integrity import COLUMNS
from wpbjax.sweeps import run_sweep


def _results():
    encoded = encode_episodes([make_episode(HAND, episode_id=0), make_episode(HAND[::-1], episode_id=1)])
    return run_sweep(
        encoded,
        [300, 10_000],
        policies="never_write,fifo_store_all,last_kb,oracle_optimal",
        tracks=("unprivileged", "oracle"),
    )


def test_scorecard_rows_and_writ_modes(tmp_path):
    results = _results()
    card = integrity_report.scorecard(results)
    assert list(card.columns[:3]) == ["budget_bytes", "track", "policy"] and set(COLUMNS) <= set(card.columns)
    # By hand (test_integrity's worked example and its reverse; 106 bytes a step, so 300 B holds two):
    # last_kb keeps the last two steps, which hold the latest version of both facts in either order.
    row = card[(card.budget_bytes == 300) & (card.policy == "last_kb")].iloc[0]
    assert row.update_fidelity == 1.0 and row.episodes == 2
    # fifo_store_all keeps the first two: e0 v1, e1 v1 forward (7 of the 13 probed (time, fact) pairs
    # current and held), e1 v2, e0 v3 reversed (6 of 13: e1 at probes 0..3, e0 at probe 1): the mean, 1/2
    row = card[(card.budget_bytes == 300) & (card.policy == "fifo_store_all")].iloc[0]
    assert np.isclose(row.temporal_accuracy, (7 / 13 + 6 / 13) / 2) and np.isclose(row.history_coverage, 2 / 5)
    modes = integrity_report.writ_modes(card)
    # one row per native policy and budget; no memory scores 0, the oracle row is oracle_optimal's
    assert sorted(set(modes.policy)) == ["fifo_store_all", "last_kb"] and len(modes) == 4
    assert (modes.update_fidelity_no_memory == 0).all()
    oracle = card[(card.policy == "oracle_optimal") & (card.budget_bytes == 10_000)].history_coverage.iloc[0]
    assert np.allclose(modes[modes.budget_bytes == 10_000].history_coverage_oracle, oracle)
    written = integrity_report.write(results, tmp_path, policy_styles(results.policy))
    names = sorted(path.rsplit("/", 1)[1] for path in written)
    assert names == [
        "history_coverage_vs_budget.png",
        "integrity_scorecard.csv",
        "integrity_scorecard.md",
        "integrity_writ_modes.md",
        "update_fidelity_vs_budget.png",
    ]
    markdown = (tmp_path / "integrity_scorecard.md").read_text()
    assert "## Budget" in markdown and "| unprivileged | last_kb |" in markdown and "| nan" not in markdown.lower()


def test_report_skips_the_scorecard_without_integrity_columns(tmp_path):
    results = _results().drop(columns=list(COLUMNS))
    written = write_report(results, tmp_path)
    assert not any("integrity" in path for path in written)
