"""Tables from a results table (one row per run): leaderboard, F1 by budget, diagnostics,
recall at budget, utility per KB, confusion matrices. Pure functions of the DataFrame; the
writers (Markdown, LaTeX) format what the builders compute, so tests can check the numbers.

Means are over episodes (every mode pooled unless a table is per mode); ``se`` is the standard
error of that mean (sample standard deviation / sqrt(n); 0 for a single episode).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

HEADLINE_BUDGET = 10240  # the spec's "@10KB"
DIAGNOSTICS = (
    ("utilization", "Utilization"),
    ("write_density", "Write density"),
    ("expire_rate", "Expire rate"),
    ("avg_staleness", "Avg staleness (steps)"),
    ("drift_coverage", "Drift coverage"),
)
REQUIRED = (
    "track",
    "policy",
    "mode",
    "budget_bytes",
    "episode_id",
    "f1",
    "recall",
    "precision",
    "utility_per_kb",
    "avg_staleness",
    "regret",
    "utilization",
    "write_density",
    "expire_rate",
    "drift_coverage",
)
CONFUSION = ("tp", "fp", "fn", "tn")
TEXT_COLUMNS = ("track", "policy", "mode")  # every other required column is a number


def _check_cells(results: pd.DataFrame, source: str) -> None:
    """Every required cell present and every numeric column finite numbers: a cut line or a stray
    word stops here with the file, column and row, not as a TypeError deep in pandas or an inf mean."""
    for column in REQUIRED + tuple(c for c in CONFUSION if c in results.columns):
        values = results[column]
        empty = values.isna() if column != "mode" else pd.Series(False, index=values.index)
        if empty.any():
            row = int(np.argmax(empty.to_numpy()))
            raise ValueError(
                f"{source}: column '{column}' is empty in data row {row + 1} of {len(results)} "
                "(a cut or hand-edited file?)"
            )
        if column in TEXT_COLUMNS or column == "episode_id":
            continue
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(numbers)
        if bad.any():
            row = int(np.argmax(bad))
            cell = values.iloc[row]
            shown = repr(cell) if isinstance(cell, str) else str(cell)
            raise ValueError(f"{source}: column '{column}' must hold finite numbers; data row {row + 1} holds {shown}")


def require_columns_and_rows(results: pd.DataFrame, required, kind: str, source: str) -> None:
    """ValueError naming ``source`` when a ``required`` column is missing or the table is empty."""
    missing = [column for column in required if column not in results.columns]
    if missing:
        raise ValueError(f"{source}: not a {kind} table; missing columns {', '.join(missing)}")
    if results.empty:
        raise ValueError(f"{source}: no rows")


def check_results(results: pd.DataFrame, source: str = "results") -> pd.DataFrame:
    require_columns_and_rows(results, REQUIRED, "wpbjax results", source)
    _check_cells(results, source)
    results = results.copy()
    results["mode"] = results["mode"].fillna("").astype(str)
    return results


def budget_label(budget: int) -> str:
    """1024 -> '1KB', 10240 -> '10KB', 1048576 -> '1MB', 10809 -> '10.6KB', 700 -> '700B' (KB = 1024 bytes)."""
    budget = int(budget)
    if budget % (1 << 20) == 0:
        return f"{budget >> 20}MB"
    if budget % 1024 == 0:
        return f"{budget // 1024}KB"
    if budget >= 1 << 20:
        return f"{budget / (1 << 20):.3g}MB"
    if budget >= 1024:
        return f"{budget / 1024:.3g}KB"
    return f"{budget}B"


def headline_budget(results: pd.DataFrame, wanted: int = HEADLINE_BUDGET) -> int:
    """``wanted`` if the sweep ran it, else the budget nearest to it on a log scale."""
    budgets = np.unique(results["budget_bytes"].to_numpy())
    return int(budgets[np.argmin(np.abs(np.log(budgets / wanted)))])


def _pairs(results: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """Unique rows of ``columns`` as tuples, in first-seen order."""
    return list(results[columns].drop_duplicates().itertuples(index=False, name=None))


def modes(results: pd.DataFrame) -> list[str]:
    """Modes in first-seen order."""
    return list(dict.fromkeys(results["mode"]))


def tracks(results: pd.DataFrame) -> list[str]:
    """Tracks in first-seen order."""
    return list(dict.fromkeys(results["track"]))


PARAM_PREFIX = "param_"  # a swept param's column (wpbjax sweep --param NAME=...)


def param_columns(results: pd.DataFrame) -> list[str]:
    """The swept params' columns of a results table (``param_threshold``, ...)."""
    return [column for column in results.columns if column.startswith(PARAM_PREFIX)]


def point_label(policy: str, point: dict) -> str:
    """``threshold_gate (threshold=0.3)``: a policy at one grid point of its swept params."""
    return f"{policy} ({', '.join(f'{name}={value:g}' for name, value in point.items())})"


