"""OPT(B) as a mixed-integer program solved by HiGHS (``scipy.optimize.milp``), for every h.

    maximize   sum_r w_r y_r
    subject to y_r <= s_k z_r + i_k          (tangents of h, one row per unit and tangent)
               z_r = sum_u a_ur x_u          (coverage total, substituted into the rows)
               sum_u c_u x_u <= B           (budget)
               sum_{u in G} x_u <= 1        (one candidate per group)
               x_u in {0, 1},  y_r >= 0 (and y_r <= 1 for h = min)

h = min and h = linear are stated exactly by the one tangent y_r <= z_r (with y_r <= 1 for min), so
at the optimum y_r = h(z_r) and the objective is F. h = log1p (concave) is over-estimated by its
tangents (first at z = 0, 0.5, 1, 2, 4): the program's optimum bounds OPT from above, and where
the store it returns is worth less than that bound, tangents at the store's own totals are added
and the program solved again (outer approximation) until the store's exact F meets the bound; a
store the program values exactly is never returned twice, so this ends. Tangents carry over
between the budgets of a package (they hold for any store).

The program of a package is built once and solved for every budget (only the budget row's bound
moves). The store x is re-scored exactly (float64, the artifact's order) and checked feasible;
HiGHS stops at an absolute gap of 1e-6, far below the smallest difference between two stores'
values in the shipped distributions.
"""

from __future__ import annotations

import numpy as np

from wpbjax.packages.model import PackageBatch, value_from_totals

AGREEMENT = 1e-6  # |OPT_other - OPT_milp| allowed (HiGHS's default absolute MIP gap)
H_MODELLED = ("min", "linear", "log1p")  # h the program certifies (log1p by outer approximation)
_LOG1P_POINTS = (0.0, 0.5, 1.0, 2.0, 4.0)  # first tangents of log1p
_MAX_ROUNDS = 200  # outer-approximation rounds per cell before giving up


class MilpFailed(RuntimeError):
    """HiGHS did not prove a cell optimal (time limit, numerical trouble) or returned an infeasible store."""


def _tangents(h: str, points) -> tuple[np.ndarray, np.ndarray]:
    """Slopes and intercepts of h's tangents at ``points``: y <= slope * z + intercept."""
    points = np.asarray(points, np.float64)
    if h == "log1p":
        slope = 1.0 / (1.0 + points)
        return slope, np.log1p(points) - slope * points
    return np.ones_like(points), np.zeros_like(points)  # min (with y <= 1) and linear: y <= z


