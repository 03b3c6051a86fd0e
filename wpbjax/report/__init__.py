"""Reports: every table and figure a researcher reads from a results table (``wpbjax report``).

:func:`write_report` writes, into one directory (see docs/reports.md for each file):
``leaderboard.md``, ``f1_by_budget_<mode>.md/.tex``, ``diagnostics.md/.tex/.csv``,
``recall_at_budget.csv``, ``utility_per_kb.json``, ``confusion_matrix.csv``,
``f1_vs_budget_<mode>_<track>.png`` (and all of them in ``f1_vs_budget_grid.png``), ``utility_per_kb_vs_budget.png``, ``regret_vs_budget.png``,
``regret_curve.png`` (+ ``regret_curve.csv``), ``run_metadata.json`` when the run has a sidecar, and where the
results carry integrity columns ``integrity_scorecard.md/.csv``, ``integrity_writ_modes.md``,
``update_fidelity_vs_budget.png`` and ``history_coverage_vs_budget.png`` (wpbjax.report.integrity).
A package sweep's table gets its own report instead (:mod:`wpbjax.report.packages`).

The module is callable: ``wpbjax.report("results.csv", "report/")`` runs :func:`wpbjax.api.report`.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys

import numpy as np
import pandas as pd

from wpbjax.report import metadata, packages, tables  # plots (matplotlib) only when drawing: sweeps import this

MAX_CURVE_EPISODES = 1000  # the per-step regret curve re-runs the policies with traces: cap its cost


def load_results(path: str | os.PathLike) -> pd.DataFrame:
    """A results table from ``.csv`` or ``.parquet``, checked for the columns the report needs."""
    from wpbjax.results_io import read_results

    path = os.fspath(path)
    results = read_results(path)
    if packages.is_package_table(results):  # a `wpbjax packages sweep` table
        return packages.check_package_results(results, path)
    return tables.check_results(results, path)


def write_report(results: pd.DataFrame, out_dir: str | os.PathLike, meta: dict | None = None, encoded=None,
                 budget: int = tables.HEADLINE_BUDGET, curve_budget: int | None = None) -> list[str]:
    """Write every table and figure for ``results`` into ``out_dir``; returns the paths written.

    ``meta``: the run's sidecar (labels the leaderboard, rebuilds the episodes for the regret curve);
    ``encoded``: the run's EncodedEpisodes, if at hand (else rebuilt from ``meta``); without either
    the regret curve is skipped with a note. ``budget``: the leaderboard's and diagnostics' budget
    (nearest run budget if absent); ``curve_budget``: the regret curve's (default the same).
    """
    if packages.is_package_table(results):
        return packages.write_package_report(results, out_dir)
    results = tables.check_results(results)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def text(name: str, content: str) -> None:
        (out / name).write_text(content)
        written.append(str(out / name))

    headline = tables.headline_budget(results, budget)
    board = tables.leaderboard(results, headline)
    text("leaderboard.md", tables.leaderboard_markdown(board, headline, meta))
    for mode in tables.modes(results):
        f1 = tables.f1_by_budget(results, mode)
        text(f"f1_by_budget_{tables._slug(mode)}.md", tables.f1_table_markdown(f1, mode))
        text(f"f1_by_budget_{tables._slug(mode)}.tex", tables.f1_table_latex(f1, mode))
    diagnostics = tables.diagnostics(results, headline)
    text("diagnostics.md", tables.diagnostics_markdown(diagnostics, headline))
    text("diagnostics.tex", tables.diagnostics_latex(diagnostics, headline))
    all_budgets = pd.concat([tables.diagnostics(results, int(b)).assign(budget_bytes=int(b))
                             for b in sorted(results["budget_bytes"].unique())], ignore_index=True)
    all_budgets.to_csv(out / "diagnostics.csv", index=False)
    written.append(str(out / "diagnostics.csv"))
    tables.recall_at_budget(results).to_csv(out / "recall_at_budget.csv", index=False)
    written.append(str(out / "recall_at_budget.csv"))
    text("utility_per_kb.json", json.dumps(tables.utility_per_kb(results), indent=2) + "\n")
    try:
        tables.confusion_matrix(results).to_csv(out / "confusion_matrix.csv", index=False)
        written.append(str(out / "confusion_matrix.csv"))
    except ValueError as err:
        print(f"wpbjax report: skipped confusion_matrix.csv: {err}", file=sys.stderr)

    from wpbjax.report import plots

    styles = plots.policy_styles(results["policy"])
    for mode in tables.modes(results):
        for track in tables.tracks(results):
            if ((results["mode"] == mode) & (results["track"] == track)).any():
                name = f"f1_vs_budget_{tables._slug(mode)}_{tables._slug(track)}.png"
                written.append(plots.f1_vs_budget(results, mode, track, out / name, styles))
    written.append(plots.f1_grid(results, out / "f1_vs_budget_grid.png", styles))
    oracle = f" ({meta['oracle']} oracle)" if meta and meta.get("oracle") else ""
    written.append(plots.metric_vs_budget(
        results, "utility_per_kb", "Utility per KB stored\n(utility units / 1024 bytes)",
        "Utility per KB vs budget (mean ± 1 SE over episodes, modes pooled)", out / "utility_per_kb_vs_budget.png",
        styles))
    written.append(plots.metric_vs_budget(
        results, "regret", "Regret = oracle − policy utility\n(utility units)",
        f"Regret vs budget{oracle} (mean ± 1 SE over episodes, modes pooled)", out / "regret_vs_budget.png", styles))

    from wpbjax.report import integrity as integrity_report

    written += integrity_report.write(results, out, styles)  # write-integrity scorecard (docs/integrity.md)

    if encoded is None and meta is not None:
        encoded = metadata.episodes_from_metadata(meta)
    if encoded is None:
        print("wpbjax report: skipped regret_curve.png: no run metadata to rebuild the episodes from "
              "(the sweep writes it beside the results as RESULTS.meta.json; or pass --meta)", file=sys.stderr)
    else:
        curves, note = regret_curve_table(results, encoded, int(curve_budget or headline), meta)
        curves.to_csv(out / "regret_curve.csv", index=False)
        written.append(str(out / "regret_curve.csv"))
        written.append(plots.regret_curve(curves, out / "regret_curve.png", styles, note))
    if meta is not None:
        text("run_metadata.json", json.dumps(meta, indent=2) + "\n")
    return written


def regret_curve_table(results: pd.DataFrame, encoded, budget: int, meta: dict | None) -> tuple[pd.DataFrame, str]:
    """Mean and SE of the per-step regret per (track, policy, step) (columns regret_mean, regret_se,
    episodes, oracle_to_date_mean, retained_to_date_mean), re-running each policy of
    ``results`` with traces on (at most MAX_CURVE_EPISODES evenly spaced episodes of) ``encoded``."""
    from wpbjax import regret

    n_episodes = encoded.n_episodes
    note = ""
    if n_episodes > MAX_CURVE_EPISODES:
        keep = np.linspace(0, n_episodes - 1, MAX_CURVE_EPISODES).round().astype(int)
        encoded = encoded.take(keep)
        note = f"; {MAX_CURVE_EPISODES} of {n_episodes} episodes"
    params = (meta or {}).get("policy_params", {})
    frames = []
    for track in tables.tracks(results):
        names = list(dict.fromkeys(results.loc[results["track"] == track, "policy"]))
        frames.append(regret.regret_curves(encoded, track, names, [budget], params=params))
    curves = pd.concat(frames, ignore_index=True)
    stats = tables.mean_se(curves, ["track", "policy", "step"], "regret_to_date")
    oracle_mean = curves.groupby(["track", "policy", "step"], sort=False)[["oracle_to_date", "retained_to_date"]].mean()
    stats = stats.merge(oracle_mean.reset_index(), on=["track", "policy", "step"])
    stats = stats.rename(columns={"mean": "regret_mean", "se": "regret_se", "n": "episodes",
                                  "oracle_to_date": "oracle_to_date_mean", "retained_to_date": "retained_to_date_mean"})
    stats.insert(2, "budget_bytes", budget)
    return stats, note


from wpbjax._callable import make_callable  # noqa: E402

make_callable(__name__, "report")
