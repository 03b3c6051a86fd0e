"""External stores scored with the union denominator (MEMAUDIT Definition 3).

Another memory system (Mem0, Letta, A-Mem, ...) wrote memories Y that are not the package's
candidates. Each memory comes with its own cost and an adjudicated coverage row over the package's
evidence units. Y is scored in the union package P+(Y): the package's groups plus one group per
memory (a memory is a write of its own, not a representation of one of the package's
experiences), so ``OPT_union(B)`` is the best feasible store over package candidates *and* the
system's memories, and ``ratio_to_union = F(Y') / OPT_union(B)`` for the store Y' scored. Rows:

- ``as_written``: all of Y, when its total cost fits the budget (else infeasible: value NaN);
- ``recency_pruned``: Y's memories newest first, each kept if it still fits (the artifact's
  deployable post-hoc pruning);
- ``upper_pruned``: the best subset of Y within the budget (exact; an analysis-only bound that
  separates extraction quality from budget-aware selection).

Store file (JSONL, one memory per line, the artifact's candidate fields): ``memory_id`` (or
``candidate_id``), ``cost`` (an int >= 0, ``{"total": n}`` or ``cost_tokens``), ``coverage``
(``{unit_id: a}`` or a list of ``{"unit_id": ..., "fidelity"|"coverage": a}`` over the package's
units), optional ``representation_type`` and ``time_index`` (default: line order; newer = larger).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pandas as pd

from wpbjax.episodes.validate import FLOAT32_MAX
from wpbjax.packages.io import (
    PackageFormatError,
    fail_at,
    read_cost,
    read_coverage,
    read_id,
    read_jsonl_rows,
    read_number,
)
from wpbjax.packages.model import (
    TIE,
    TIME_RANGE,
    PackageBatch,
    PackageSet,
    check_budgets,
    cost,
    kind_id,
    value,
    value_bound,
)

ROWS = ("as_written", "recency_pruned", "upper_pruned")
COLUMNS = [
    "package",
    "budget",
    "selection",
    "value",
    "cost",
    "memories",
    "package_opt",
    "union_opt",
    "ratio_to_union",
    "ratio_to_package",
    "store_value",
    "store_cost",
    "store_memories",
    "union_opt_certified_by",
]


@dataclasses.dataclass(frozen=True)
class ExternalStore:
    """M memories written by another system, aligned to one package's units."""

    memory_ids: tuple[str, ...]  # [M]
    cost: np.ndarray  # [M] int32
    coverage: np.ndarray  # [M, R] float64 (the package's unit order)
    kind: np.ndarray  # [M] int32 (KINDS id of representation_type; "other" if unknown)
    time: np.ndarray  # [M] int64 (newer = larger)
    source: str = "store"  # the file it was read from (errors name it)


