"""Exact OPT(B) by branch and bound over groups, one package and budget at a time (host, numpy).

Depth-first over groups (most valuable first); at each group try its candidates by falling
marginal gain, then skipping it. A node is pruned when F(current) + bound <= best + 1e-12 with

    bound = min(coverage bound, knapsack bound)
    coverage bound: F(t + every remaining group's largest coverage per unit) - F(t)
    knapsack bound: fractional knapsack of the remaining candidates' marginal gains w.r.t. t
                    within the remaining budget (group limits relaxed)

Both are admissible for monotone submodular F (h concave: min, log1p, linear): the gain of any
set of remaining candidates is at most the sum of their single gains. The search certifies the
optimum when it completes; past ``node_limit`` nodes it gives up (SearchLimit), and
wpbjax.packages.opt hands the cell to the MILP or reports it uncertified.
"""

from __future__ import annotations

import numpy as np

from wpbjax.packages.model import TIE, PackageBatch, h_function, value_from_totals


class SearchLimit(RuntimeError):
    """Branch and bound visited more than its node limit without closing the search."""


class _Package:
    """One package's candidates flattened in search order (groups by best singleton density)."""

    def __init__(self, batch: PackageBatch, p: int, h: str):
        valid = np.asarray(batch.valid[p])
        self.weight, self.h, self.hfun = np.asarray(batch.weight[p], np.float64), h, h_function(h)
        self.n_groups = valid.shape[0]
        cov, cost = np.asarray(batch.coverage[p]), np.asarray(batch.cost[p])
        single = value_from_totals(self.weight[None, None, :], cov, h) / np.maximum(cost, 1)
        best = np.where(valid, single, -1.0).max(axis=1)
        self.order = [g for g in np.argsort(-best, kind="stable") if valid[g].any()]
        rows = [(g, c) for g in self.order for c in np.flatnonzero(valid[g])]
        self.group = np.array([g for g, _ in rows], np.int64)
        self.cand = np.array([c for _, c in rows], np.int64)
        self.cov, self.cost = cov[self.group, self.cand], cost[self.group, self.cand].astype(np.int64)
        self.depth = np.array([self.order.index(g) for g in self.group], np.int64)  # position of each row's group
        # rows of depth i: start[i]:start[i+1]
        self.start = np.searchsorted(self.depth, np.arange(len(self.order) + 1))
        group_max = np.zeros((len(self.order) + 1, cov.shape[-1]))
        for i in range(len(self.order) - 1, -1, -1):
            group_max[i] = group_max[i + 1] + self.cov[self.start[i] : self.start[i + 1]].max(axis=0)
        self.suffix_cover = group_max  # [depth, R]

    def value(self, totals):
        return float(value_from_totals(self.weight, totals, self.h))


def _knapsack_bound(gain: np.ndarray, cost: np.ndarray, capacity: int) -> float:
    """Fractional knapsack of (gain, cost) within capacity (zero-cost items all taken)."""
    keep = gain > TIE
    gain, cost = gain[keep], cost[keep]
    free = cost == 0
    total = float(gain[free].sum())
    gain, cost = gain[~free], cost[~free]
    order = np.argsort(-gain / cost, kind="stable")
    room = float(capacity)
    for k in order:
        if cost[k] <= room:
            total += gain[k]
            room -= cost[k]
        else:
            return total + gain[k] * room / cost[k]
    return total


def branch_and_bound(
    batch: PackageBatch, p: int, budget: int, h: str = "min", node_limit: int = 200_000
) -> tuple[float, np.ndarray, int]:
    """(OPT value, chosen [G] int32, nodes visited) of package p at one budget."""
    pkg = _Package(batch, p, h)
    best = [0.0, np.full(pkg.n_groups, -1, np.int32)]
    nodes = [0]
    chosen = np.full(pkg.n_groups, -1, np.int32)

    def visit(depth: int, totals: np.ndarray, used: int, current: float) -> None:
        nodes[0] += 1
        if nodes[0] > node_limit:
            raise SearchLimit(f"branch and bound passed {node_limit} nodes (package {p}, budget {budget})")
        if current > best[0] + TIE:
            best[0], best[1] = current, chosen.copy()
        if depth == len(pkg.order) or used >= budget and not np.any(pkg.cost[pkg.start[depth] :] == 0):
            return
        rows = slice(pkg.start[depth], None)
        room = budget - used
        fits = pkg.cost[rows] <= room
        after = value_from_totals(pkg.weight, totals[None, :] + pkg.cov[rows][fits], h)
        gains = np.zeros(len(fits))
        gains[fits] = after - current
        cover = pkg.value(totals + pkg.suffix_cover[depth]) - current
        if current + min(cover, _knapsack_bound(gains, pkg.cost[rows], room)) <= best[0] + TIE:
            return
        here = np.arange(pkg.start[depth + 1] - pkg.start[depth])
        for k in here[np.argsort(-gains[here], kind="stable")]:
            if not fits[k] or gains[k] <= TIE:  # a zero-gain candidate never beats skipping the group
                continue
            row = pkg.start[depth] + k
            g = pkg.group[row]
            chosen[g] = pkg.cand[row]
            visit(depth + 1, totals + pkg.cov[row], used + int(pkg.cost[row]), current + gains[k])
            chosen[g] = -1
        visit(depth + 1, totals, used, current)

    visit(0, np.zeros_like(pkg.weight), 0, 0.0)
    return best[0], best[1], nodes[0]