def grid_points_as_policies(results: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[str, dict]]]:
    """A ``--param`` sweep's table with each grid point as a policy of its own (``policy`` becomes
    :func:`point_label`; the param columns go), so every table and figure has one row or line per grid
    point and counts episodes, never grid points. Returns (table, label -> (policy, {param: value}))
    for the policies with swept params; a table without param columns comes back as it is."""
    columns = param_columns(results)
    if not columns:
        return results, {}
    values = results[columns].apply(pd.to_numeric, errors="coerce")
    swept = values.notna().any(axis=1)
    points: dict[str, tuple[str, dict]] = {}
    labels = results["policy"].astype(str).copy()
    keyed = pd.concat([results.loc[swept, "policy"], values[swept]], axis=1)
    for key, rows in keyed.groupby(["policy", *columns], sort=False, dropna=False).groups.items():
        point = {column[len(PARAM_PREFIX) :]: float(value) for column, value in zip(columns, key[1:]) if value == value}
        label = point_label(key[0], point)
        points[label] = (key[0], point)
        labels.loc[rows] = label
    return results.drop(columns=columns).assign(policy=labels), points


def mean_se(results: pd.DataFrame, by: list[str], metric: str) -> pd.DataFrame:
    """Mean, standard error and count of ``metric`` per group, groups in first-seen order."""
    groups = results.groupby(by, sort=False)[metric]
    table = groups.agg(mean="mean", std="std", n="count").reset_index()
    table["se"] = (table["std"] / np.sqrt(table["n"])).where(table["n"] > 1, 0.0)
    return table.drop(columns="std")


def leaderboard(results: pd.DataFrame, budget: int) -> pd.DataFrame:
    """The spec's leaderboard at one budget: per track, policies ranked by mean F1 (then recall).
    Columns: track, rank, policy, recall, f1, utility_per_kb, avg_staleness, episodes."""
    at = results[results["budget_bytes"] == budget]
    board = (
        at.groupby(["track", "policy"], sort=False)
        .agg(
            recall=("recall", "mean"),
            f1=("f1", "mean"),
            utility_per_kb=("utility_per_kb", "mean"),
            avg_staleness=("avg_staleness", "mean"),
            episodes=("f1", "size"),
        )
        .reset_index()
    )
    order = {track: index for index, track in enumerate(tracks(results))}
    board = board.assign(_track=board["track"].map(order)).sort_values(
        ["_track", "f1", "recall", "policy"], ascending=[True, False, False, True], kind="stable"
    )
    board["rank"] = board.groupby("track", sort=False).cumcount() + 1
    return board[
        ["track", "rank", "policy", "recall", "f1", "utility_per_kb", "avg_staleness", "episodes"]
    ].reset_index(drop=True)


