"""Results rows: one policy's counts on a chunk of episodes, scored (:mod:`wpbjax.scoring.metrics`) and laid
out as the results table's columns; the leaderboard read from such tables.

The table has the published harness's columns (``PUBLISHED_COLUMNS``), ``merge_actions`` and the
exact confusion counts ``tp, fp, fn, tn`` (retained W vs critical R steps, docs/reports.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wpbjax.scoring import integrity, reads
from wpbjax.scoring.metrics import policy_utility, score

PUBLISHED_COLUMNS = (
    "avg_staleness",
    "budget_bytes",
    "bytes_used",
    "drift_coverage",
    "episode_id",
    "expire_actions",
    "expire_rate",
    "f1",
    "mode",
    "oracle_utility",
    "policy",
    "policy_utility",
    "precision",
    "recall",
    "regret",
    "regret_write_only",
    "track",
    "utility_per_kb",
    "utilization",
    "write_actions",
    "write_density",
)
# Retained (W) vs critical (R) steps as exact counts, for confusion matrices (docs/reports.md):
# tp = |W∩R|, fp = |W|-|W∩R|, fn = |R|-|W∩R|, tn = steps neither retained nor critical.
CONFUSION_COLUMNS = ("tp", "fp", "fn", "tn")
# + write integrity (docs/integrity.md; blank where undefined)
COLUMNS = PUBLISHED_COLUMNS + ("merge_actions",) + CONFUSION_COLUMNS + integrity.COLUMNS
# + reads (docs/reads.md): one row per K (``top_k``); blank where the episode has no probes
COLUMNS = COLUMNS + reads.READ_COLUMNS
# Columns that order rows within a sweep and are dropped before writing: episode set, budget
# number, episode number, (track, policy) number, param grid point.
ORDER_COLUMNS = ("_set", "_budget", "_episode", "_order", "_point")


def confusion_counts(host: dict, critical: np.ndarray, valid: np.ndarray, n_critical: np.ndarray) -> dict:
    """tp/fp/fn/tn per run ([n, B] int64) from the counts; ``critical``, ``valid``: [n, T] bool;
    ``n_critical``: [n] |R| (labels, so a critical t that names no step counts as a miss).
    W lies within the steps, so tn = steps − |W| − (critical steps − |W∩R|)."""
    n_hit, n_retained = host["n_hit"].astype(np.int64), host["n_retained"].astype(np.int64)
    n_steps = valid.sum(axis=-1, dtype=np.int64)[:, None]
    critical_steps = (critical & valid).sum(axis=-1, dtype=np.int64)[:, None]
    return {
        "tp": n_hit,
        "fp": n_retained - n_hit,
        "fn": n_critical.astype(np.int64)[:, None] - n_hit,
        "tn": n_steps - n_retained - (critical_steps - n_hit),
    }


def score_runs(encoded, episodes: np.ndarray, budgets: np.ndarray, host: dict, oracle_utility: np.ndarray) -> dict:
    """The metric columns (published metrics, ``merge_actions``, confusion counts), each [n, B], of the
    runs whose counts ``host`` holds as numpy arrays ([n, B, ...], :class:`wpbjax.scoring.metrics.Counts`
    fields) on episodes ``episodes`` ([n] indices into ``encoded``); ``oracle_utility``: [n, B]."""
    arrays = encoded.arrays
    utility = policy_utility(host["retained"], encoded.utility64[episodes][:, None, :])
    columns = score(
        host,
        utility,
        oracle_utility,
        encoded.n_critical[episodes][:, None],
        encoded.total_drift_events[episodes][:, None],
        arrays.length[episodes][:, None],
        budgets[None, :],
    )
    columns.update(
        confusion_counts(host, arrays.critical[episodes], arrays.valid[episodes], encoded.n_critical[episodes])
    )
    columns.update(integrity.columns(host, arrays, episodes, host["n_retained"]))
    columns["merge_actions"] = host["merge_actions"].astype(np.int64)
    shape = (len(episodes), len(budgets))
    return {name: np.broadcast_to(value, shape) for name, value in columns.items()}


def score_rows(
    encoded,
    episodes: np.ndarray,
    budgets: np.ndarray,
    host: dict,
    oracle_utility: np.ndarray,
    track: str,
    name: str,
    set_index: np.ndarray,
    order: int,
    read_columns: dict,
) -> dict:
    """:func:`score_runs` as results rows, one per (episode, budget, K), episode-major, with the
    identifying columns and the row-order columns, as flat column arrays (name -> [n * B * nK]; a
    sweep joins a chunk's parts and makes one table of them); ``order``: the (track, policy) number;
    ``read_columns``: the read metrics ([n, B, nK], :func:`wpbjax.scoring.reads.read_metrics`)."""
    columns = score_runs(encoded, episodes, budgets, host, oracle_utility)
    n, n_budgets = len(episodes), len(budgets)
    episode_axis = np.broadcast_to(episodes[:, None], (n, n_budgets))
    columns.update(
        budget_bytes=budgets[None, :],
        episode_id=np.asarray(encoded.episode_id, object)[episode_axis],
        mode=np.asarray(encoded.mode, object)[episode_axis],
        policy=name,
        track=track,
        _set=set_index[episode_axis],
        _budget=np.arange(n_budgets)[None, :],
        _episode=episode_axis,
        _order=order,
    )
    shape = (n, n_budgets, read_columns["top_k"].shape[-1])
    rows = {
        key: np.broadcast_to(np.broadcast_to(value, shape[:2])[..., None], shape).ravel()
        for key, value in columns.items()
    }
    rows.update({key: np.broadcast_to(value, shape).ravel() for key, value in read_columns.items()})
    return rows


def board_keys(columns) -> list[str]:
    """The leaderboard keys of a results table with ``columns``, less track and policy: the budget, a tiered
    sweep's journal budget and each swept param (a grid point is a policy setting of its own, never more
    episodes)."""
    journal = ["journal_budget_bytes"] if "journal_budget_bytes" in columns else []
    return ["budget_bytes", *journal, *(column for column in columns if column.startswith("param_"))]


def board_metric(columns) -> str:
    """What a leaderboard averages: F1, or a tiered sweep's history coverage (its rows have no F1)."""
    return "f1" if "f1" in columns else "history_coverage"


