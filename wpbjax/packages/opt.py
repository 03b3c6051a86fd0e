"""Certified exact optima OPT(B) of a package batch, and which method certified each one.

* ``brute_force``: every assignment (skip or one candidate per group) at once. When every package
  of the batch has the same candidates and coverage (memaudit_small: only weights and costs move
  with the seed) one coverage-total matrix [A, R] serves every package. Certified by enumeration.
* ``branch_and_bound`` (host, one package and budget at a time, wpbjax.packages.bnb): depth-first
  over groups with an admissible bound. Certified when the search completes.
* ``milp``: ``scipy.optimize.milp`` (HiGHS) on x_u binary, y_r <= 1, y_r <= sum_u a_ur x_u,
  sum_u c_u x_u <= B, sum_{u in G} x_u <= 1 (h = min only); a cross-check, or the certificate
  where branch and bound gives up. Its store is re-scored exactly.

Ties: among stores within 1e-12 of the best value the cheapest wins, then the first in the
artifact's search order (``exact_solve``: skip first, then candidates by falling singleton value,
cost, id), so brute force picks the artifact's store. A value is never a heuristic's: where no
method certifies it, ``solve`` raises ``OptNotCertified``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from wpbjax.packages.model import TIE, PackageBatch, coverage_totals, h_function, value_from_totals

BRUTE_FORCE_LIMIT = 300_000   # assignments per package enumerated at once
_CHUNK_CELLS = 4_000_000      # packages x assignments per chunk (memory)


class OptNotCertified(RuntimeError):
    """No exact method certified a package's optimum (too large for enumeration, search gave up)."""


@dataclasses.dataclass(frozen=True)
class OptResult:
    value: np.ndarray    # [P, B] float64  F of the optimal store
    chosen: np.ndarray   # [P, B, G] int32 the optimal store (candidate per group, -1 none)
    method: np.ndarray   # [P, B] object   "brute_force" | "branch_and_bound" | "milp"


def n_options(batch: PackageBatch) -> np.ndarray:
    """Options per group (skip + candidates), the most over the batch: [G] int64."""
    return np.asarray(batch.valid).sum(axis=2).max(axis=0).astype(np.int64) + 1


def assignment_count(batch: PackageBatch) -> int:
    return int(np.prod(n_options(batch), dtype=np.float64))


def assignments(options: np.ndarray) -> np.ndarray:
    """All assignments in itertools.product order: [A, G] int32, -1 = skip, else candidate index."""
    grids = np.meshgrid(*[np.arange(n) - 1 for n in options], indexing="ij")
    return np.stack([grid.reshape(-1) for grid in grids], axis=1).astype(np.int32)


def singleton_values(batch: PackageBatch, h: str = "min") -> np.ndarray:
    """F({u}) per candidate: [P, G, C] float64 (as the artifact's objective_value([u]))."""
    return value_from_totals(batch.weight[:, None, None, :], batch.coverage, h)


def search_position(batch: PackageBatch, h: str = "min") -> np.ndarray:
    """Each option's place in the artifact's exact_solve order: [P, G, C] int (skip is 0)."""
    single = singleton_values(batch, h)
    big = np.iinfo(np.int32).max
    key_cost = np.where(batch.valid, batch.cost, big)
    key_rank = np.where(batch.valid, batch.rank, big)
    order = np.lexsort((key_rank, key_cost, np.where(batch.valid, -single, np.inf)), axis=-1)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(order.shape[-1])[None, None, :] + 1, axis=-1)
    return position


def _shared_structure(batch: PackageBatch) -> bool:
    return bool(np.array_equal(np.broadcast_to(batch.coverage[:1], batch.coverage.shape), batch.coverage)
                and np.array_equal(np.broadcast_to(batch.valid[:1], batch.valid.shape), batch.valid))


def _pick(values, costs, order_key, budgets, prefix):
    """Per package and budget the tie-broken best feasible assignment: [P, B] indices into A
    (budget b looks only at the first ``prefix[b]`` assignments, the others cost more)."""
    best = np.empty((values.shape[0], len(budgets)), np.int64)
    for b, budget in enumerate(budgets):
        values_b, costs_b, order_b = (a[:, :prefix[b]] for a in (values, costs, order_key))
        feasible = costs_b <= budget
        top = np.where(feasible, values_b, -np.inf).max(axis=1, keepdims=True)
        near = feasible & (values_b >= top - TIE)
        cheapest = np.where(near, costs_b, np.inf).min(axis=1, keepdims=True)
        final = near & (costs_b == cheapest)
        best[:, b] = np.argmin(np.where(final, order_b, np.inf), axis=1)
    return best


