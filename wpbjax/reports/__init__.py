"""Reports: every table and figure a researcher reads from a results table (``wpbjax report``).

:func:`write_report` writes, into one directory (see docs/reports.md for each file):
``leaderboard.md``, ``f1_by_budget_<mode>.md/.tex``, ``diagnostics.md/.tex/.csv``,
``recall_at_budget.csv``, ``utility_per_kb.json``, ``confusion_matrix.csv``,
``f1_vs_budget_<mode>_<track>.png`` (and all of them in ``f1_vs_budget_grid.png``), ``utility_per_kb_vs_budget.png``, ``regret_vs_budget.png``,
``regret_curve.png`` (+ ``regret_curve.csv``), ``run_metadata.json`` when the run has a sidecar, and where the
results carry integrity columns ``integrity_scorecard.md/.csv``, ``integrity_writ_modes.md``,
``update_fidelity_vs_budget.png`` and ``history_coverage_vs_budget.png`` (wpbjax.reports.integrity), and where
they carry read values ``read_scorecard.md/.csv`` and ``read_accuracy_vs_budget.png`` (wpbjax.reports.reads).
A package sweep's table gets its own report instead (:mod:`wpbjax.reports.packages`).

The public entry point is :func:`wpbjax.api.report` (``wj.report``).
"""

from __future__ import annotations

import json
import os
import pathlib
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from wpbjax.reports import metadata, packages, tables, tiers  # plots (matplotlib) only when drawing: sweeps import this

MAX_CURVE_EPISODES = 1000  # the per-step regret curve re-runs the policies with traces: cap its cost


def load_results(path: str | os.PathLike) -> pd.DataFrame:
    """A results table from ``.csv`` or ``.parquet``, checked for the columns the report needs."""
    from wpbjax.files.results_io import read_results

    path = os.fspath(path)
    results = read_results(path)
    if packages.is_package_table(results):  # a `wpbjax packages sweep` table
        return packages.check_package_results(results, path)
    if tiers.is_tier_table(results):  # a tiered sweep's (wpbjax sweep --journal-budgets)
        return tiers.check_tier_results(results, path)
    return tables.check_results(results, path)


REPORT_SUFFIXES = (".md", ".tex", ".csv", ".png", ".json")
REPORT_MARKERS = ("leaderboard.md", "package_summary.md", "tier_summary.md")


