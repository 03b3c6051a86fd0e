"""The tables and the figure of docs/reads.md: what each policy's store is worth to a reader.

    python experiments/reads_tables.py [--out experiments/results/reads_tables.md]
                                       [--figure docs/figures/reads_haystack.png] [--only trade_off]

Episodes: the paper grid's (the published generator's four modes x 10 episodes, seed 0, 200 steps) with the
default generated probes (``--probes generate``: 0.1 probes per step, 20% as-of, 10% never-seen, 0.4 of the
current and as-of ones asking 2-3 facts and 0.1 of the current ones a history; seed 0), and
for the haystack also ``real:stripe`` (its 200-step windows of Stripe's real API history). Default retriever
(w_rel = w_rec = w_imp = 1, decay 0.99). Three parts, each printed as markdown (also written to --out):

* ``every_policy``: F1 against read accuracy at K = 1, 5, 20 (and read credit at K = 5) for every registered
  policy on each track it supports, at 1 KB, 10 KB and 100 KB;
* ``trade_off``: always_write, add_only, supersede and version_journal (unprivileged track): bytes stored,
  items held, read accuracy, stale answers and bytes retrieved per probe at every budget and K;
* ``haystack``: read accuracy against K and against store size (items held at the end, over the budgets) for
  always_write, add_only and supersede on the redundancy modes and on real drift, drawn in --figure.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import pandas as pd

import wpbjax.api as wj
from wpbjax.common.tracks import ALL_TRACKS
from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.policies import names
from wpbjax.reports.tables import budget_label

TABLE_BUDGETS = (1024, 10240, 102400)
TABLE_K = (1, 5, 20)
TRADE_OFF = ("always_write", "add_only", "supersede", "version_journal")
TRADE_OFF_BUDGETS = (1024, 4096, 10240, 32768, 102400)
HAYSTACK = ("always_write", "add_only", "supersede")
HAYSTACK_K = (1, 2, 3, 5, 10, 20, 50)
HAYSTACK_BUDGETS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 102400, 262144, 1048576)
HAYSTACK_SOURCES = ("redundancy", "burst_redundancy", "real:stripe")
PART_NAMES = ("every_policy", "trade_off", "haystack")


def paper_episodes(modes=MODES):
    """The paper grid's episodes (seed 0, 10 per mode, 200 steps), encoded."""
    return concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode), 10)) for mode in modes])


def _sweep(episodes, budgets, policies, tracks, top_k, retriever=None) -> pd.DataFrame:
    return wj.sweep(
        episodes,
        grid=wj.Grid(budgets=list(budgets), policies=list(policies), tracks=list(tracks)),
        reads=wj.Reads(top_k=top_k, probes="generate", retriever=retriever),
    )


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _fmt(value, digits: int = 3) -> str:
    return "–" if pd.isna(value) else f"{value:.{digits}f}"


def every_policy_markdown(results: pd.DataFrame) -> str:
    """One table per budget: F1 and read accuracy at each K, read credit, oracle-memory accuracy and the writer's
    share of wrong answers at K = 5, per (track, policy) in the sweep's order."""
    means = (
        results.groupby(["budget_bytes", "track", "policy", "top_k"], sort=False)[
            ["f1", "read_accuracy", "read_credit", "read_accuracy_oracle_memory", "writer_error_share"]
        ]
        .mean()
        .sort_index()
    )
    parts = []
    for budget in TABLE_BUDGETS:
        rows = []
        for track, policy in results[["track", "policy"]].drop_duplicates().itertuples(index=False):
            at = means.loc[(budget, track, policy)]
            rows.append(
                [track, policy, _fmt(at.f1.iloc[0])]
                + [_fmt(at.read_accuracy.loc[k]) for k in TABLE_K]
                + [_fmt(at.read_credit.loc[5])]
                + [_fmt(at.read_accuracy_oracle_memory.loc[5]), _fmt(at.writer_error_share.loc[5])]
            )
        header = (
            ["track", "policy", "F1"]
            + [f"read acc K={k}" for k in TABLE_K]
            + ["read credit K=5", "oracle-mem acc K=5", "writer share K=5"]
        )
        parts.append(f"#### Budget {budget_label(budget)}\n\n" + _markdown(header, rows))
    return "\n\n".join(parts)


