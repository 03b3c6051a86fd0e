"""Package sweeps: one row per (distribution, seed, budget, method), scored exactly against OPT.

from wpbjax.packages import sweeps
table = sweeps.run_distribution("memaudit_small", seeds=range(500), budgets=[1, 2, 4, 8, 16])
sweeps.summary(table)          # mean ratio by method x budget with 95% bootstrap intervals
"""

from __future__ import annotations

import concurrent.futures
import os
import time

import numpy as np
import pandas as pd

from wpbjax.common.argument_errors import ArgumentError, arg, refuse_repeats
from wpbjax.packages import opt as opt_mod, writers
from wpbjax.packages.catalog import EXACT, LEARNED_PREFIX, METHODS, PAPER_METHODS
from wpbjax.packages.model import (
    TIE,
    TOMBSTONE_KINDS,
    PackageSet,
    check_budgets,
    check_feasible,
    cost,
    invalidation_covered,
    kind_mask,
    value,
)

COLUMNS = [
    "distribution",
    "package",
    "seed",
    "budget",
    "method",
    "value",
    "opt",
    "ratio",
    "cost",
    "invalidation_covered",
    "opt_certified_by",
]
# Bytes per row of a sweep's table (one row per package x budget x method), on disk and of peak host memory
# while the table is built and written: upper bounds of what memaudit_small's sweeps measured
# (docs/performance.md, "Figures behind choices in the code"). Size checks use these up front.
ROW_BYTES = (130, 30)  # (CSV, parquet) on disk
ROW_MEMORY_BYTES = 500  # host memory


def check_methods(methods) -> list[str]:
    """Known method names (or learned:PATH of an existing file), none repeated."""
    methods = list(methods)
    refuse_repeats(arg("methods"), methods, ArgumentError)
    unknown = [m for m in methods if m not in METHODS and not m.startswith(LEARNED_PREFIX)]
    if unknown:
        raise ValueError(
            f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)} "
            f"or {LEARNED_PREFIX}PATH (a writer from `wpbjax packages train`)"
        )
    for method in methods:
        if method.startswith(LEARNED_PREFIX) and not os.path.isfile(method[len(LEARNED_PREFIX) :]):
            raise ValueError(f"method {method}: no such learned writer file {method[len(LEARNED_PREFIX) :]!r}")
    return methods


def ratio(values: np.ndarray, optimum: np.ndarray) -> np.ndarray:
    """value / OPT; 1 where both are 0 (the artifact's safe ratio)."""
    zero = np.abs(optimum) <= TIE
    return np.where(zero, 1.0, values / np.where(zero, 1.0, optimum))


def _store(method: str, pset: PackageSet, budgets, h: str, verify: str | None):
    """One method's stores: (batch it chose from, chosen [P, B, G], certified_by or None)."""
    batch = pset.batch
    if method in EXACT:
        if method == "no_tombstone_opt":
            batch = batch.only_kinds(~kind_mask(batch.kind, TOMBSTONE_KINDS))
        result = opt_mod.solve(batch, budgets, h, verify=verify)
        return batch, result.chosen, result.method
    if method.startswith(LEARNED_PREFIX):
        from wpbjax.packages import learned

        return (*learned.write(method[len(LEARNED_PREFIX) :], batch, budgets, h), None)
    return (*writers.write(method, batch, budgets, h, reservoir_key=pset.reservoir_key), None)