def is_report_directory(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds a previous report and nothing else (report files only): one a new
    report may replace."""
    entries = list(os.scandir(path))
    return any(entry.name in REPORT_MARKERS for entry in entries) and all(
        entry.is_file(follow_symlinks=False) and entry.name.endswith(REPORT_SUFFIXES) for entry in entries
    )


def write_report(
    results: pd.DataFrame,
    out_dir: str | os.PathLike,
    meta: dict | None = None,
    encoded=None,
    budget: int = tables.HEADLINE_BUDGET,
    curve_budget: int | None = None,
    log: Callable[[str], None] | None = None,
) -> list[str]:
    """Write every table and figure for ``results`` into ``out_dir``; returns the paths written.

    The report is built in a temporary directory beside ``out_dir`` and renamed to it only when
    complete (:func:`wpbjax.files.atomic.atomic_directory`): a failed or interrupted report leaves no
    report-looking files and an existing report as it was. An existing ``out_dir`` is replaced
    only if it is empty or holds a previous report (else a ValueError before any work).

    ``meta``: the run's sidecar (labels the leaderboard, rebuilds the episodes for the regret curve);
    ``encoded``: the run's EncodedEpisodes, if at hand (else rebuilt from ``meta``); without either
    the regret curve is skipped with a note. ``budget``: the leaderboard's and diagnostics' budget
    (nearest run budget if absent); ``curve_budget``: the regret curve's (default the same).
    A ``--param`` sweep's grid points are reported as policies of their own
    (:func:`wpbjax.reports.tables.grid_points_as_policies`). ``log``: receives a line for each file
    skipped and why (default: a warning).
    """
    from wpbjax.files.atomic import atomic_directory

    with atomic_directory(out_dir, is_report_directory) as building:
        if packages.is_package_table(results):
            written = packages.write_package_report(results, building)
        elif tiers.is_tier_table(results):
            written = tiers.write_tier_report(results, building)
        else:
            written = _write_episode_report(
                results, pathlib.Path(building), meta, encoded, budget, curve_budget, log or _warn
            )
    return [os.path.join(os.fspath(out_dir), os.path.relpath(path, building)) for path in written]


def _write_episode_report(
    results: pd.DataFrame,
    out: pathlib.Path,
    meta: dict | None,
    encoded,
    budget: int,
    curve_budget: int | None,
    note: Callable[[str], None],
) -> list[str]:
    """:func:`write_report` of an episode sweep's table, into the existing directory ``out``."""
    from wpbjax.reports import reads as reads_report

    results = tables.check_results(results)
    results, points = tables.grid_points_as_policies(results)
    every_k, results = results, reads_report.one_row_per_run(results)  # reads aside, each run counts once
    written: list[str] = []

    def text(name: str, content: str) -> None:
        (out / name).write_text(content)
        written.append(str(out / name))

    headline = tables.headline_budget(results, budget)
    board = tables.leaderboard(results, headline)
    text("leaderboard.md", tables.leaderboard_markdown(board, headline, meta, grid=bool(points)))
    for mode in tables.modes(results):
        f1 = tables.f1_by_budget(results, mode)
        text(f"f1_by_budget_{tables.slug(mode)}.md", tables.f1_table_markdown(f1, mode))
        text(f"f1_by_budget_{tables.slug(mode)}.tex", tables.f1_table_latex(f1, mode))
    diagnostics = tables.diagnostics(results, headline)
    text("diagnostics.md", tables.diagnostics_markdown(diagnostics, headline))
    text("diagnostics.tex", tables.diagnostics_latex(diagnostics, headline))
    all_budgets = pd.concat(
        [
            tables.diagnostics(results, int(b)).assign(budget_bytes=int(b))
            for b in sorted(results["budget_bytes"].unique())
        ],
        ignore_index=True,
    )
    all_budgets.to_csv(out / "diagnostics.csv", index=False)
    written.append(str(out / "diagnostics.csv"))
    tables.recall_at_budget(results).to_csv(out / "recall_at_budget.csv", index=False)
    written.append(str(out / "recall_at_budget.csv"))
    text("utility_per_kb.json", json.dumps(tables.utility_per_kb(results), indent=2) + "\n")
    try:
        tables.confusion_matrix(results).to_csv(out / "confusion_matrix.csv", index=False)
        written.append(str(out / "confusion_matrix.csv"))
    except ValueError as err:
        note(f"skipped confusion_matrix.csv: {err}")

    from wpbjax.reports import plots

    styles = plots.policy_styles(results["policy"])
    for mode in tables.modes(results):
        for track in tables.tracks(results):
            if ((results["mode"] == mode) & (results["track"] == track)).any():
                name = f"f1_vs_budget_{tables.slug(mode)}_{tables.slug(track)}.png"
                written.append(plots.f1_vs_budget(results, mode, track, out / name, styles))
    written.append(plots.f1_grid(results, out / "f1_vs_budget_grid.png", styles))
    oracle = f" ({meta['oracle']} oracle)" if meta and meta.get("oracle") else ""
    written.append(
        plots.metric_vs_budget(
            results,
            "utility_per_kb",
            "Utility per KB stored\n(utility units / 1024 bytes)",
            "Utility per KB vs budget (mean ± 1 SE over episodes, modes pooled)",
            out / "utility_per_kb_vs_budget.png",
            styles,
        )
    )
    written.append(
        plots.metric_vs_budget(
            results,
            "regret",
            "Regret = oracle − policy utility\n(utility units)",
            f"Regret vs budget{oracle} (mean ± 1 SE over episodes, modes pooled)",
            out / "regret_vs_budget.png",
            styles,
        )
    )

    from wpbjax.reports import integrity as integrity_report

    written += integrity_report.write(results, out, styles)  # write-integrity scorecard (docs/integrity.md)

    written += reads_report.write(every_k, out, styles)  # read scorecard (docs/reads.md)

    if encoded is None and meta is not None:
        encoded = metadata.episodes_from_metadata(meta)
    if encoded is None:
        note(
            "skipped regret_curve.png: no run metadata to rebuild the episodes from "
            "(the sweep writes it beside the results as RESULTS.meta.json; or pass --meta)"
        )
    else:
        curves, note = regret_curve_table(results, encoded, int(curve_budget or headline), meta, points)
        curves.to_csv(out / "regret_curve.csv", index=False)
        written.append(str(out / "regret_curve.csv"))
        written.append(plots.regret_curve(curves, out / "regret_curve.png", styles, note))
    if meta is not None:
        text("run_metadata.json", json.dumps(meta, indent=2) + "\n")
    return written


def _warn(line: str) -> None:
    warnings.warn(line, stacklevel=4)


def regret_curve_table(
    results: pd.DataFrame, encoded, budget: int, meta: dict | None, points: dict | None = None
) -> tuple[pd.DataFrame, str]:
    """Mean and SE of the per-step regret per (track, policy, step) (columns regret_mean, regret_se,
    episodes, oracle_to_date_mean, retained_to_date_mean), re-running each policy of
    ``results`` with traces on (at most MAX_CURVE_EPISODES evenly spaced episodes of) ``encoded``.
    ``points``: label -> (policy, {param: value}) of grid points reported as policies
    (:func:`wpbjax.reports.tables.grid_points_as_policies`): each re-runs at its point."""
    from wpbjax.reports import regret

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
        plain = [name for name in names if name not in (points or {})]
        if plain:
            frames.append(regret.regret_curves(encoded, track, plain, [budget], params=params))
        for label in [name for name in names if name in (points or {})]:
            policy, point = points[label]
            curve = regret.regret_curves(
                encoded, track, [policy], [budget], params={policy: {**params.get(policy, {}), **point}}
            )
            frames.append(curve.assign(policy=label))
    curves = pd.concat(frames, ignore_index=True)
    stats = tables.mean_se(curves, ["track", "policy", "step"], "regret_to_date")
    oracle_mean = curves.groupby(["track", "policy", "step"], sort=False)[["oracle_to_date", "retained_to_date"]].mean()
    stats = stats.merge(oracle_mean.reset_index(), on=["track", "policy", "step"])
    stats = stats.rename(
        columns={
            "mean": "regret_mean",
            "se": "regret_se",
            "n": "episodes",
            "oracle_to_date": "oracle_to_date_mean",
            "retained_to_date": "retained_to_date_mean",
        }
    )
    stats.insert(2, "budget_bytes", budget)
    return stats, note