def f1_by_budget(results: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Mean F1 of one mode: rows (track, policy) in the results' order, columns budgets ascending."""
    of_mode = results[results["mode"] == mode]
    table = of_mode.pivot_table(index=["track", "policy"], columns="budget_bytes", values="f1", aggfunc="mean")
    return table.reindex(pd.MultiIndex.from_tuples(_pairs(of_mode, ["track", "policy"]), names=["track", "policy"]))


def diagnostics(results: pd.DataFrame, budget: int) -> pd.DataFrame:
    """Table-4-style diagnostics at one budget: mean utilization, write density, expire rate,
    staleness and drift coverage per (track, mode, policy)."""
    at = results[results["budget_bytes"] == budget]
    table = at.groupby(["track", "mode", "policy"], sort=False)[[name for name, _ in DIAGNOSTICS]].mean()
    return table.reset_index()


def recall_at_budget(results: pd.DataFrame) -> pd.DataFrame:
    """Recall per (track, mode, policy, budget), plus rows with mode ``all`` pooling every mode:
    recall_mean, recall_se, episodes."""
    per_mode = mean_se(results, ["track", "mode", "policy", "budget_bytes"], "recall")
    pooled = mean_se(results, ["track", "policy", "budget_bytes"], "recall").assign(mode="all")
    table = pd.concat([per_mode, pooled[per_mode.columns]], ignore_index=True)
    table = table.rename(columns={"mean": "recall_mean", "se": "recall_se", "n": "episodes"})
    return table[["track", "mode", "policy", "budget_bytes", "recall_mean", "recall_se", "episodes"]]


def utility_per_kb(results: pd.DataFrame) -> dict:
    """Utility per KB stored (KB = 1024 bytes) by track -> policy: mean and standard error per budget,
    pooled and per mode."""
    budgets = sorted(int(budget) for budget in results["budget_bytes"].unique())
    out = {
        "metric": "utility_per_kb",
        "unit": "utility retained per 1024 bytes in use (0 when nothing is stored)",
        "budgets": budgets,
        "tracks": {},
    }
    pooled = mean_se(results, ["track", "policy", "budget_bytes"], "utility_per_kb")
    per_mode = mean_se(results, ["track", "policy", "mode", "budget_bytes"], "utility_per_kb")
    for (track, policy), rows in pooled.groupby(["track", "policy"], sort=False):
        rows = rows.set_index("budget_bytes").reindex(budgets)
        entry = {"mean": _floats(rows["mean"]), "se": _floats(rows["se"]), "episodes": _ints(rows["n"]), "by_mode": {}}
        of_policy = per_mode[(per_mode["track"] == track) & (per_mode["policy"] == policy)]
        for mode, mode_rows in of_policy.groupby("mode", sort=False):
            mode_rows = mode_rows.set_index("budget_bytes").reindex(budgets)
            entry["by_mode"][mode] = {"mean": _floats(mode_rows["mean"]), "se": _floats(mode_rows["se"])}
        out["tracks"].setdefault(track, {})[policy] = entry
    return out


def _floats(series) -> list:
    return [None if pd.isna(value) else float(value) for value in series]


def _ints(series) -> list:
    return [None if pd.isna(value) else int(value) for value in series]


def confusion_matrix(results: pd.DataFrame) -> pd.DataFrame:
    """TP/FP/FN/TN of retained vs critical steps, summed over episodes, per (track, policy, budget).
    Needs the count columns ``tp, fp, fn, tn`` that ``wpbjax sweep`` writes."""
    missing = [column for column in CONFUSION if column not in results.columns]
    if missing:
        raise ValueError(
            f"the results lack the count columns {', '.join(missing)} (written by wpbjax sweep "
            "since the report was added); rerun the sweep to get a confusion matrix"
        )
    table = (
        results.groupby(["track", "policy", "budget_bytes"], sort=False)
        .agg(episodes=("tp", "size"), **{column: (column, "sum") for column in CONFUSION})
        .reset_index()
    )
    return table


# --- writers ----------------------------------------------------------------------------------


def fmt_number(value, digits: int = 3) -> str:
    return "–" if pd.isna(value) else f"{value:.{digits}f}"


def markdown_table(header: list[str], rows: list[list[str]], align: list[str]) -> str:
    rule = ["---:" if side == "r" else "---" for side in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    escapes = {
        "\\": r"\textbackslash{}",
        "_": r"\_",
        "%": r"\%",
        "&": r"\&",
        "#": r"\#",
        "$": r"\$",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
    return "".join(escapes.get(char, char) for char in text)


def _latex(
    header: list[str], rows: list[list[str]], align: str, caption: str, label: str, rules_after: set[int] = frozenset()
) -> str:
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(header) + r" \\",
        r"\midrule",
    ]
    for index, row in enumerate(rows):
        lines.append(" & ".join(row) + r" \\")
        if index in rules_after:
            lines.append(r"\midrule")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _best_marks(table: pd.DataFrame, group: str) -> pd.DataFrame:
    """True where a value is the (tied) highest of its column within its ``group`` index level."""
    best = table.groupby(level=group, sort=False).transform("max")
    return (table == best) & table.notna() & (best > 0)


def leaderboard_markdown(board: pd.DataFrame, budget: int, meta: dict | None = None, grid: bool = False) -> str:
    """``grid``: the policies include grid points of swept params (:func:`grid_points_as_policies`)."""
    at = budget_label(budget)
    lines = [
        f"# Leaderboard at {at} ({budget:,} bytes)",
        "",
        f"Mean over episodes (every mode pooled) at a {budget:,}-byte budget; policies ranked by F1@{at}. "
        "Util/KB = utility retained per 1024 bytes in use; Avg Staleness = mean steps from a retained "
        "step to the episode's last step."
        + (
            " Each grid point of the swept params is ranked as a policy of "
            "its own; Episodes counts episodes, not grid points."
            if grid
            else ""
        ),
        "",
    ]
    for track in dict.fromkeys(board["track"]):
        rows = board[board["track"] == track]
        lines += [f"## Track: {track}", ""]
        lines.append(
            markdown_table(
                ["Rank", "Policy", f"Recall@{at}", f"F1@{at}", "Util/KB", "Avg Staleness", "Episodes"],
                [
                    [
                        str(row.rank),
                        f"`{row.policy}`",
                        fmt_number(row.recall),
                        fmt_number(row.f1),
                        fmt_number(row.utility_per_kb, 2),
                        fmt_number(row.avg_staleness, 1),
                        str(row.episodes),
                    ]
                    for row in rows.itertuples()
                ],
                ["r", "l", "r", "r", "r", "r", "r"],
            )
        )
    if meta:
        lines += ["## Run", "", *metadata_lines(meta), ""]
    return "\n".join(lines)


def metadata_lines(meta: dict) -> list[str]:
    env = meta.get("environment", {})
    git = env.get("git") or {}
    episodes = meta.get("episodes", {})
    if episodes.get("source") == "generated":
        configs = episodes.get("configs", [])
        source = (
            f"generated ({episodes.get('generator', 'reference')} generator): "
            f"{episodes.get('n_episodes')} episodes x {configs[0]['steps'] if configs else '?'} steps per mode "
            f"({', '.join(config['mode'] for config in configs)}), seed {meta.get('seeds', {}).get('generator')}"
        )
    else:
        source = "files " + ", ".join(os.path.basename(entry["path"]) for entry in episodes.get("files", []))
    commit = (git.get("commit", "")[:12] + (" (uncommitted changes)" if git.get("dirty") else "")) if git else "none"
    return [
        f"- episodes: {source}",
        f"- budgets (bytes): {', '.join(f'{budget:,}' for budget in meta.get('budgets', []))}",
        f"- oracle: {meta.get('oracle')}",
        f"- wpbjax {env.get('wpbjax_version')}, git commit {commit}, jax {env.get('jax_version')}, "
        f"devices {', '.join(env.get('devices', []))}",
        f"- created {meta.get('created_utc')}",
    ]


def f1_table_markdown(table: pd.DataFrame, mode: str) -> str:
    best = _best_marks(table, "track")
    header = ["Track", "Policy"] + [budget_label(budget) for budget in table.columns]
    rows = []
    for (track, policy), values in table.iterrows():
        cells = [
            f"**{fmt_number(value)}**" if best.loc[(track, policy), budget] else fmt_number(value)
            for budget, value in values.items()
        ]
        rows.append([track, f"`{policy}`"] + cells)
    title = f"# Mean F1 by budget: mode `{mode}`\n\nMean over episodes; best per budget and track in bold.\n\n"
    return title + markdown_table(header, rows, ["l", "l"] + ["r"] * len(table.columns))


def f1_table_latex(table: pd.DataFrame, mode: str) -> str:
    best = _best_marks(table, "track")
    header = ["Track", "Policy"] + [budget_label(budget) for budget in table.columns]
    rows, rules = [], set()
    previous = None
    for index, ((track, policy), values) in enumerate(table.iterrows()):
        if previous is not None and track != previous:
            rules.add(index - 1)
        previous = track
        cells = [
            rf"\textbf{{{fmt_number(value)}}}" if best.loc[(track, policy), budget] else fmt_number(value)
            for budget, value in values.items()
        ]
        rows.append([_latex_escape(track), rf"\texttt{{{_latex_escape(policy)}}}"] + cells)
    caption = f"Mean F1 by byte budget, mode \\texttt{{{_latex_escape(mode)}}} (best per budget and track in bold)."
    return _latex(header, rows, "ll" + "r" * len(table.columns), caption, f"tab:f1-{slug(mode)}", rules)


def diagnostics_markdown(table: pd.DataFrame, budget: int) -> str:
    header = ["Track", "Mode", "Policy"] + [title for _, title in DIAGNOSTICS]
    rows = [
        [row["track"], row["mode"], f"`{row['policy']}`"]
        + [fmt_number(row[name], 2 if name == "avg_staleness" else 3) for name, _ in DIAGNOSTICS]
        for _, row in table.iterrows()
    ]
    title = (
        f"# Diagnostics at {budget_label(budget)} ({budget:,} bytes)\n\nMeans over episodes. Utilization = "
        "bytes in use / budget; write density = retained steps / steps; expire rate = EXPIRE / WRITE actions "
        "emitted; staleness in steps; drift coverage = retained critical steps / drift events.\n\n"
    )
    return title + markdown_table(header, rows, ["l", "l", "l"] + ["r"] * len(DIAGNOSTICS))


def diagnostics_latex(table: pd.DataFrame, budget: int) -> str:
    header = ["Track", "Mode", "Policy", "Util.", "Write dens.", "Expire rate", "Staleness", "Drift cov."]
    rows, rules, previous = [], set(), None
    for index, (_, row) in enumerate(table.iterrows()):
        key = (row["track"], row["mode"])
        if previous is not None and key != previous:
            rules.add(index - 1)
        previous = key
        rows.append(
            [_latex_escape(row["track"]), _latex_escape(row["mode"]), rf"\texttt{{{_latex_escape(row['policy'])}}}"]
            + [fmt_number(row[name], 2 if name == "avg_staleness" else 3) for name, _ in DIAGNOSTICS]
        )
    caption = f"Diagnostics at a {budget:,}-byte budget (means over episodes)."
    return _latex(header, rows, "lll" + "r" * len(DIAGNOSTICS), caption, "tab:diagnostics", rules)


def slug(text: str) -> str:
    return "".join(char if char.isalnum() or char in "-_" else "-" for char in text) or "unlabelled"