def _keys(table: pd.DataFrame) -> list[str]:
    return ["track", "policy", *board_keys(table.columns)]


def _total(sums: list[pd.DataFrame]) -> pd.DataFrame:
    frame = pd.concat(sums)
    return frame.groupby(level=list(range(frame.index.nlevels)), sort=False, dropna=False).sum()


def leaderboard_from_sums(sums: list[pd.DataFrame]) -> pd.DataFrame:
    """The leaderboard (mean F1: rows track, policy and each swept param; columns budgets) from
    per-chunk sums (:func:`leaderboard_sums`)."""
    total = _total(sums)
    board = (total["sum"] / total["count"]).unstack("budget_bytes")
    order = total.index.droplevel("budget_bytes").unique()  # first-seen order, as in the table
    return board.reindex(order)[sorted(board.columns)]


def leaderboard_sums(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """One ``(track, policy, budget_bytes, param_...)`` -> ``sum``, ``count`` (of f1; of history_coverage in a
    tiered sweep) frame from result chunks and/or earlier such frames, in first-seen order (running totals: a
    few rows, whatever the sweep)."""
    sums = [
        part
        if "sum" in part
        else part.groupby(_keys(part), sort=False, dropna=False)[board_metric(part.columns)].agg(["sum", "count"])
        for part in parts
    ]
    return _total(sums)


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Mean F1 by (track, policy) × budget, rows in the table's order."""
    board = table.pivot_table(index=["track", "policy"], columns="budget_bytes", values="f1", aggfunc="mean")
    return board.reindex(pd.MultiIndex.from_frame(table[["track", "policy"]].drop_duplicates()))
