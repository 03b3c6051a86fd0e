"""Figures from a results table: F1 / utility per KB / regret against budget with ±1 standard-error
bands, and the per-step cumulative regret curve. Readable by default: axes labelled with units,
the legend outside the data, the Okabe–Ito colour-blind-safe palette plus a marker and line style
per policy (so curves stay apart in greyscale too), one style per policy across every figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # no pyplot: no display, no global backend change

from wpbjax.reports.tables import budget_label, mean_se, tracks

# Okabe & Ito (2008), without yellow (too pale on white for thin lines)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")
DPI = 150
MIN_LABEL_OCTAVES = 0.45  # budget tick labels closer than this (log2 distance) would overlap


def policy_styles(policies) -> dict:
    """Policy name -> matplotlib line keywords; fixed by the policy's position in ``policies``."""
    styles = {}
    for index, name in enumerate(dict.fromkeys(policies)):
        styles[name] = dict(
            color=PALETTE[index % len(PALETTE)],
            marker=MARKERS[index % len(MARKERS)],
            linestyle=LINESTYLES[(index // len(PALETTE)) % len(LINESTYLES)],
        )
    return styles


def _budget_axis(ax, budgets, min_octaves: float = MIN_LABEL_OCTAVES) -> None:
    budgets = sorted(int(budget) for budget in budgets)
    ax.set_xscale("log", base=2)
    # A tick at every budget; labels only where they do not collide (kept from the largest down,
    # so 10KB keeps its label and 8KB gives it up)
    labelled, last = set(), None
    for budget in reversed(budgets):
        if last is None or np.log2(last / budget) >= min_octaves:
            labelled.add(budget)
            last = budget
    ax.set_xticks(budgets, [budget_label(budget) if budget in labelled else "" for budget in budgets])
    ax.minorticks_off()
    ax.tick_params(axis="x", labelrotation=45 if len(budgets) > 6 else 0)
    ax.set_xlabel("Byte budget (log scale; KB = 1024 bytes)")
    ax.grid(True, which="major", alpha=0.3)


def _plot_band(ax, x, stats: pd.DataFrame, style: dict, label: str) -> None:
    mean, se = stats["mean"].to_numpy(float), stats["se"].to_numpy(float)
    ax.plot(x, mean, label=label, markersize=4, linewidth=1.6, **style)
    ax.fill_between(x, mean - se, mean + se, color=style["color"], alpha=0.18, linewidth=0)


def _legend_outside(fig, axes) -> None:
    handles, labels = {}, []
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    fig.legend(
        [handles[label] for label in labels],
        labels,
        loc="outside right center",
        title="Policy",
        frameon=False,
        fontsize=9,
        title_fontsize=9,
    )


def _save(fig, path) -> str:
    fig.savefig(path, dpi=DPI)
    return str(path)


def _by_budget(results: pd.DataFrame, metric: str, ax, styles: dict, min_octaves: float = MIN_LABEL_OCTAVES) -> None:
    stats = mean_se(results, ["policy", "budget_bytes"], metric)
    for policy in dict.fromkeys(results["policy"]):
        rows = stats[stats["policy"] == policy].sort_values("budget_bytes")
        _plot_band(ax, rows["budget_bytes"].to_numpy(), rows, styles[policy], policy)
    _budget_axis(ax, results["budget_bytes"].unique(), min_octaves)


def f1_vs_budget(results: pd.DataFrame, mode: str, track: str, path, styles: dict | None = None) -> str:
    """Mean F1 ± 1 SE against budget for one mode and track."""
    rows = results[(results["mode"] == mode) & (results["track"] == track)]
    if rows.empty:
        raise ValueError(f"no results for mode {mode!r} on track {track!r}")
    styles = styles or policy_styles(results["policy"])
    n_episodes = rows.groupby(["policy", "budget_bytes"]).size().min()
    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.subplots()
    _by_budget(rows, "f1", ax, styles)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("F1 of retained vs critical steps (0–1)")
    ax.set_title(f"F1 vs budget — mode {mode}, {track} track (mean ± 1 SE, {n_episodes} episodes)", fontsize=10)
    _legend_outside(fig, ax)
    return _save(fig, path)


def metric_vs_budget(
    results: pd.DataFrame, metric: str, ylabel: str, title: str, path, styles: dict | None = None
) -> str:
    """``metric`` (mean ± 1 SE over every episode, modes pooled) against budget, one panel per track."""
    styles = styles or policy_styles(results["policy"])
    names = tracks(results)
    fig = Figure(figsize=(5.2 * len(names) + 1.8, 4.2), layout="constrained")
    axes = fig.subplots(1, len(names), sharey=True, squeeze=False)
    for ax, track in zip(axes[0], names):
        rows = results[results["track"] == track]
        _by_budget(rows, metric, ax, styles)
        n_episodes = rows.groupby(["policy", "budget_bytes"]).size().min()
        ax.set_title(f"{track} track ({n_episodes} episodes)", fontsize=10)
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=11)
    _legend_outside(fig, axes)
    return _save(fig, path)


def f1_grid(results: pd.DataFrame, path, styles: dict | None = None, title: str | None = None) -> str:
    """Mean F1 ± 1 SE against budget, a panel per (track, mode): the paper's Figure 1 layout."""
    from wpbjax.reports.tables import modes

    styles = styles or policy_styles(results["policy"])
    row_names, column_names = tracks(results), modes(results)
    fig = Figure(figsize=(3.6 * len(column_names) + 1.8, 3.2 * len(row_names) + 0.4), layout="constrained")
    axes = fig.subplots(len(row_names), len(column_names), sharey=True, squeeze=False)
    for i, track in enumerate(row_names):
        for j, mode in enumerate(column_names):
            ax = axes[i, j]
            rows = results[(results["track"] == track) & (results["mode"] == mode)]
            _by_budget(rows, "f1", ax, styles, min_octaves=0.9)  # narrow panels: sparser labels
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{mode} — {track}", fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            if i < len(row_names) - 1:
                ax.set_xlabel("")
        axes[i, 0].set_ylabel("F1 (mean ± 1 SE)")
    fig.suptitle(title or "F1 vs byte budget per mode and track", fontsize=11)
    _legend_outside(fig, axes)
    return _save(fig, path)


def regret_curve(stats: pd.DataFrame, path, styles: dict | None = None, note: str = "") -> str:
    """Cumulative regret per step (oracle-to-date − retained-to-date), mean ± 1 SE over episodes,
    one panel per track. ``stats``: one budget's rows of track, policy, budget_bytes, step,
    regret_mean, regret_se, episodes (:func:`wpbjax.reports.regret_curve_table`)."""
    styles = styles or policy_styles(stats["policy"])
    names = tracks(stats)
    budget = int(stats["budget_bytes"].iloc[0])
    fig = Figure(figsize=(5.2 * len(names) + 1.8, 4.2), layout="constrained")
    axes = fig.subplots(1, len(names), sharey=True, squeeze=False)
    for ax, track in zip(axes[0], names):
        rows = stats[stats["track"] == track]
        for policy in dict.fromkeys(rows["policy"]):
            of_policy = rows[rows["policy"] == policy].sort_values("step")
            band = of_policy.rename(columns={"regret_mean": "mean", "regret_se": "se"})
            # dense x: markers only every ~tenth step, so each policy keeps its marker from the other figures
            every = max(len(of_policy) // 10, 1)
            _plot_band(ax, of_policy["step"].to_numpy(), band, dict(styles[policy], markevery=every), policy)
        ax.axhline(0.0, color="0.5", linewidth=0.8)
        ax.set_xlabel("Step t")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"{track} track ({int(rows['episodes'].max())} episodes)", fontsize=10)
    axes[0, 0].set_ylabel("Oracle-to-date − retained-to-date\n(utility units)")
    fig.suptitle(f"Cumulative regret over time at a {budget_label(budget)} budget (mean ± 1 SE{note})", fontsize=11)
    _legend_outside(fig, axes)
    return _save(fig, path)
