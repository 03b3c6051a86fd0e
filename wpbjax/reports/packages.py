"""Reports of package results (``wpbjax packages sweep`` tables): the mean ratio to OPT by method and
budget with 95% bootstrap intervals, as a table and as a ratio-vs-budget figure per distribution.

``wpbjax report`` dispatches here when a results table has the package columns (see
:func:`is_package_table`); the episode report is untouched.
"""

from __future__ import annotations

import os
import pathlib

import pandas as pd

from wpbjax.reports.tables import require_columns_and_rows

REQUIRED = ("distribution", "seed", "budget", "method", "value", "opt", "ratio")


def is_package_table(results: pd.DataFrame) -> bool:
    """A package sweep's table (``method`` and ``ratio`` columns, no episode ``policy``)."""
    return {"method", "ratio"} <= set(results.columns) and "policy" not in results.columns


def check_package_results(results: pd.DataFrame, source: str = "results") -> pd.DataFrame:
    require_columns_and_rows(results, REQUIRED, "package results", source)
    bad = pd.to_numeric(results["ratio"], errors="coerce").isna() & results["ratio"].notna()
    if bad.any():
        raise ValueError(f"{source}: row {int(bad.to_numpy().argmax()) + 1}: column 'ratio' is not a number")
    keys = ["distribution", "package" if "package" in results else "seed", "budget", "method"]
    duplicated = results.duplicated(keys)
    if duplicated.any():
        first = results[duplicated].iloc[0]
        raise ValueError(
            f"{source}: {int(duplicated.sum()):,} duplicate rows (the first: "
            + ", ".join(f"{key} {first[key]}" for key in keys)
            + "): a table glued from two runs?"
        )
    counts = results.groupby(["distribution", "method", "budget"], dropna=False).size()
    if counts.nunique() > 1:
        position = int((counts != counts.max()).to_numpy().argmax())  # by position: keys may be NaN
        odd = counts.index[position]
        raise ValueError(
            f"{source}: {odd[1]} at budget {odd[2]} ({odd[0]}) has {counts.iloc[position]:,} rows where others "
            f"have {counts.max():,}: an incomplete or merged table"
        )
    results = results.copy()
    results["distribution"] = results["distribution"].fillna("").astype(str)
    results["ratio"] = pd.to_numeric(results["ratio"])
    return results


def summary(results: pd.DataFrame, n_boot: int = 1000) -> pd.DataFrame:
    """Mean ratio by (distribution, method, budget) with 95% bootstrap intervals (the sweep's own summary)."""
    from wpbjax.packages.sweeps import summary as sweep_summary

    return sweep_summary(results, n_boot=n_boot)


def summary_markdown(table: pd.DataFrame) -> str:
    """One Markdown table per distribution: methods x budgets, ``mean [low, high]``."""
    lines = []
    for distribution, part in table.groupby("distribution", sort=False):
        budgets = sorted(part["budget"].unique())
        n = int(part["n"].max())
        lines += [
            f"## {distribution or 'packages'}: mean ratio to OPT [95% bootstrap interval], {n} packages",
            "",
            "| method | " + " | ".join(f"B={int(b)}" for b in budgets) + " |",
            "|---|" + "---:|" * len(budgets),
        ]
        for method, rows in part.groupby("method", sort=False):
            by_budget = rows.set_index("budget")
            cells = [
                f"{by_budget.at[b, 'mean_ratio']:.4f} [{by_budget.at[b, 'ci_low']:.4f}, "
                f"{by_budget.at[b, 'ci_high']:.4f}]"
                if b in by_budget.index
                else ""
                for b in budgets
            ]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def ratio_figure(table: pd.DataFrame, distribution: str, path) -> str:
    """Mean ratio to OPT against budget (log2 axis), one line per method with its 95% interval band."""
    from matplotlib.figure import Figure

    from wpbjax.reports.plots import DPI, policy_styles

    part = table[table["distribution"] == distribution]
    styles = policy_styles(table["method"])
    fig = Figure(figsize=(7.5, 4.2), dpi=DPI)
    ax = fig.add_subplot()
    for method, rows in part.groupby("method", sort=False):
        rows = rows.sort_values("budget")
        x = rows["budget"].to_numpy(float)
        ax.plot(x, rows["mean_ratio"], label=method, markersize=4, linewidth=1.6, **styles[method])
        ax.fill_between(x, rows["ci_low"], rows["ci_high"], color=styles[method]["color"], alpha=0.18, linewidth=0)
    budgets = sorted(int(b) for b in part["budget"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.minorticks_off()
    ax.set_xlabel("Budget B (package cost units, log scale)")
    ax.set_ylabel("F(store) / OPT(B)")
    ax.set_ylim(min(0.0, float(part["ci_low"].min())), 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(
        f"{distribution or 'packages'}: mean ratio to certified OPT (95% bootstrap bands, "
        f"{int(part['n'].max())} packages)",
        fontsize=9,
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    return os.fspath(path)


def write_package_report(results: pd.DataFrame, out_dir) -> list[str]:
    """``package_summary.csv`` / ``.md`` and ``ratio_vs_budget_<distribution>.png`` in ``out_dir``."""
    from wpbjax.reports.tables import slug

    results = check_package_results(results)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = summary(results)
    table.to_csv(out / "package_summary.csv", index=False)
    (out / "package_summary.md").write_text(summary_markdown(table))
    written = [str(out / "package_summary.csv"), str(out / "package_summary.md")]
    for distribution in dict.fromkeys(table["distribution"]):
        written.append(ratio_figure(table, distribution, out / f"ratio_vs_budget_{slug(distribution)}.png"))
    return written