def stores(
    pset: PackageSet,
    budgets,
    methods,
    h: str = "min",
    verify: str | None = None,
    opt_result: opt_mod.OptResult | None = None,
) -> dict:
    """Every method's stores: {method: (batch it chose from, chosen [P, B, G], certified_by or None)}.

    Methods run on a thread per core: XLA compiles and runs, and numpy enumerates, without the
    GIL, so the exact optima overlap the writers' compilation (docs/performance.md)."""
    todo = [m for m in dict.fromkeys(["opt", *methods]) if not (m == "opt" and opt_result is not None)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        futures = {m: pool.submit(_store, m, pset, budgets, h, verify) for m in todo}
        out = {m: future.result() for m, future in futures.items()}
    if opt_result is not None:
        out["opt"] = (pset.batch, opt_result.chosen, opt_result.method)
    return out


def score(pset: PackageSet, budgets, methods, store_map: dict, h: str = "min", distribution: str = "") -> pd.DataFrame:
    """The rows of every (package, budget, method), package-major like the artifact."""
    budgets = [int(b) for b in budgets]
    n_pkg = pset.batch.cost.shape[0]
    opt_batch, opt_chosen, certified = store_map["opt"]
    optimum = np.stack([value(opt_batch, opt_chosen[:, b], h) for b in range(len(budgets))], 1)  # [P, B]
    frames = []
    for method in methods:
        batch, chosen, _ = store_map[method]
        for b, budget in enumerate(budgets):
            check_feasible(batch, chosen[:, b], budget)
            values = value(batch, chosen[:, b], h)
            if np.any(values > optimum[:, b] + 1e-9):
                raise AssertionError(f"{method} beats the certified OPT at budget {budget}: OPT is wrong")
            frames.append(
                pd.DataFrame(
                    {
                        "package_index": np.arange(n_pkg),
                        "budget": budget,
                        "method": method,
                        "value": values,
                        "opt": optimum[:, b],
                        "ratio": ratio(values, optimum[:, b]),
                        "cost": cost(batch, chosen[:, b]),
                        "invalidation_covered": invalidation_covered(batch, chosen[:, b]),
                        "opt_certified_by": certified[:, b],
                    }
                )
            )
    table = pd.concat(frames, ignore_index=True)
    order = {m: i for i, m in enumerate(methods)}
    table = table.sort_values(
        ["package_index", "budget", "method"],
        key=lambda col: col.map(order) if col.name == "method" else col,
        kind="stable",
    ).reset_index(drop=True)
    meta, index = pset.meta, table.pop("package_index").to_numpy()
    seeds = np.array([-1 if x is None else x for x in meta.seeds] if len(meta.seeds) == n_pkg else [-1] * n_pkg)
    names = np.array(
        meta.package_ids if len(meta.package_ids) == n_pkg else [f"{distribution}_{i}" for i in range(n_pkg)]
    )
    table.insert(0, "seed", seeds[index])
    table.insert(0, "package", names[index])
    table.insert(0, "distribution", distribution)
    return table[COLUMNS]


def run(
    pset: PackageSet, budgets, methods=PAPER_METHODS, h: str = "min", distribution: str = "", verify: str | None = None
) -> pd.DataFrame:
    """Rows of a package set: every method's store scored by F and by the certified OPT. Budgets,
    methods and package ids must not repeat (a repeat would give duplicate rows)."""
    methods, budgets = check_methods(methods), check_budgets(budgets)
    if pset.meta.package_ids:
        refuse_repeats("package ids", pset.meta.package_ids)
    store_map = stores(pset, budgets, methods, h, verify)
    return score(pset, budgets, methods, store_map, h, distribution)


def run_distribution(
    distribution: str,
    seeds,
    budgets,
    methods=PAPER_METHODS,
    h: str = "min",
    normal_count: int = 3,
    update_count: int = 2,
    verify: str | None = None,
    chunk: int = 2000,
    progress=None,
) -> pd.DataFrame:
    """Generate and sweep a named distribution (memaudit_small or a stress one) in chunks of seeds."""
    from wpbjax.packages.distributions import generate

    seeds = [int(s) for s in seeds]
    check_methods(methods)  # before any package is made
    check_budgets(budgets)
    refuse_repeats(arg("seeds"), seeds, ArgumentError)
    frames, start_time = [], time.perf_counter()
    for start in range(0, len(seeds), chunk):
        part = seeds[start : start + chunk]
        pset = generate(distribution, part, normal_count=normal_count, update_count=update_count)
        frames.append(run(pset, budgets, methods, h, distribution, verify))
        if progress is not None:
            progress(start + len(part), len(seeds), time.perf_counter() - start_time)
    return pd.concat(frames, ignore_index=True)


def bootstrap_interval(samples: np.ndarray, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean."""
    samples = np.asarray(samples, np.float64)
    if len(samples) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = samples[rng.integers(0, len(samples), (n_boot, len(samples)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def summary(table: pd.DataFrame, n_boot: int = 1000) -> pd.DataFrame:
    """Mean ratio (and mean value, OPT) by distribution x method x budget, with 95% bootstrap intervals."""
    rows = []
    for (dist, method, budget), part in table.groupby(["distribution", "method", "budget"], sort=False):
        low, high = bootstrap_interval(part["ratio"].to_numpy(), n_boot)
        rows.append(
            {
                "distribution": dist,
                "method": method,
                "budget": budget,
                "n": len(part),
                "mean_ratio": part["ratio"].mean(),
                "ci_low": low,
                "ci_high": high,
                "mean_value": part["value"].mean(),
                "mean_opt": part["opt"].mean(),
                "mean_invalidation_covered": part["invalidation_covered"].mean(),
            }
        )
    return pd.DataFrame(rows)


def ratio_table(table: pd.DataFrame, intervals: bool = True) -> str:
    """The summary as text: one line per (distribution, method), one column per budget."""
    summ = summary(table, n_boot=1000 if intervals else 1)
    budgets = sorted(summ["budget"].unique())
    lines = []
    for dist, part in summ.groupby("distribution", sort=False):
        lines.append(
            f"{dist}: mean ratio to OPT"
            + (" [95% bootstrap]" if intervals else "")
            + f" over {int(part['n'].iloc[0])} packages"
        )
        width = 26 if intervals else 8
        lines.append(f"  {'method':<20}" + "".join(f"{'B=' + str(b):>{width}}" for b in budgets))
        for method, rows in part.groupby("method", sort=False):
            cells = []
            for b in budgets:
                row = rows[rows["budget"] == b]
                if row.empty:
                    cells.append(f"{'':>{width}}")
                elif intervals:
                    r = row.iloc[0]
                    cells.append(f"{r.mean_ratio:>8.4f} [{r.ci_low:.4f},{r.ci_high:.4f}]".rjust(width))
                else:
                    cells.append(f"{row.iloc[0].mean_ratio:>{width}.4f}")
            lines.append(f"  {method:<20}" + "".join(cells))
    return "\n".join(lines)