def trade_off_markdown(results: pd.DataFrame) -> str:
    """Rows (budget, policy): bytes stored and items held at the end, then read accuracy, stale answer rate
    and bytes retrieved per probe at each K."""
    results = results.assign(items=results.write_density * 200)
    means = results.groupby(["budget_bytes", "policy", "top_k"], sort=False)[
        ["bytes_used", "items", "read_accuracy", "stale_answer_rate", "retrieved_bytes_per_query"]
    ].mean()
    header = (
        ["budget", "policy", "bytes stored", "items"]
        + [f"acc K={k}" for k in TABLE_K]
        + [f"stale K={k}" for k in TABLE_K]
        + [f"bytes/probe K={k}" for k in TABLE_K]
    )
    rows = []
    for budget in TRADE_OFF_BUDGETS:
        for policy in TRADE_OFF:
            at = means.loc[(budget, policy)]
            rows.append(
                [budget_label(budget), policy, f"{at.bytes_used.iloc[0]:.0f}", f"{at['items'].iloc[0]:.1f}"]
                + [_fmt(at.read_accuracy.loc[k]) for k in TABLE_K]
                + [_fmt(at.stale_answer_rate.loc[k]) for k in TABLE_K]
                + [f"{at.retrieved_bytes_per_query.loc[k]:.0f}" for k in TABLE_K]
            )
    return _markdown(header, rows)


def haystack_table(results: pd.DataFrame, steps: pd.Series) -> pd.DataFrame:
    """Mean items held and read accuracy per (policy, budget, K); ``steps``: each row's episode length."""
    results = results.assign(items=results.write_density * steps)
    return (
        results.groupby(["policy", "budget_bytes", "top_k"], sort=False)[
            ["items", "read_accuracy", "stale_answer_rate", "retrieval_miss_rate"]
        ]
        .mean()
        .reset_index()
    )


def haystack_markdown(table: pd.DataFrame, source: str) -> str:
    """Read accuracy per (policy, budget) at each K, with the items held."""
    header = ["policy", "budget", "items"] + [f"K={k}" for k in HAYSTACK_K]
    rows = []
    for (policy, budget), group in table.groupby(["policy", "budget_bytes"], sort=False):
        by_k = group.set_index("top_k")
        rows.append(
            [policy, budget_label(int(budget)), f"{by_k['items'].iloc[0]:.1f}"]
            + [_fmt(by_k.read_accuracy.loc[k]) for k in HAYSTACK_K]
        )
    return f"#### {source}\n\n" + _markdown(header, rows)


def importance_markdown(rows: list[tuple]) -> str:
    """(source, retriever label, results at the largest budget) -> read accuracy, stale and distractor rates
    at K = 1, 5, 20 per policy: the default retriever against the same without its importance term."""
    header = ["source", "retriever", "policy"] + [f"acc K={k}" for k in TABLE_K] + ["stale K=1", "distractor K=1"]
    body = []
    for source, label, results in rows:
        means = results.groupby(["policy", "top_k"], sort=False)[
            ["read_accuracy", "stale_answer_rate", "distractor_rate"]
        ].mean()
        for policy in HAYSTACK:
            at = means.loc[policy]
            body.append(
                [source, label, policy]
                + [_fmt(at.read_accuracy.loc[k]) for k in TABLE_K]
                + [_fmt(at.stale_answer_rate.loc[1]), _fmt(at.distractor_rate.loc[1])]
            )
    return _markdown(header, body)


