"""OPT(B) as a mixed-integer program solved by HiGHS (``scipy.optimize.milp``), h = min only.

    maximize   sum_r w_r y_r
    subject to y_r <= sum_u a_ur x_u        (coverage, one row per unit)
               sum_u c_u x_u <= B           (budget)
               sum_{u in G} x_u <= 1        (one candidate per group)
               x_u in {0, 1},  0 <= y_r <= 1

At the optimum y_r = min(1, sum_u a_ur x_u), so the objective is F. The store x is re-scored
exactly (float64, the artifact's order); HiGHS stops at an absolute gap of 1e-6, far below the
smallest difference between two stores' values in the shipped distributions.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix, hstack, identity, vstack

from wpbjax.packages.model import PackageBatch, value_from_totals

AGREEMENT = 1e-6   # |OPT_search - OPT_milp| allowed (HiGHS's default absolute MIP gap)


def solve_one(batch: PackageBatch, p: int, budget: int, time_limit: float = 60.0) -> tuple[float, np.ndarray]:
    """Package p at one budget: (F of the MILP's store, chosen [G] int32). Raises if HiGHS does not prove optimality."""
    valid = np.asarray(batch.valid[p])
    g_idx, c_idx = np.nonzero(valid)
    cov = np.asarray(batch.coverage[p])[g_idx, c_idx]                    # [K, R]
    weight = np.asarray(batch.weight[p])
    n_cand, n_units = cov.shape
    objective = np.concatenate([np.zeros(n_cand), -weight])
    coverage_rows = hstack([csr_matrix(-cov.T), identity(n_units, format="csr")])          # y - A^T x <= 0
    budget_row = csr_matrix(np.concatenate([np.asarray(batch.cost[p])[g_idx, c_idx], np.zeros(n_units)])[None, :])
    group_rows = csr_matrix((np.ones(n_cand), (g_idx, np.arange(n_cand))), shape=(valid.shape[0], n_cand + n_units))
    matrix = vstack([coverage_rows, budget_row, group_rows]).tocsr()
    upper = np.concatenate([np.zeros(n_units), [budget], np.ones(valid.shape[0])])
    result = milp(objective, constraints=LinearConstraint(matrix, -np.inf, upper),
                  integrality=np.concatenate([np.ones(n_cand), np.zeros(n_units)]), bounds=Bounds(0, 1),
                  options={"mip_rel_gap": 0.0, "time_limit": time_limit, "presolve": True})
    if result.status != 0 or result.x is None:
        raise RuntimeError(f"MILP did not prove optimality (package {p}, budget {budget}): {result.message}")
    picked = np.rint(result.x[:n_cand]).astype(bool)
    chosen = np.full(valid.shape[0], -1, np.int32)
    chosen[g_idx[picked]] = c_idx[picked]
    totals = np.zeros(n_units)
    for g in range(len(chosen)):           # group order, as F is scored everywhere
        if chosen[g] >= 0:
            totals = totals + batch.coverage[p, g, chosen[g]]
    return float(value_from_totals(weight, totals)), chosen


def cross_check(batch: PackageBatch, budgets, result, h: str = "min") -> None:
    """Every cell of ``result`` (an OptResult) against the MILP; marks the cells verified.

    Raises AssertionError on any disagreement beyond :data:`AGREEMENT`."""
    if h != "min":
        raise ValueError("the MILP cross-check models h = min only")
    for p in range(batch.cost.shape[0]):
        for b, budget in enumerate(budgets):
            milp_value, _ = solve_one(batch, p, int(budget))
            if abs(milp_value - result.value[p, b]) > AGREEMENT:
                raise AssertionError(f"OPT disagreement at package {p}, budget {budget}: "
                                     f"{result.method[p, b]} {result.value[p, b]!r} vs MILP {milp_value!r}")
            if not str(result.method[p, b]).endswith("+milp"):
                result.method[p, b] = f"{result.method[p, b]}+milp"
