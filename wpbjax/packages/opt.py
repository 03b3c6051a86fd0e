"""Certified exact optima OPT(B) of a package batch, and which method certified each one.

* ``brute_force``: every assignment (skip or one candidate per group) at once. When every package
  of the batch has the same candidates and coverage (memaudit_small: only weights and costs move
  with the seed) one coverage-total matrix [A, R] serves every package. Certified by enumeration.
* ``components`` (wpbjax.packages.components): F adds up over independent parts of the package
  (groups joined by shared units); a multiple-choice knapsack over the parts' joint options, one
  dynamic program for every package and budget. Certified by enumeration within each part.
* ``branch_and_bound`` (host, one package and budget at a time, wpbjax.packages.bnb): depth-first
  over groups with an admissible bound. Certified when the search completes.
* ``milp`` (wpbjax.packages.milp): ``scipy.optimize.milp`` (HiGHS) on x_u binary, y_r <= 1,
  y_r <= sum_u a_ur x_u, sum_u c_u x_u <= B, sum_{u in G} x_u <= 1 (h = min; linear without
  y_r <= 1; log1p by outer approximation), one program per package reused across its budgets.
  Its store is re-scored exactly.

``solve`` chooses by size (``choose_method``): brute force up to 300,000 assignments; the
decomposition where every part is small; else branch and bound with a small node budget (the MILP
for the cells it does not close) up to 12 groups and the MILP directly on larger packages.

Ties: among stores within 1e-12 of the best value the cheapest wins, then the first in the
artifact's search order (``exact_solve``: skip first, then candidates by falling singleton value,
cost, id), so brute force picks the artifact's store. A value is never a heuristic's: where no
method certifies it, ``solve`` raises ``OptNotCertified``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from wpbjax.packages import bnb, components, milp
from wpbjax.packages.model import TIE, PackageBatch, coverage_totals, h_function, value_from_totals

BRUTE_FORCE_LIMIT = 300_000  # assignments per package enumerated at once
# Branch and bound closes small packages before the MILP solver has started; larger ones can need far more
# nodes in Python, where the MILP's cost hardly grows (node counts and times: docs/packages.md).
SEARCH_GROUPS = 12  # the most groups branch and bound is tried on first
SEARCH_NODES = 2_000  # its node budget there before the MILP takes the cell
METHODS = ("auto", "brute_force", "components", "branch_and_bound", "milp")
_CHUNK_CELLS = 4_000_000  # packages x assignments per chunk (memory)


class OptNotCertified(RuntimeError):
    """No exact method certified a package's optimum (too large for enumeration, search gave up)."""


@dataclasses.dataclass(frozen=True)
class OptResult:
    value: np.ndarray  # [P, B] float64  F of the optimal store
    chosen: np.ndarray  # [P, B, G] int32 the optimal store (candidate per group, -1 none)
    method: np.ndarray  # [P, B] object   "brute_force" | "branch_and_bound" | "milp"


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
    return bool(
        np.array_equal(np.broadcast_to(batch.coverage[:1], batch.coverage.shape), batch.coverage)
        and np.array_equal(np.broadcast_to(batch.valid[:1], batch.valid.shape), batch.valid)
    )