def haystack_figure(tables: dict, path) -> str:
    """A column per source: read accuracy against K (at the largest budget), and against items held (over
    the budgets) at K = 1 and K = 5, a line per policy."""
    from matplotlib.figure import Figure

    from wpbjax.reports.plots import PALETTE

    fig = Figure(figsize=(4.2 * len(tables) + 0.6, 7.2), layout="constrained")
    axes = fig.subplots(2, len(tables), squeeze=False, sharey=True)
    for column, (source, table) in enumerate(tables.items()):
        top = table[table.budget_bytes == max(HAYSTACK_BUDGETS)]
        for index, policy in enumerate(HAYSTACK):
            rows = top[top.policy == policy].sort_values("top_k")
            axes[0, column].plot(
                rows.top_k, rows.read_accuracy, marker="os^"[index], color=PALETTE[index], label=policy
            )
            for k, style in ((1, ":"), (5, "-")):
                rows = table[(table.policy == policy) & (table.top_k == k)].sort_values("items")
                axes[1, column].plot(
                    rows["items"],
                    rows.read_accuracy,
                    marker="os^"[index],
                    linestyle=style,
                    color=PALETTE[index],
                    label=f"{policy}, K={k}",
                )
        axes[0, column].set_xscale("log")
        axes[0, column].set_xlabel("K (records retrieved per probe, log scale)")
        axes[0, column].set_title(f"{source}: vs K at {budget_label(max(HAYSTACK_BUDGETS))}", fontsize=10)
        axes[1, column].set_xscale("log")
        axes[1, column].set_xlabel("Items held at the end (mean over runs; log)")
        axes[1, column].set_title(f"{source}: vs store size (budgets 1 KB–1 MB)", fontsize=10)
        for ax in axes[:, column]:
            ax.grid(True, alpha=0.3)
    for row in range(2):
        axes[row, 0].set_ylabel("Read accuracy (0–1)")
    axes[0, -1].legend(fontsize=8, frameon=False)
    axes[1, -1].legend(fontsize=7, frameon=False)
    fig.suptitle(
        "The haystack effect: read accuracy vs K and vs store size (default retriever, generated probes)", fontsize=11
    )
    fig.savefig(path, dpi=150)
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="experiments/results/reads_tables.md")
    parser.add_argument("--figure", default="docs/figures/reads_haystack.png")
    parser.add_argument("--only", choices=PART_NAMES, action="append", help="parts to run (default: all)")
    args = parser.parse_args()
    parts = args.only or list(PART_NAMES)
    sections = []
    started = time.perf_counter()
    if "every_policy" in parts or "trade_off" in parts:
        paper = paper_episodes()
    if "every_policy" in parts:
        results = _sweep(paper, TABLE_BUDGETS, names(), ALL_TRACKS, TABLE_K)
        sections.append("### F1 and read accuracy, every policy\n\n" + every_policy_markdown(results))
    if "trade_off" in parts:
        results = _sweep(paper, TRADE_OFF_BUDGETS, TRADE_OFF, ["unprivileged"], TABLE_K)
        sections.append("### Update when writing or when reading\n\n" + trade_off_markdown(results))
    if "haystack" in parts:
        tables, importance = {}, []
        for source in HAYSTACK_SOURCES:
            episodes = source if source.startswith("real:") else paper_episodes([source])
            results = _sweep(episodes, HAYSTACK_BUDGETS, HAYSTACK, ["unprivileged"], HAYSTACK_K)
            steps = 200  # every paper episode and every default real:stripe window has 200 steps
            tables[source] = haystack_table(results, steps)
            sections.append(haystack_markdown(tables[source], source))
            top = max(HAYSTACK_BUDGETS)
            importance.append((source, "default", results[results.budget_bytes == top]))
            importance.append(
                (source, "w_imp = 0", _sweep(episodes, [top], HAYSTACK, ["unprivileged"], TABLE_K, {"w_imp": 0.0}))
            )
        sections.append(
            f"#### Without the importance term (at {budget_label(max(HAYSTACK_BUDGETS))})\n\n"
            + importance_markdown(importance)
        )
        pathlib.Path(args.figure).parent.mkdir(parents=True, exist_ok=True)
        sections.append(f"figure: {haystack_figure(tables, args.figure)}")
    text = "\n\n".join(sections) + f"\n\n({time.perf_counter() - started:.0f} s)\n"
    print(text)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
