"""Read reports (docs/reads.md): a read scorecard per policy x budget x K and read accuracy against budget.

Written only where the results carry read columns with values (a sweep with probes: ``--probes generate`` or
episodes with ``probes`` labels). One row per (budget, track, policy, K); each metric is the mean over the
runs where it is defined (a ratio with no denominator is blank in the row, wpbjax.scoring.reads), no aggregate.
"""

from __future__ import annotations

import pathlib

import pandas as pd

from wpbjax.reports.tables import budget_label, fmt_number, markdown_table, tracks
from wpbjax.scoring.reads import READ_COLUMNS

# The scorecard's metrics, in the order a reader asks: right?, why wrong (writer or retriever), at what cost.
METRICS = (
    "read_accuracy",
    "stale_answer_rate",
    "memory_miss_rate",
    "retrieval_miss_rate",
    "distractor_rate",
    "abstention_precision",
    "abstention_recall",
    "precision_at_k",
    "retrieved_bytes_per_query",
    "read_accuracy_no_memory",
    "read_accuracy_oracle_memory",
    "writer_error_share",
    "read_credit",
    "facts_per_probe",
)
SHORT = {
    "read_accuracy": "acc",
    "stale_answer_rate": "stale",
    "memory_miss_rate": "mem miss",
    "retrieval_miss_rate": "ret miss",
    "distractor_rate": "distract",
    "abstention_precision": "abst P",
    "abstention_recall": "abst R",
    "precision_at_k": "P@K",
    "retrieved_bytes_per_query": "bytes/q",
    "read_accuracy_no_memory": "acc no-mem",
    "read_accuracy_oracle_memory": "acc oracle-mem",
    "writer_error_share": "writer share",
    "read_credit": "credit",
    "facts_per_probe": "facts/q",
}
LATER = ("read_credit", "facts_per_probe")  # results written before probes of several facts lack these


def has_reads(results: pd.DataFrame) -> bool:
    """The run carries read columns and some row has a read accuracy (its episodes had probes)."""
    needed = [name for name in READ_COLUMNS if name not in LATER]
    return all(name in results for name in needed) and results["read_accuracy"].notna().any()


def _metrics(table: pd.DataFrame) -> list:
    return [name for name in METRICS if name in table]


def one_row_per_run(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the table's first K only: a sweep with several K (``--top-k 1,5,20``) writes each run once
    per K, with every column but the read ones the same, so every table and figure that is not about reads
    counts each run once."""
    if "top_k" not in results or results["top_k"].nunique() < 2:
        return results
    return results[results["top_k"] == results["top_k"].iloc[0]].reset_index(drop=True)


def scorecard(results: pd.DataFrame) -> pd.DataFrame:
    """Mean of every read metric and of F1 per (budget, track, policy, top_k), over the rows with probes;
    ``runs`` = rows averaged. Sorted by budget, then K; tracks and policies in first-seen order."""
    probed = results[results["n_probes"] > 0]
    groups = probed.groupby(["budget_bytes", "top_k", "track", "policy"], sort=False)
    card = groups[_metrics(results) + ["f1"]].mean()
    card["runs"] = groups.size()
    return card.reset_index().sort_values(["budget_bytes", "top_k"], kind="stable").reset_index(drop=True)


def scorecard_markdown(card: pd.DataFrame) -> str:
    """One table per (budget, K): a row per (track, policy), a column per metric (``–``: undefined everywhere)."""
    metrics = _metrics(card)
    header = ["track", "policy"] + [SHORT[name] for name in metrics] + ["f1", "runs"]
    parts = [
        "# Read scorecard\n",
        "Mean over runs with probes (docs/reads.md). acc = read accuracy; stale, mem miss, ret miss over "
        "answerable probes (a wrong answer is the writer's when the whole store answers wrong too, else the "
        "retriever's); distract = top-1 of another fact; abst P/R = abstention precision/recall; P@K = "
        "retrieved records of the asked fact; bytes/q = bytes retrieved per probe; acc no-mem / oracle-mem = "
        "the same probes with no memory / every step stored; writer share = wrong answers oracle memory "
        "gets right; credit = the weighted share of a probe's facts right; facts/q = facts per probe. `–` = "
        "undefined for every run.\n",
    ]
    for (budget, top_k), rows in card.groupby(["budget_bytes", "top_k"], sort=False):
        body = [
            [row["track"], row["policy"]]
            + [fmt_number(row[name], 1 if name == "retrieved_bytes_per_query" else 3) for name in metrics]
            + [fmt_number(row["f1"]), str(row["runs"])]
            for _, row in rows.iterrows()
        ]
        parts.append(
            f"\n## Budget {budget_label(int(budget))}, K = {int(top_k)}\n\n"
            + markdown_table(header, body, ["l", "l"] + ["r"] * (len(header) - 2))
        )
    return "".join(parts)


def read_accuracy_vs_budget(results: pd.DataFrame, path, styles: dict | None = None) -> str:
    """Mean read accuracy ± 1 SE against budget: a panel per (track, K), a line per policy (modes pooled)."""
    from matplotlib.figure import Figure

    from wpbjax.reports import plots

    probed = results[results["n_probes"] > 0]
    styles = styles or plots.policy_styles(probed["policy"])
    row_names, ks = tracks(probed), sorted(int(k) for k in probed["top_k"].unique())
    fig = Figure(figsize=(3.8 * len(ks) + 1.8, 3.2 * len(row_names) + 0.5), layout="constrained")
    axes = fig.subplots(len(row_names), len(ks), sharey=True, squeeze=False)
    for i, track in enumerate(row_names):
        for j, top_k in enumerate(ks):
            ax = axes[i, j]
            rows = probed[(probed["track"] == track) & (probed["top_k"] == top_k)]
            plots._by_budget(rows, "read_accuracy", ax, styles, min_octaves=0.9)
            ax.set_ylim(-0.02, 1.02)
            n_runs = rows.groupby(["policy", "budget_bytes"]).size().min() if not rows.empty else 0
            ax.set_title(f"{track}, K = {top_k} ({n_runs} runs)", fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            if i < len(row_names) - 1:
                ax.set_xlabel("")
        axes[i, 0].set_ylabel("Read accuracy (0–1)")
    fig.suptitle("Read accuracy vs byte budget for each K (mean ± 1 SE over runs, modes pooled)", fontsize=11)
    plots._legend_outside(fig, axes)
    return plots._save(fig, path)


def write(results: pd.DataFrame, out: pathlib.Path, styles: dict) -> list[str]:
    """``read_scorecard.md/.csv`` and ``read_accuracy_vs_budget.png``; nothing without read values."""
    if not has_reads(results):
        return []
    card = scorecard(results)
    card.to_csv(out / "read_scorecard.csv", index=False)
    (out / "read_scorecard.md").write_text(scorecard_markdown(card))
    return [
        str(out / "read_scorecard.csv"),
        str(out / "read_scorecard.md"),
        read_accuracy_vs_budget(results, out / "read_accuracy_vs_budget.png", styles),
    ]
