"""The integrity scorecard of `wpbjax report` (wpbjax/report/integrity.py)."""
from __future__ import annotations

import numpy as np

from helpers import make_episode
from test_integrity import HAND
from wpbjax.episodes.encode import encode_episodes
from wpbjax.integrity import COLUMNS
from wpbjax.report import integrity as integrity_report, write_report
from wpbjax.report.plots import policy_styles
from wpbjax.sweep import run_sweep


def _results():
    encoded = encode_episodes([make_episode(HAND, episode_id=0), make_episode(HAND[::-1], episode_id=1)])
    return run_sweep(encoded, [300, 10_000], policies="never_write,fifo_store_all,last_kb,oracle_optimal",
                     tracks=("unprivileged", "oracle"))


def test_scorecard_rows_and_writ_modes(tmp_path):
    results = _results()
    card = integrity_report.scorecard(results)
    assert list(card.columns[:3]) == ["budget_bytes", "track", "policy"] and set(COLUMNS) <= set(card.columns)
    row = card[(card.budget_bytes == 300) & (card.policy == "last_kb")].iloc[0]
    expected = results[(results.budget_bytes == 300) & (results.policy == "last_kb")].update_fidelity.mean()
    assert row.update_fidelity == expected and row.episodes == 2
    modes = integrity_report.writ_modes(card)
    # one row per native policy and budget; no memory scores 0, the oracle row is oracle_optimal's
    assert sorted(set(modes.policy)) == ["fifo_store_all", "last_kb"] and len(modes) == 4
    assert (modes.update_fidelity_no_memory == 0).all()
    oracle = card[(card.policy == "oracle_optimal") & (card.budget_bytes == 10_000)].history_coverage.iloc[0]
    assert np.allclose(modes[modes.budget_bytes == 10_000].history_coverage_oracle, oracle)
    written = integrity_report.write(results, tmp_path, policy_styles(results.policy))
    names = sorted(path.rsplit("/", 1)[1] for path in written)
    assert names == ["history_coverage_vs_budget.png", "integrity_scorecard.csv", "integrity_scorecard.md",
                     "integrity_writ_modes.md", "update_fidelity_vs_budget.png"]
    markdown = (tmp_path / "integrity_scorecard.md").read_text()
    assert "## Budget" in markdown and "| unprivileged | last_kb |" in markdown and "| nan" not in markdown.lower()


def test_report_skips_the_scorecard_without_integrity_columns(tmp_path):
    results = _results().drop(columns=list(COLUMNS))
    written = write_report(results, tmp_path)
    assert not any("integrity" in path for path in written)