def read_store(path: str | os.PathLike, unit_ids) -> ExternalStore:
    """Read an exported store (JSONL, see the module docstring) against a package's ``unit_ids``;
    cells on units outside the package add nothing to F and are dropped, as the package reader does.
    Malformed input raises :class:`wpbjax.packages.io.PackageFormatError` naming file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise PackageFormatError(f"{os.fspath(path)}: no such store file")
    units = {str(unit): index for index, unit in enumerate(unit_ids)}
    ids, costs, rows, kinds, times = [], [], [], [], []
    for line, record in read_jsonl_rows(path):
        memory_id = record.get("memory_id", record.get("candidate_id"))
        if memory_id is None:
            fail_at(path, line, "field 'memory_id' (or 'candidate_id'): missing")
        memory_id = read_id(memory_id, path, line, "memory_id")
        if memory_id in ids:
            fail_at(path, line, f"field 'memory_id': duplicate {memory_id!r}")
        if "coverage" not in record:
            fail_at(path, line, "field 'coverage': missing (the memory's adjudicated coverage row)")
        row = np.zeros(len(units))
        for unit, amount in read_coverage(record["coverage"], path, line).items():
            if unit in units:
                row[units[unit]] = amount
        ids.append(memory_id)
        costs.append(read_cost(record, path, line))
        rows.append(row)
        kinds.append(kind_id(str(record.get("representation_type", "other"))))
        times.append(
            read_number(record.get("time_index", len(times)), path, line, "time_index", TIME_RANGE, integer=True)
        )
    if not ids:
        fail_at(path, 0, "no memories")
    return ExternalStore(
        tuple(ids),
        np.asarray(costs, np.int32),
        np.asarray(rows, np.float64),
        np.asarray(kinds, np.int32),
        np.asarray(times, np.int64),
        os.fspath(path),
    )


def union_batch(batch: PackageBatch, store: ExternalStore) -> tuple[PackageBatch, np.ndarray]:
    """One package (``batch`` with P = 1) plus one group per memory, appended after its groups:
    ``(union batch [1, G + M, C, R], external [1, G + M, C] bool marking the memories)``."""
    if batch.cost.shape[0] != 1:
        raise ValueError("union_batch takes one package (P = 1)")
    _, n_groups, n_cand, n_units = batch.shape
    m = len(store.memory_ids)

    def extra(fill, dtype, tail=()):
        return np.full((1, m, n_cand) + tail, fill, dtype)

    cost_x, valid_x, kind_x = extra(0, np.int32), extra(False, bool), extra(-1, np.int32)
    coverage_x, rank_x, time_x = extra(0.0, np.float64, (n_units,)), extra(-1, np.int32), extra(0, np.int32)
    cost_x[0, :, 0], valid_x[0, :, 0], kind_x[0, :, 0] = store.cost, True, store.kind
    coverage_x[0, :, 0] = store.coverage
    n_ranked = int(np.asarray(batch.rank).max(initial=-1)) + 1
    rank_x[0, :, 0] = n_ranked + np.arange(m)
    time_x[0, :, 0] = int(np.asarray(batch.time).max(initial=0)) + 1 + store.time - store.time.min(initial=0)

    def join(a, b):
        return np.concatenate([np.asarray(a), b], axis=1)

    union = dataclasses.replace(
        batch,
        cost=join(batch.cost, cost_x),
        valid=join(batch.valid, valid_x),
        kind=join(batch.kind, kind_x),
        coverage=join(batch.coverage, coverage_x),
        rank=join(batch.rank, rank_x),
        time=join(batch.time, time_x),
    )
    external = np.zeros((1, n_groups + m, n_cand), bool)
    external[0, n_groups:, 0] = True
    return union, external


def recency_pruned(store: ExternalStore, budget: int) -> np.ndarray:
    """Memories kept by newest-first pruning (the artifact's select_recency_pruned): ``[M] bool``."""
    keep = np.zeros(len(store.memory_ids), bool)
    used = 0
    for index in sorted(range(len(keep)), key=lambda i: -store.time[i]):  # stable: ties keep file order
        if used + store.cost[index] <= budget:
            keep[index] = True
            used += int(store.cost[index])
    return keep


def _ratio(values, optimum):
    """value / OPT, 1 where both are 0 (the sweep's convention), NaN for an infeasible selection."""
    zero = np.abs(optimum) <= TIE
    return np.where(np.isnan(values), np.nan, np.where(zero, 1.0, values / np.where(zero, 1.0, optimum)))


def score_store(pset: PackageSet, store: ExternalStore, budgets, h: str = "min") -> pd.DataFrame:
    """One row per (budget, selection in ROWS): F of the selection, OPT of the package and of the union
    (certified exact by ``wpbjax.packages.opt.solve``), both ratios, and the whole store's value and cost."""
    from wpbjax.packages.opt import solve

    budgets = check_budgets(budgets)
    batch = pset.batch
    union, external = union_batch(batch, store)
    worth = float(value_bound(union)[0])
    if not worth <= FLOAT32_MAX:
        raise PackageFormatError(
            f"{store.source}: the package's unit weights times its and the store's coverage sum "
            f"to {worth:.4g}, past float32 range ({FLOAT32_MAX:.4g}): a store's value would overflow"
        )
    n_groups = batch.cost.shape[1]
    package_opt = solve(batch, budgets, h).value[0]
    union_result = solve(union, budgets, h)
    upper = solve(union.only_kinds(external), budgets, h)
    everything = np.full((1, union.cost.shape[1]), -1, np.int32)
    everything[0, n_groups:] = 0
    store_value, store_cost = float(value(union, everything, h)[0]), int(cost(union, everything)[0])
    name = pset.meta.package_ids[0] if pset.meta.package_ids else "package"
    rows = []
    for b, budget in enumerate(budgets):
        pruned = np.full_like(everything, -1)
        pruned[0, n_groups:] = np.where(recency_pruned(store, budget), 0, -1)
        selections = {
            "as_written": everything if store_cost <= budget else None,
            "recency_pruned": pruned,
            "upper_pruned": upper.chosen[:, b],
        }
        for selection in ROWS:
            chosen = selections[selection]
            picked = np.nan if chosen is None else float(value(union, chosen, h)[0])
            rows.append(
                {
                    "package": name,
                    "budget": budget,
                    "selection": selection,
                    "value": picked,
                    "cost": np.nan if chosen is None else int(cost(union, chosen)[0]),
                    "memories": 0 if chosen is None else int((chosen[0] >= 0).sum()),
                    "package_opt": float(package_opt[b]),
                    "union_opt": float(union_result.value[0, b]),
                    "store_value": store_value,
                    "store_cost": store_cost,
                    "store_memories": len(store.memory_ids),
                    "union_opt_certified_by": str(union_result.method[0, b]),
                }
            )
    table = pd.DataFrame(rows)
    table["ratio_to_union"] = _ratio(table["value"].to_numpy(), table["union_opt"].to_numpy())
    table["ratio_to_package"] = _ratio(table["value"].to_numpy(), table["package_opt"].to_numpy())
    return table[COLUMNS]