def _pick(values, costs, order_key, budgets, prefix):
    """Per package and budget the tie-broken best feasible assignment: [P, B] indices into A
    (budget b looks only at the first ``prefix[b]`` assignments, the others cost more)."""
    best = np.empty((values.shape[0], len(budgets)), np.int64)
    for b, budget in enumerate(budgets):
        values_b, costs_b, order_b = (a[:, : prefix[b]] for a in (values, costs, order_key))
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
        raise OptNotCertified(
            f"{int(np.prod(options, dtype=np.float64))} assignments exceed the brute-force limit {BRUTE_FORCE_LIMIT}"
        )
    n_pkg, n_groups, n_cand = batch.cost.shape
    table = assignments(options)  # [A, G]
    onehot = _onehot(table, n_cand)  # [A, G*C] float64
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
    shared_sat = (
        hfun(onehot @ batch.coverage[0].reshape(-1, batch.weight.shape[1])) if _shared_structure(batch) else None
    )  # [A, R]
    chunk = max(1, _CHUNK_CELLS // max(1, len(table)))
    chosen = np.empty((n_pkg, len(budgets), n_groups), np.int32)
    for start in range(0, n_pkg, chunk):
        rows = slice(start, min(n_pkg, start + chunk))
        if shared_sat is not None:
            values = batch.weight[rows] @ shared_sat.T  # [p, A]
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


def search_groups(batch: PackageBatch) -> int:
    """Groups with at least one candidate, the most over the batch (the search tree's depth)."""
    return int(np.asarray(batch.valid).any(axis=2).sum(axis=1).max(initial=0))


def choose_method(batch: PackageBatch, budgets, h: str = "min") -> str:
    """The first exact method ``solve`` tries on a batch, by size.

    ``brute_force`` up to :data:`BRUTE_FORCE_LIMIT` assignments; ``components`` where the package
    splits into small independent parts (wpbjax.packages.components.fits); else
    ``branch_and_bound`` (with :data:`SEARCH_NODES` nodes, the MILP where it gives up) up to
    :data:`SEARCH_GROUPS` groups and ``milp`` directly beyond."""
    if assignment_count(batch) <= BRUTE_FORCE_LIMIT:
        return "brute_force"
    if components.fits(batch, budgets):
        return "components"
    if search_groups(batch) > SEARCH_GROUPS:
        return "milp"
    return "branch_and_bound"


def solve(
    batch: PackageBatch,
    budgets,
    h: str = "min",
    verify: str | None = None,
    node_limit: int = 200_000,
    method: str = "auto",
) -> OptResult:
    """Certified OPT for every package and budget.

    ``method="auto"`` chooses by size (:func:`choose_method`): brute force where small, the
    decomposition where the package splits into small parts, else branch and bound on mid-sized
    packages (the MILP for the cells it does not close within :data:`SEARCH_NODES` nodes) and the
    MILP on large ones. ``"brute_force"``, ``"components"``, ``"branch_and_bound"`` (``node_limit``
    nodes, no fallback) and ``"milp"`` force one method. ``verify="milp"``
    cross-checks every cell another method certified against the MILP and raises on any
    disagreement beyond 1e-6. Raises OptNotCertified where no method certifies a cell."""
    budgets = [int(b) for b in budgets]
    h_function(h)  # an unknown h fails here, whichever method runs
    if any(b < 0 for b in budgets):
        raise ValueError(f"budgets must be >= 0, got {budgets}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if verify not in (None, "none", "milp"):
        raise ValueError(f"unknown verify {verify!r}; use 'milp' or None")
    first = choose_method(batch, budgets, h) if method == "auto" else method
    if first == "brute_force":
        result = brute_force(batch, budgets, h)
    elif first == "components":
        chosen = components.solve(batch, budgets, h)
        value = np.stack([rescore(batch, chosen[:, b], h) for b in range(len(budgets))], axis=1)
        result = OptResult(value, chosen, np.full(value.shape, "components", dtype=object))
    else:
        fallback = method == "auto"
        nodes = min(node_limit, SEARCH_NODES) if fallback else node_limit
        result = _solve_per_package(batch, budgets, h, first, nodes, fallback)
    if verify == "milp":
        milp.cross_check(batch, budgets, result.value, result.method, h)
    return result


def _solve_per_package(batch: PackageBatch, budgets, h: str, first: str, node_limit: int, fallback: bool) -> OptResult:
    """Branch and bound cell by cell (the MILP for the cells it gives up on, if ``fallback``), or
    the MILP, one program per package reused across its budgets."""
    n_pkg, n_groups = batch.cost.shape[:2]
    chosen = np.full((n_pkg, len(budgets), n_groups), -1, np.int32)
    method = np.full((n_pkg, len(budgets)), first, object)
    for p in range(n_pkg):
        to_milp = list(range(len(budgets))) if first == "milp" else []
        if first == "branch_and_bound":
            for b, budget in enumerate(budgets):
                try:
                    _, chosen[p, b], _ = bnb.branch_and_bound(batch, p, budget, h, node_limit)
                except bnb.SearchLimit as limit:
                    if not fallback:
                        raise OptNotCertified(str(limit)) from None
                    to_milp.append(b)
        if to_milp:
            try:
                _, chosen[p, to_milp] = milp.solve_package(batch, p, [budgets[b] for b in to_milp], h)
            except milp.MilpFailed as failed:
                raise OptNotCertified(str(failed)) from None
            method[p, to_milp] = "milp"
    value = np.stack([rescore(batch, chosen[:, b], h) for b in range(len(budgets))], axis=1)
    return OptResult(value, chosen, method)


def rescore(batch: PackageBatch, chosen: np.ndarray, h: str = "min") -> np.ndarray:
    """F of stores ``chosen: [P, G]`` (group-order totals): [P] float64."""
    return value_from_totals(batch.weight, coverage_totals(batch, chosen), h)


__all__ = [
    "OptResult",
    "OptNotCertified",
    "solve",
    "choose_method",
    "brute_force",
    "assignments",
    "singleton_values",
    "search_position",
    "rescore",
]
