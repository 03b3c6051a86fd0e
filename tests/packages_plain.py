"""Plain-Python references for the package track's tests: one package, one budget, dict-based.

Written from the MEMAUDIT definitions (objective, feasibility, writers' rules), independent of
wpbjax.packages' array code. A package here: ``groups`` = list of groups in arrival order, each a
list of candidates ``dict(id, kind, cost, cov={unit: a})``; ``weights`` = {unit: w} in unit order.
"""

from __future__ import annotations

import itertools
import math

from wpbjax.packages.model import KIND_ID  # kind names only

TIE = 1e-12
RAW_KIND_IDS = {KIND_ID["raw_span"], KIND_ID["raw"]}
H = {"min": lambda z: min(1.0, z), "log1p": math.log1p, "linear": lambda z: z}


def from_batch(pset, p: int):
    """Package p of a PackageSet as plain lists/dicts (unit names r0, r1, ... in unit order)."""
    b = pset.batch
    n_units = b.weight.shape[1]
    weights = {f"r{r}": float(b.weight[p, r]) for r in range(n_units)}
    groups = []
    for g in range(b.cost.shape[1]):
        cands = []
        for c in range(b.cost.shape[2]):
            if b.valid[p, g, c]:
                cov = {f"r{r}": float(b.coverage[p, g, c, r]) for r in range(n_units) if b.coverage[p, g, c, r] > 0}
                cands.append(
                    {
                        "index": c,
                        "rank": int(b.rank[p, g, c]),
                        "kind": int(b.kind[p, g, c]),
                        "cost": int(b.cost[p, g, c]),
                        "cov": cov,
                        "group": g,
                        "time": int(b.time[p, g, c]),
                        "id": pset.meta.candidate_ids[p][g][c] if pset.meta.candidate_ids else None,
                    }
                )
        groups.append(cands)
    return groups, weights


def objective(store, weights, h="min"):
    totals = {}
    for cand in store:
        for unit, a in cand["cov"].items():
            totals[unit] = totals.get(unit, 0.0) + a
    return sum(w * H[h](totals.get(unit, 0.0)) for unit, w in weights.items())


def brute_force_opt(groups, weights, budget, h="min"):
    best = 0.0
    for pick in itertools.product(*[[None] + g for g in groups]):
        store = [c for c in pick if c is not None]
        if sum(c["cost"] for c in store) <= budget:
            best = max(best, objective(store, weights, h))
    return best


def _marginal(cand, store, weights, h):
    return objective(store + [cand], weights, h) - objective(store, weights, h)


def greedy(groups, weights, budget, h="min", allowed=None):
    store, used = [], 0
    while True:
        best_key, best = None, None
        for g in groups:
            if any(c["group"] == g[0]["group"] for c in store) if g else True:
                continue
            for cand in g:
                if allowed is not None and cand["kind"] not in allowed or used + cand["cost"] > budget:
                    continue
                gain = _marginal(cand, store, weights, h)
                if gain <= TIE:
                    continue
                key = (gain / max(cand["cost"], 1e-12), gain, -cand["cost"], cand["rank"])
                if best_key is None or key > best_key:
                    best_key, best = key, cand
        if best is None:
            return store
        store.append(best)
        used += best["cost"]


def streaming(groups, weights, budget, h="min", threshold=None):
    """density_only (threshold None) or one grouped-value-threshold pass."""
    store, used = [], 0
    for g in groups:
        keyed = []
        for cand in g:
            if used + cand["cost"] > budget:
                continue
            gain = _marginal(cand, store, weights, h)
            density = gain / max(cand["cost"], 1e-12)
            if gain <= TIE or (threshold is not None and density + TIE < threshold):
                continue
            key = (
                (gain, -cand["cost"], cand["rank"])
                if threshold is not None
                else (density, gain, -cand["cost"], cand["rank"])
            )
            keyed.append((key, cand))
        if keyed:
            cand = max(keyed, key=lambda kc: kc[0])[1]
            store.append(cand)
            used += cand["cost"]
    return store


def gvt(groups, weights, budget, h="min"):
    taus = {objective([c], weights, h) / max(c["cost"], 1e-12) for g in groups for c in g if c["cost"] <= budget}
    best, best_value, best_cost = [], -1.0, 0
    for tau in sorted(taus | {0.0}, reverse=True):
        store = streaming(groups, weights, budget, h, tau)
        v, cost = objective(store, weights, h), sum(c["cost"] for c in store)
        if v > best_value + TIE or (abs(v - best_value) <= TIE and cost < best_cost):
            best, best_value, best_cost = store, v, cost
    return best


def stable_hash(text):
    total = 0
    for byte in text.encode("utf-8"):
        total = (total * 131 + byte) % 1_000_000_007
    return total


def raw_in_order(groups, budget, order):
    """recency_raw / reservoir_raw: raw spans sorted by ``order``, each kept if its group is free and it fits."""
    raw = [c for g in groups for c in g if c["kind"] in RAW_KIND_IDS]
    store, used = [], 0
    for cand in sorted(raw, key=order):
        if all(s["group"] != cand["group"] for s in store) and used + cand["cost"] <= budget:
            store.append(cand)
            used += cand["cost"]
    return store


def recency(cand):
    return (-cand["time"], cand["cost"], cand["id"])


def reservoir(cand):
    return (stable_hash(cand["id"]), cand["cost"])
