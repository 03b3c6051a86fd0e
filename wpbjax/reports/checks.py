"""``wpbjax report`` trusts nothing: a results table is checked against its sidecar and against
itself before any number is reported.

* Against the sidecar (written by the sweep after the table was complete): the row count, the
  table's SHA-256, the budgets and the (track, policy) line-up. A table cut by a kill or a full
  disk, edited, or paired with another run's sidecar fails here.
* Against itself (with or without a sidecar): no row twice, and a rectangular grid (every
  track, policy and swept-param point has the same budgets, and as many rows at each budget), which
  a table missing the end of a chunk or glued from two runs does not have.

Each failure is one ValueError naming the file (the CLI prints it as one line, exit status 2); one
that suggests a resumed sweep is an ArgumentError, naming ``resume`` as the caller spells it.
"""

from __future__ import annotations

import os

import pandas as pd

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.files.results_io import sha256

RERUN = f"rerun the sweep (or finish it with the {arg('resume')} option)"


def check_table(path: str | os.PathLike, results: pd.DataFrame, meta: dict | None, meta_path: str | None) -> None:
    """Raise ValueError (naming ``path``) unless ``results`` (read from ``path``) is complete and
    consistent with its sidecar ``meta`` (read from ``meta_path``; None: no sidecar)."""
    path = os.fspath(path)
    if meta is not None:
        check_against_sidecar(path, results, meta, meta_path)
    check_grid(path, results)


def check_against_sidecar(path: str, results: pd.DataFrame, meta: dict, meta_path: str) -> None:
    recorded = meta.get("results") or {}
    rows = recorded.get("rows", meta.get("rows"))
    if rows is not None and len(results) != rows:
        raise ArgumentError(
            f"{path}: {len(results):,} rows, but its sidecar {meta_path} records {rows:,}: "
            f"an incomplete or different table; {RERUN}"
        )
    if recorded.get("sha256") and sha256(path) != recorded["sha256"]:
        raise ArgumentError(
            f"{path}: its bytes differ from the table its sidecar {meta_path} describes (SHA-256 "
            f"mismatch): changed or cut after the sweep; {RERUN}"
        )
    if "budget_bytes" in results and meta.get("budgets"):
        budgets = sorted(int(budget) for budget in results["budget_bytes"].unique())
        if budgets != sorted(int(budget) for budget in meta["budgets"]):
            raise ValueError(f"{path}: budgets {budgets} but its sidecar {meta_path} records {sorted(meta['budgets'])}")
    if {"track", "policy"} <= set(results) and isinstance(meta.get("tracks"), dict):
        lineup = {(track, policy) for track, policies in meta["tracks"].items() for policy in policies}
        present = set(zip(results["track"], results["policy"]))
        if present != lineup:
            extra, missing = sorted(present - lineup), sorted(lineup - present)
            raise ValueError(
                f"{path}: track/policy runs differ from its sidecar {meta_path}"
                + (f"; not in the sidecar: {_pairs(extra)}" if extra else "")
                + (f"; missing: {_pairs(missing)}" if missing else "")
            )


def _pairs(pairs) -> str:
    shown = ", ".join(f"{track} {policy}" for track, policy in pairs[:4])
    return shown + (f" and {len(pairs) - 4} more" if len(pairs) > 4 else "")


def check_grid(path: str, results: pd.DataFrame) -> None:
    """No duplicate rows; the same budgets for every run, and the same row count at each (policy
    sweep tables; a package sweep's table has its own checks)."""
    if not {"track", "policy", "budget_bytes", "episode_id"} <= set(results):
        return
    duplicated = results.duplicated()
    if duplicated.any():
        first = results[duplicated].iloc[0]
        where = ", ".join(
            f"{column} {first[column]}"
            for column in ("mode", "episode_id", "budget_bytes", "track", "policy")
            if column in results
        )
        raise ArgumentError(f"{path}: {int(duplicated.sum()):,} duplicate rows (the first: {where}); {RERUN}")
    runs = ["track", "policy"] + sorted(column for column in results if column.startswith("param_"))
    counts = results.groupby(runs + ["budget_bytes"], dropna=False, sort=False).size()
    budgets_per_run = counts.groupby(level=list(range(len(runs))), dropna=False, sort=False).size()
    n_budgets = results["budget_bytes"].nunique()
    if (budgets_per_run != n_budgets).any():
        run = budgets_per_run[budgets_per_run != n_budgets].index[0]
        raise ArgumentError(
            f"{path}: {_label(run)} ran {budgets_per_run[run]} of the table's {n_budgets} budgets: "
            f"an incomplete or merged table; {RERUN}"
        )
    if counts.nunique() > 1:
        usual = counts.mode().iloc[0]
        odd = counts[counts != usual].index[0]
        raise ArgumentError(
            f"{path}: {_label(odd[:-1])} at budget {odd[-1]} has {counts[odd]:,} rows where the other "
            f"runs have {usual:,}: an incomplete or merged table; {RERUN}"
        )


def _label(run) -> str:
    run = run if isinstance(run, tuple) else (run,)
    return " ".join(str(part) for part in run if not (isinstance(part, float) and part != part))
