"""Exact OPT(B) by decomposition: F splits over independent parts of a package, and the parts meet
only in the budget.

Two groups are joined when candidates of theirs cover a common unit of positive weight (in any
package of the batch); F = sum_r w_r h(t_r) then adds up over the connected components of that
graph, whatever h. Each component's joint options (skip or one candidate per group) are enumerated
with their cost and value, and OPT is a multiple-choice knapsack over components: one dynamic
program over the integer budgets 0..max(B), components one after another, for every package and
every budget of the batch at once. Exact when the components are small (memaudit_small at any
size: every update joins its fact's group and nothing else, 24 joint options at most).

Shapes: P packages, G groups, C candidates, R units, K components, O_k joint options of component
k, B1 = max budget + 1.
"""

from __future__ import annotations

import numpy as np

from wpbjax.packages.model import PackageBatch, h_function

OPTION_LIMIT = 4_096  # joint options of the largest component
PROGRAM_LIMIT = 20_000_000  # options of all components x (max budget + 1), per package
_CHUNK_CELLS = 20_000_000  # packages x options x budgets per dynamic-program step (memory)


def components(batch: PackageBatch) -> list[np.ndarray]:
    """Groups of each connected component (groups sharing a unit of positive weight), groups
    without a candidate left out: a list of [m] int64 arrays, in order of their first group."""
    touches = ((np.asarray(batch.coverage) > 0) & (np.asarray(batch.weight)[:, None, None, :] > 0)).any(axis=(0, 2))
    has_candidate = np.asarray(batch.valid).any(axis=(0, 2))
    label = np.arange(touches.shape[0])
    for unit in range(touches.shape[1]):  # union by unit: every group covering it joins the first
        groups = np.flatnonzero(touches[:, unit])
        if len(groups) > 1:
            roots = np.unique(_root(label, groups))
            label[roots] = roots[0]
    roots = _root(label, np.arange(len(label)))
    return [np.flatnonzero((roots == root) & has_candidate) for root in dict.fromkeys(roots[has_candidate])]


def _root(label: np.ndarray, groups: np.ndarray) -> np.ndarray:
    roots = label[groups]
    while np.any(label[roots] != roots):
        roots = label[roots]
    return roots


def option_counts(batch: PackageBatch) -> np.ndarray:
    """Joint options of each component: [K] float64 (float: a large component's count overflows int64)."""
    options = np.asarray(batch.valid).sum(axis=2).max(axis=0) + 1
    return np.array([np.prod(options[groups], dtype=np.float64) for groups in components(batch)])


def fits(batch: PackageBatch, budgets) -> bool:
    """Whether the decomposition is small enough: every component within OPTION_LIMIT joint options,
    and the program within PROGRAM_LIMIT cells a package (options of all components x budgets)."""
    counts = option_counts(batch)
    return bool(
        counts.max(initial=0) <= OPTION_LIMIT and counts.sum() * (max(int(b) for b in budgets) + 1) <= PROGRAM_LIMIT
    )


def solve(batch: PackageBatch, budgets, h: str = "min") -> np.ndarray:
    """Optimal stores for every package and budget: chosen [P, B, G] int32 (-1 none).

    The program's values add components in floating point (rounding ~1e-15, inside the 1e-12 tie
    window); the caller re-scores the stores in the artifact's order."""
    budgets = [int(b) for b in budgets]
    n_pkg, n_groups, _ = batch.cost.shape
    width = max(budgets) + 1
    valid = np.asarray(batch.valid)
    shapes = []  # per component: groups [m], options [O, m] (-1 skip), units [U]
    for groups in components(batch):
        options = valid[:, groups].sum(axis=2).max(axis=0) + 1
        grids = np.meshgrid(*[np.arange(n) - 1 for n in options], indexing="ij")
        table = np.stack([grid.reshape(-1) for grid in grids], axis=1)
        units = np.flatnonzero((np.asarray(batch.coverage)[:, groups] > 0).any(axis=(0, 1, 2)))
        shapes.append((groups, table, units))
    per_package = sum(len(table) * max(width, len(groups) * len(units)) for groups, table, units in shapes) + 1
    chunk = max(1, _CHUNK_CELLS // per_package)
    chosen = np.full((n_pkg, len(budgets), n_groups), -1, np.int32)
    for start in range(0, n_pkg, chunk):
        rows = slice(start, min(n_pkg, start + chunk))
        parts = [
            (groups, table, *_options(batch, rows, groups, table, units, h, width)) for groups, table, units in shapes
        ]
        chosen[rows] = _knapsack(parts, rows.stop - start, budgets, width, n_groups)
    return chosen


def _options(
    batch: PackageBatch, rows: slice, groups: np.ndarray, table: np.ndarray, units: np.ndarray, h: str, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Cost and value of a component's joint options for packages ``rows``: ([p, O] int64, [p, O] float64);
    an option that picks a padding candidate of some package costs ``width`` (never affordable)."""
    picked = table >= 0  # [O, m]
    pick = np.maximum(table, 0)
    slots = np.arange(len(groups))[None, :]
    ok = np.where(picked, np.asarray(batch.valid)[rows][:, groups][:, slots, pick], True).all(axis=2)
    cost = np.where(picked, np.asarray(batch.cost)[rows][:, groups][:, slots, pick], 0).sum(axis=2)
    cover = np.asarray(batch.coverage)[rows][:, groups][..., units][:, slots, pick]  # [p, O, m, U]
    totals = np.where(picked[None, :, :, None], cover, 0.0).sum(axis=2)  # [p, O, U]
    value = np.einsum("pou,pu->po", h_function(h)(totals), np.asarray(batch.weight)[rows][:, units])
    return np.where(ok, cost, width), value


def _knapsack(parts, n_pkg: int, budgets, width: int, n_groups: int) -> np.ndarray:
    """Multiple-choice knapsack over components for p packages: chosen [p, B, G] int32.

    best[p, b]: the most value of the components so far within budget b; each component keeps
    the option it took at every budget (first option of the largest value, so skipping wins exact
    ties) to walk the budgets back."""
    budget_axis = np.arange(width)
    best = np.zeros((n_pkg, width))
    taken = []
    for _, _, cost, value in parts:
        before = budget_axis[None, None, :] - cost[:, :, None]  # [p, O, B1]
        reach = np.take_along_axis(best[:, None, :], np.maximum(before, 0), axis=2)
        total = np.where(before >= 0, reach + value[:, :, None], -np.inf)
        pick = np.argmax(total, axis=1)  # [p, B1]
        best = np.take_along_axis(total, pick[:, None, :], axis=1)[:, 0]
        taken.append(pick)
    chosen = np.full((n_pkg, len(budgets), n_groups), -1, np.int32)
    packages = np.arange(n_pkg)
    for b, budget in enumerate(budgets):
        room = np.full(n_pkg, budget)
        for (groups, table, cost, _), pick in zip(reversed(parts), reversed(taken), strict=True):
            option = pick[packages, room]
            chosen[:, b, groups] = table[option]
            room = room - cost[packages, option]
    return chosen
