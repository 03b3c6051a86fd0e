"""Write-integrity reports (docs/integrity.md): a scorecard per policy x budget and figures vs budget.

WRIT's point that "a single aggregate hides the failure modes": one row per policy, one column per
metric, no aggregate. WRIT's three evaluation modes map to ``never_write`` (no memory; ``no_mem`` gives the
same rows), the policy itself (native) and ``oracle_optimal`` (oracle): :func:`writ_modes` shows all three.
"""

from __future__ import annotations

import pathlib

import pandas as pd

from wpbjax.reports.tables import budget_label, fmt_number, markdown_table
from wpbjax.scoring.integrity import COLUMNS

NO_MEMORY = ("never_write", "no_mem")  # WRIT's "no memory" mode: the first of these the run has
ORACLE = "oracle_optimal"


def has_integrity(results: pd.DataFrame) -> bool:
    """The run carries integrity columns with at least one defined value."""
    return all(name in results for name in COLUMNS) and results[list(COLUMNS)].notna().any().any()


def scorecard(results: pd.DataFrame) -> pd.DataFrame:
    """Mean of every integrity metric (over the episodes where it is defined) and of F1, per
    (budget, track, policy) in first-seen order; ``episodes`` = rows averaged."""
    groups = results.groupby(["budget_bytes", "track", "policy"], sort=False)
    card = groups[list(COLUMNS) + ["f1"]].mean()
    card["episodes"] = groups.size()
    return card.reset_index().sort_values("budget_bytes", kind="stable").reset_index(drop=True)


def scorecard_markdown(card: pd.DataFrame) -> str:
    """One table per budget: a row per (track, policy), a column per metric ("–": undefined everywhere)."""
    header = ["track", "policy"] + list(COLUMNS) + ["f1", "episodes"]
    parts = [
        "# Write-integrity scorecard\n",
        "Mean over episodes where each metric is defined (docs/integrity.md); `–` = undefined for every "
        "episode (e.g. stale rate when nothing is held, over-retention when no step should be forgotten).\n",
    ]
    for budget, rows in card.groupby("budget_bytes", sort=False):
        body = [
            [row.track, row.policy]
            + [fmt_number(getattr(row, name)) for name in COLUMNS + ("f1",)]
            + [str(row.episodes)]
            for row in rows.itertuples()
        ]
        parts.append(
            f"\n## Budget {budget_label(int(budget))}\n\n"
            + markdown_table(header, body, ["l", "l"] + ["r"] * (len(header) - 2))
        )
    return "".join(parts)


def writ_modes(card: pd.DataFrame) -> pd.DataFrame:
    """WRIT's modes per (budget, track, policy): each metric under no memory, the policy (native) and the
    oracle, as columns ``<metric>_no_memory``, ``<metric>_native``, ``<metric>_oracle`` (NaN where the
    run lacks never_write / no_mem or oracle_optimal on that budget)."""
    rows = []
    for (budget, track), group in card.groupby(["budget_bytes", "track"], sort=False):
        by_policy = group.set_index("policy")
        budget_rows = card[card.budget_bytes == budget].set_index(["track", "policy"])
        no_memory = next((by_policy.loc[name] for name in NO_MEMORY if name in by_policy.index), None)
        oracle_rows = (
            budget_rows.xs(ORACLE, level="policy") if ORACLE in budget_rows.index.get_level_values(1) else None
        )
        oracle = oracle_rows.iloc[0] if oracle_rows is not None else None  # the oracle track's row
        for policy, native in by_policy.iterrows():
            if policy in NO_MEMORY or policy == ORACLE:
                continue
            row = {"budget_bytes": budget, "track": track, "policy": policy}
            for name in ("update_fidelity", "history_coverage", "temporal_accuracy", "stale_rate"):
                row[f"{name}_no_memory"] = None if no_memory is None else no_memory[name]
                row[f"{name}_native"] = native[name]
                row[f"{name}_oracle"] = None if oracle is None else oracle[name]
            rows.append(row)
    return pd.DataFrame(rows)


def writ_modes_markdown(modes: pd.DataFrame) -> str:
    metrics = ("update_fidelity", "history_coverage", "temporal_accuracy", "stale_rate")
    header = ["budget", "track", "policy"] + [
        f"{name} ({mode})" for name in metrics for mode in ("no memory", "native", "oracle")
    ]
    body = [
        [budget_label(int(row["budget_bytes"])), row["track"], row["policy"]]
        + [fmt_number(row[f"{name}_{mode}"]) for name in metrics for mode in ("no_memory", "native", "oracle")]
        for _, row in modes.iterrows()
    ]
    return (
        "# WRIT's three modes\n\nno memory = `never_write` (or `no_mem`), native = the policy, oracle = "
        "`oracle_optimal` (the oracle track; `–` where the run did not include it).\n\n"
        + markdown_table(header, body, ["l", "l", "l"] + ["r"] * (len(header) - 3))
    )


def write(results: pd.DataFrame, out: pathlib.Path, styles: dict) -> list[str]:
    """``integrity_scorecard.md/.csv``, ``integrity_writ_modes.md`` and the figures
    ``update_fidelity_vs_budget.png`` / ``history_coverage_vs_budget.png``; nothing without integrity columns."""
    if not has_integrity(results):
        return []
    import wpbjax.reports.plots as plots

    card = scorecard(results)
    card.to_csv(out / "integrity_scorecard.csv", index=False)
    (out / "integrity_scorecard.md").write_text(scorecard_markdown(card))
    (out / "integrity_writ_modes.md").write_text(writ_modes_markdown(writ_modes(card)))
    written = [
        str(out / name) for name in ("integrity_scorecard.csv", "integrity_scorecard.md", "integrity_writ_modes.md")
    ]
    for name, label in (
        ("update_fidelity", "Update fidelity: facts whose latest version is held (0–1)"),
        ("history_coverage", "History coverage: (fact, version) pairs held (0–1)"),
    ):
        defined = results[results[name].notna()]
        if not defined.empty:
            written.append(
                plots.metric_vs_budget(
                    defined,
                    name,
                    label,
                    f"{label.split(':')[0]} vs budget (mean ± 1 SE over episodes, modes pooled)",
                    out / f"{name}_vs_budget.png",
                    styles,
                )
            )
    return written
