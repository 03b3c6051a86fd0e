"""docs/tiers.md's comparison table is what experiments/tiers_table.py measures (its rows, as printed)."""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def doc_rows() -> list[list[str]]:
    text = (REPO / "docs" / "tiers.md").read_text()
    section = text.split("## Journal only vs checkpoint only vs both", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header, rows = lines[0], lines[1:]
    assert header.startswith("| policy | total_budget")
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in rows if not re.match(r"\|\s*-", line)]


def test_doc_table_matches_the_experiment():
    sys.path.insert(0, str(REPO / "experiments"))
    from tiers_table import tiers_table

    # the two policies the issue compares (journal and checkpoint vs checkpoint only) are regenerated; the other
    # three run the same engine and rows code (one compile each, which the suite can spare)
    shown = ("journal_and_checkpoint", "checkpoint_only")
    table = tiers_table(crash_rate=0.01, policies=shown)
    rows = doc_rows()
    assert len(rows) == 21
    for row in [row for row in rows if row[0] in shown]:
        policy, total, checkpoint, journal = row[0], int(row[1]), int(row[2]), int(row[3])
        match = table[
            (table.policy == policy)
            & (table.total_budget == total)
            & (table.checkpoint_budget == checkpoint)
            & (table.journal_budget == journal)
        ]
        assert len(match) == 1, row
        got = match.iloc[0]
        assert f"{got.read_accuracy:.3f}" == row[4] and f"{got.history_coverage:.3f}" == row[5], row
        assert f"{got.total_bytes:.0f}" == row[6] and f"{got.calls:.0f}" == row[7], row
        assert f"{got.amplification:.3f}" == row[8] and f"{got.journal_scan_bytes:.0f}" == row[9], row
        assert f"{got.lost_at_crash:.2f}" == row[10], row


def test_compute_budget_rows_match_the_experiment():
    """docs/tiers.md "A compute budget": the rows of one hot-path and one deferred policy, regenerated."""
    sys.path.insert(0, str(REPO / "experiments"))
    from tiers_table import COMPUTE_RUNS, compute_budget_table, markdown

    text = (REPO / "docs" / "tiers.md").read_text().split("## A compute budget", 1)[1].split("\n## ", 1)[0]
    doc = [line for line in text.splitlines() if line.startswith("| ")]
    runs = [run for run in COMPUTE_RUNS if run[0] in ("journal_and_checkpoint", "deferred_checkpoint")]
    rows = markdown(compute_budget_table(0.01, runs).round(3)).splitlines()[2:]
    assert len(rows) == 10
    missing = [row for row in rows if row not in doc]
    assert not missing, missing
