"""The knapsack oracle: best total utility of any set of steps that fits a budget (SEMANTICS §4).

Two modes: ``exact`` (the true 0/1 knapsack optimum) and ``reference`` (the published rule,
which approximates above 2,048 bytes). Weights are one track's write costs; values are u_t.
Host-side float64, one DP per episode read off at every budget.
"""
from __future__ import annotations

import numpy as np

ORACLE_MODES = ("exact", "reference")


def exact_dp(weights: np.ndarray, values: np.ndarray, capacity: int) -> np.ndarray:
    """``best[c]`` = max Σ values of a subset with Σ weights <= c, for c = 0..capacity. [capacity+1] float64."""
    best = np.zeros(capacity + 1, np.float64)
    for weight, value in zip(weights.tolist(), values.tolist()):
        if 0 < weight <= capacity and value > 0:
            best[weight:] = np.maximum(best[weight:], best[:-weight] + value)
    return best


def exact(weights: np.ndarray, values: np.ndarray, budgets) -> np.ndarray:
    """The true optimum at each budget. ``weights``: [T] int, ``values``: [T] float, ``budgets``: [B]."""
    budgets = np.asarray(budgets, np.int64)
    total_weight = int(weights.sum())
    out = np.full(budgets.shape, float(np.sum(values[values > 0])), np.float64)
    tight = budgets < total_weight
    if tight.any():
        best = exact_dp(weights, values, int(budgets[tight].max()))
        out[tight] = best[budgets[tight]]
    return out


def _greedy_with_swaps(weights, values, budget: int) -> float:
    """The published approximation: density-greedy, then one improving swap per unpicked candidate."""
    items = sorted(zip(weights, values), key=lambda wv: (wv[1] / wv[0], wv[0], wv[1]), reverse=True)
    picked, used = [], 0
    for weight, value in items:
        if used + weight <= budget:
            picked.append((weight, value))
            used += weight
    picked_pairs = set(picked)
    for weight, value in items:
        if (weight, value) in picked_pairs:
            continue
        for index, (old_weight, old_value) in enumerate(picked):
            if value > old_value and used - old_weight + weight <= budget:
                picked[index] = (weight, value)
                used += weight - old_weight
                break
    return float(sum(value for _, value in picked))


def reference(weights: np.ndarray, values: np.ndarray, budgets) -> np.ndarray:
    """The published rule: Σu if everything fits; exact DP if budget <= 2048 (and T·budget <=
    25M); otherwise the greedy approximation (quirk: may understate the optimum)."""
    weights_list = [int(w) for w in weights]
    values_list = [float(v) for v in values]
    total_weight = sum(weights_list)
    out = []
    for budget in np.asarray(budgets, np.int64).tolist():
        if budget >= total_weight:
            out.append(float(sum(values_list)))
        elif budget <= 2048 and len(weights_list) * budget <= 25_000_000:
            out.append(float(exact_dp(np.asarray(weights_list), np.asarray(values_list), budget)[budget]))
        else:
            out.append(_greedy_with_swaps(weights_list, values_list, budget))
    return np.asarray(out, np.float64)


def oracle_utility(weights: np.ndarray, values: np.ndarray, budgets, mode: str = "exact") -> np.ndarray:
    if mode == "exact":
        return exact(weights, values, budgets)
    if mode == "reference":
        return reference(weights, values, budgets)
    raise ValueError(f"unknown oracle mode {mode!r}; expected one of {', '.join(ORACLE_MODES)}")
