"""The report of a tiered sweep (``wpbjax sweep --journal-budgets``; docs/tiers.md): one summary table.

``wpbjax report`` dispatches here when a results table has the tier columns (``journal_budget_bytes``). A
row per (track, policy, swept-param point, checkpoint budget, journal budget, K): the runs' means of what
the tiers trade -- history kept, reads answered, bytes held, the write amplification of the model calls,
and what crashes and a compute budget cost.
"""

from __future__ import annotations

import pathlib

import pandas as pd

from wpbjax.reports.tables import require_columns_and_rows

SUMMARY_METRICS = (  # averaged over the runs of each row of the summary
    "history_coverage",
    "checkpoint_history_coverage",
    "read_accuracy",
    "total_bytes",
    "amplification",
    "journal_scan_bytes",
    "lost_at_crash",
    "throttled_adds",
)
REQUIRED = ("policy", "track", "episode_id", "budget_bytes", "journal_budget_bytes", "top_k", *SUMMARY_METRICS)


def is_tier_table(results: pd.DataFrame) -> bool:
    """Whether ``results`` is a tiered sweep's table."""
    return "journal_budget_bytes" in results.columns


def check_tier_results(results: pd.DataFrame, source: str = "results") -> pd.DataFrame:
    """``results``, or a ValueError naming ``source`` when a column the summary needs is missing."""
    require_columns_and_rows(results, REQUIRED, "wpbjax tiered results", source)
    return results


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """A row per (track, policy, param point, checkpoint budget, journal budget, K), in the table's order:
    ``runs`` and each metric's mean (a mean of the runs where it is defined: NaN read accuracy without probes)."""
    params = [column for column in results.columns if column.startswith("param_")]
    keys = ["track", "policy", *params, "budget_bytes", "journal_budget_bytes", "top_k"]
    grouped = results.groupby(keys, sort=False, dropna=False)
    table = grouped[list(SUMMARY_METRICS)].mean()
    table.insert(0, "runs", grouped.size())
    return table.reset_index()


def summary_markdown(table: pd.DataFrame) -> str:
    """The summary as a Markdown table (3 decimals)."""
    header = list(table.columns)
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in table.itertuples(index=False):
        cells = [f"{value:.3f}" if isinstance(value, float) else str(value) for value in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "# Tiered runs: means per setting\n\n" + "\n".join(lines) + "\n"


def write_tier_report(results: pd.DataFrame, out_dir) -> list[str]:
    """``tier_summary.csv`` and ``tier_summary.md`` in ``out_dir``; returns their paths."""
    results = check_tier_results(results)
    out = pathlib.Path(out_dir)
    table = summary(results)
    table.to_csv(out / "tier_summary.csv", index=False)
    (out / "tier_summary.md").write_text(summary_markdown(table))
    return [str(out / "tier_summary.csv"), str(out / "tier_summary.md")]