def brute_force(batch: PackageBatch, budgets, h: str = "min") -> OptResult:
    """Exact OPT by enumerating every assignment (vectorized over packages and assignments).

    The search ranks assignments with matrix products (fast, rounding ~1e-15, well inside the
    1e-12 tie window); the reported value is the chosen store re-scored in the artifact's order.
    """
    budgets = [int(b) for b in budgets]
    options = n_options(batch)
    if np.prod(options, dtype=np.float64) > BRUTE_FORCE_LIMIT:
        raise OptNotCertified(f"{int(np.prod(options, dtype=np.float64))} assignments exceed the "
                              f"brute-force limit {BRUTE_FORCE_LIMIT}")
    n_pkg, n_groups, n_cand = batch.cost.shape
    table = assignments(options)                                      # [A, G]
    onehot = _onehot(table, n_cand)                                   # [A, G*C] float64
    # Only assignments some package can afford within the largest budget, cheapest first, so
    # each budget scans a prefix (most of the 36,864 memaudit_small assignments cost > 16).
    min_cost = onehot @ np.where(batch.valid, batch.cost, 0).min(axis=0).reshape(-1).astype(np.float64)
    affordable = np.flatnonzero(min_cost <= max(budgets))
    by_cost = affordable[np.argsort(min_cost[affordable], kind="stable")]
    table, onehot, min_cost = table[by_cost], onehot[by_cost], min_cost[by_cost]
    prefix = [int(np.searchsorted(min_cost, budget, "right")) for budget in budgets]
    radix = np.cumprod(np.concatenate([options[1:], [1]])[::-1])[::-1]
    order_weight = (search_position(batch, h) * radix[None, :, None]).reshape(n_pkg, -1).astype(np.float64)
    hfun = h_function(h)
    shared_sat = hfun(onehot @ batch.coverage[0].reshape(-1, batch.weight.shape[1])) \
        if _shared_structure(batch) else None                         # [A, R]
    chunk = max(1, _CHUNK_CELLS // max(1, len(table)))
    chosen = np.empty((n_pkg, len(budgets), n_groups), np.int32)
    for start in range(0, n_pkg, chunk):
        rows = slice(start, min(n_pkg, start + chunk))
        if shared_sat is not None:
            values = batch.weight[rows] @ shared_sat.T                # [p, A]
        else:
            cov = batch.coverage[rows].reshape(rows.stop - start, -1, batch.weight.shape[1])
            values = np.einsum("par,pr->pa", hfun(np.einsum("ak,pkr->par", onehot, cov)), batch.weight[rows])
        costs = np.rint(batch.cost[rows].reshape(rows.stop - start, -1).astype(np.float64) @ onehot.T)
        order_key = np.rint(order_weight[rows] @ onehot.T)
        chosen[rows] = table[_pick(values, costs, order_key, budgets, prefix)]
    value = np.stack([rescore(batch, chosen[:, b], h) for b in range(len(budgets))], axis=1)
    return OptResult(value, chosen, np.full(value.shape, "brute_force", dtype=object))


def _onehot(table: np.ndarray, n_cand: int) -> np.ndarray:
    """[A, G] assignments -> [A, G*C] float64 indicator of the picked candidates."""
    n_assign, n_groups = table.shape
    onehot = np.zeros((n_assign, n_groups, n_cand))
    a_idx, g_idx = np.nonzero(table >= 0)
    onehot[a_idx, g_idx, table[a_idx, g_idx]] = 1.0
    return onehot.reshape(n_assign, -1)


def solve(batch: PackageBatch, budgets, h: str = "min", verify: str | None = None,
          node_limit: int = 200_000) -> OptResult:
    """Certified OPT for every package and budget: brute force where small, else branch and bound
    (then MILP where the search gives up). ``verify="milp"`` cross-checks every cell against the
    MILP and raises on any disagreement beyond 1e-9."""
    budgets = [int(b) for b in budgets]
    if assignment_count(batch) <= BRUTE_FORCE_LIMIT:
        result = brute_force(batch, budgets, h)
    else:
        from wpbjax.packages.bnb import solve_search
        result = solve_search(batch, budgets, h, node_limit=node_limit)
    if verify == "milp":
        from wpbjax.packages.milp import cross_check
        cross_check(batch, budgets, result, h)
    elif verify not in (None, "none"):
        raise ValueError(f"unknown verify {verify!r}; use 'milp' or None")
    return result


def rescore(batch: PackageBatch, chosen: np.ndarray, h: str = "min") -> np.ndarray:
    """F of stores ``chosen: [P, G]`` (group-order totals): [P] float64."""
    return value_from_totals(batch.weight, coverage_totals(batch, chosen), h)


__all__ = ["OptResult", "OptNotCertified", "solve", "brute_force", "assignments", "singleton_values",
           "search_position", "rescore"]