def solve_package(
    batch: PackageBatch, p: int, budgets, h: str = "min", time_limit: float = 60.0
) -> tuple[np.ndarray, np.ndarray]:
    """Package p at every budget from one build: (F of each store [B] float64, chosen [B, G] int32).

    Raises MilpFailed where HiGHS does not prove optimality."""
    # scipy.optimize is slow to import; a sweep of small packages never needs it
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, diags, hstack, vstack

    if h not in H_MODELLED:
        raise ValueError(f"the MILP models h in {H_MODELLED}, not {h!r}")
    weight = np.asarray(batch.weight[p])
    if np.any(weight < 0):
        raise ValueError(f"package {p} has a negative unit weight; F is modelled for w >= 0")
    valid = np.asarray(batch.valid[p])
    n_groups = valid.shape[0]
    g_idx, c_idx = np.nonzero(valid)
    cov = np.asarray(batch.coverage[p])[g_idx, c_idx]  # [K, R]
    cand_cost = np.asarray(batch.cost[p])[g_idx, c_idx].astype(np.float64)
    n_cand, n_units = cov.shape
    objective = np.concatenate([np.zeros(n_cand), -weight])
    budget_row = csr_matrix(np.concatenate([cand_cost, np.zeros(n_units)])[None, :])
    group_rows = csr_matrix((np.ones(n_cand), (g_idx, np.arange(n_cand))), shape=(n_groups, n_cand + n_units))
    # tangent rows y_r - slope * sum_u a_ur x_u <= intercept, kept as (unit, point) pairs
    points = _LOG1P_POINTS if h == "log1p" else (0.0,)
    cut_unit = np.repeat(np.arange(n_units), len(points))
    cut_point = np.tile(np.asarray(points, np.float64), n_units)

    cov_t = csr_matrix(cov.T)  # [R, K]

    def cut_rows():
        slope, intercept = _tangents(h, cut_point)
        y_part = csr_matrix(
            (np.ones(len(cut_unit)), (np.arange(len(cut_unit)), cut_unit)), shape=(len(cut_unit), n_units)
        )
        return hstack([diags(-slope) @ cov_t[cut_unit], y_part]).tocsr(), intercept

    integrality = np.concatenate([np.ones(n_cand), np.zeros(n_units)])
    y_upper = 1.0 if h == "min" else np.inf
    bounds = Bounds(0, np.concatenate([np.ones(n_cand), np.full(n_units, y_upper)]))
    options = {"mip_rel_gap": 0.0, "time_limit": time_limit, "presolve": True}
    values, chosen = np.empty(len(budgets)), np.full((len(budgets), n_groups), -1, np.int32)
    cuts, intercept = cut_rows()
    for b, budget in enumerate(budgets):
        for _ in range(_MAX_ROUNDS):
            matrix = vstack([cuts, budget_row, group_rows]).tocsr()
            upper = np.concatenate([intercept, [budget], np.ones(n_groups)])
            result = milp(
                objective,
                constraints=LinearConstraint(matrix, -np.inf, upper),
                integrality=integrality,
                bounds=bounds,
                options=options,
            )
            if result.status != 0 or result.x is None:
                raise MilpFailed(f"MILP did not prove optimality (package {p}, budget {budget}): {result.message}")
            picked = np.rint(result.x[:n_cand]).astype(bool)
            over_group = np.bincount(g_idx[picked], minlength=n_groups).max(initial=0) > 1
            if over_group or cand_cost[picked].sum() > budget:
                raise MilpFailed(f"MILP store is infeasible after rounding (package {p}, budget {budget})")
            chosen[b] = -1
            chosen[b, g_idx[picked]] = c_idx[picked]
            values[b] = _store_value(batch, p, chosen[b], h)
            if h != "log1p":
                break
            # the program's bound on OPT (tangents over-estimate h); met by the store's exact F: certified
            bound = -(result.mip_dual_bound if getattr(result, "mip_dual_bound", None) is not None else result.fun)
            if values[b] >= bound - AGREEMENT:
                break
            totals = cov[picked].sum(axis=0)
            known = np.abs(cut_point[None, :] - totals[:, None]) <= 1e-9
            new = np.flatnonzero((weight > 0) & ~(known & (cut_unit[None, :] == np.arange(n_units)[:, None])).any(1))
            if len(new) == 0:  # exact at this store already: only numerical trouble leaves a gap
                raise MilpFailed(
                    f"outer approximation stalled (package {p}, budget {budget}): "
                    f"store {values[b]!r} below the bound {bound!r}"
                )
            cut_unit, cut_point = np.concatenate([cut_unit, new]), np.concatenate([cut_point, totals[new]])
            cuts, intercept = cut_rows()
        else:
            raise MilpFailed(
                f"outer approximation did not close in {_MAX_ROUNDS} rounds (package {p}, budget {budget})"
            )
    return values, chosen


def _store_value(batch: PackageBatch, p: int, chosen: np.ndarray, h: str) -> float:
    totals = np.zeros(batch.weight.shape[1])
    for g in range(len(chosen)):  # group order, as F is scored everywhere
        if chosen[g] >= 0:
            totals = totals + batch.coverage[p, g, chosen[g]]
    return float(value_from_totals(batch.weight[p], totals, h))


def solve_one(
    batch: PackageBatch, p: int, budget: int, time_limit: float = 60.0, h: str = "min"
) -> tuple[float, np.ndarray]:
    """Package p at one budget: (F of the MILP's store, chosen [G] int32)."""
    values, chosen = solve_package(batch, p, [budget], h, time_limit)
    return float(values[0]), chosen[0]


def cross_check(batch: PackageBatch, budgets, value: np.ndarray, method: np.ndarray, h: str = "min") -> None:
    """Every cell of ``value: [P, B]`` (certified by ``method: [P, B]``) against the MILP; marks the
    cells verified in place (``brute_force+milp``). Cells the MILP certified itself are left as they are.

    Raises AssertionError on any disagreement beyond :data:`AGREEMENT`."""
    if h not in H_MODELLED:
        raise ValueError(f"the MILP cross-check models h in {H_MODELLED}, not {h!r}")
    for p in range(batch.cost.shape[0]):
        todo = [b for b in range(len(budgets)) if not str(method[p, b]).startswith("milp")]
        if not todo:
            continue
        milp_values, _ = solve_package(batch, p, [int(budgets[b]) for b in todo], h)
        for b, milp_value in zip(todo, milp_values, strict=True):
            if abs(milp_value - value[p, b]) > AGREEMENT:
                raise AssertionError(
                    f"OPT disagreement at package {p}, budget {budgets[b]}: "
                    f"{method[p, b]} {value[p, b]!r} vs MILP {milp_value!r}"
                )
            if not str(method[p, b]).endswith("+milp"):
                method[p, b] = f"{method[p, b]}+milp"
