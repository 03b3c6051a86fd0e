"""The knapsack oracle: best total utility of any set of steps that fits a budget (SEMANTICS §4).

Two modes: ``exact`` (the true 0/1 knapsack optimum) and ``published_rule`` (the published
harness's rule, which approximates above 2,048 bytes).
Weights are one track's write costs; values are u_t.

The exact optimum comes from one DP per episode, read off at every budget. When the utilities lie
on a grid (integer multiples of 2^-k, as the paper's 0.5/1/5/6 do) it is a DP over *value* —
the least weight reaching each value total, O(T·V) with V = Σu/q, independent of the budget and
run in JAX over all episodes at once. Otherwise it is a float64 DP over capacity, O(T·B).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.runtime.devices import COMPILER_OPTIONS

MAX_GRID_EXPONENT = 16  # utilities on a grid of 2^-16 or coarser use the DP over value
MAX_VALUE_CELLS = 1 << 22  # ... while the value table stays this small

ORACLE_MODES = ("exact", "published_rule")


def exact_dp(weights: np.ndarray, values: np.ndarray, capacity: int) -> np.ndarray:
    """``best[c]`` = max Σ values of a subset with Σ weights <= c, for c = 0..capacity. [capacity+1] float64."""
    best = np.zeros(capacity + 1, np.float64)
    for weight, value in zip(weights.tolist(), values.tolist()):
        if 0 < weight <= capacity and value > 0:
            best[weight:] = np.maximum(best[weight:], best[:-weight] + value)
    return best


def value_grid(values: np.ndarray) -> float | None:
    """The coarsest quantum 2^-k (k <= 16) of which every value is an integer multiple, or None."""
    for exponent in range(MAX_GRID_EXPONENT + 1):
        scaled = values * 2.0**exponent
        if np.all(scaled == np.round(scaled)):
            return 2.0**-exponent
    return None


def add_to_least_weight(least, weight, value, real):
    """One item (``weight`` bytes, ``value`` grid units; skipped unless ``real``) into the table
    ``least`` [V+1] int32 of least weights reaching each value total (int32 max: unreachable)."""
    unreachable = jnp.iinfo(jnp.int32).max
    shifted = least[jnp.maximum(jnp.arange(least.shape[0]) - value, 0)]
    with_item = jnp.where(shifted == unreachable, unreachable, shifted + weight)
    return jnp.where(real & (value > 0), jnp.minimum(least, with_item), least)


@functools.partial(jax.jit, static_argnums=3, compiler_options=COMPILER_OPTIONS)
def _least_weight_by_value(weights, value_units, valid, n_values):
    """[N, V+1] least total weight of a subset whose value (in grid units) is >= v; int32 max if none.
    weights, value_units: [N, T] int32; valid: [N, T] bool; n_values = V + 1 (static)."""
    unreachable = jnp.iinfo(jnp.int32).max

    def one_episode(weights, value_units, valid):
        def add_item(least, item):
            return add_to_least_weight(least, *item), None

        start = jnp.full(n_values, unreachable, jnp.int32).at[0].set(0)
        least, _ = jax.lax.scan(add_item, start, (weights, value_units, valid))
        # ">= v" semantics: a subset reaching v+1 also reaches v
        return jax.lax.cummin(least, axis=0, reverse=True)

    return jax.vmap(one_episode)(weights, value_units, valid)


def exact_batch(weights: np.ndarray, values: np.ndarray, lengths: np.ndarray, budgets) -> np.ndarray:
    """The true optimum for every episode and budget: [N, B] float64.

    ``weights``: [N, T] int; ``values``: [N, T] float (padding beyond ``lengths`` ignored).
    """
    budgets = np.asarray(budgets, np.int64)
    valid = np.arange(weights.shape[1])[None, :] < np.asarray(lengths)[:, None]
    positive = np.where(valid & (values > 0), values, 0.0)
    quantum = value_grid(positive)
    if quantum is not None:
        units = np.round(positive / quantum).astype(np.int64)
        # Value totals above what the largest budget can reach are never read: the table stops at
        # the fractional-knapsack bound (O(T·V) with V bounded by the budget, not by Σu: a
        # 200,000-step episode at 10 KB needs ~1,000 cells, not ~500,000). Rounded up to one of a
        # few sizes per power of two, so that chunks of a sweep share the compiled DP.
        reachable = np.minimum(units.sum(axis=1), value_bound(weights, units, valid, int(budgets.max())))
        n_values = _bucket(int(reachable.max()) + 1)
        if n_values * weights.shape[0] <= MAX_VALUE_CELLS * 16 and n_values <= MAX_VALUE_CELLS:
            least = np.asarray(
                _least_weight_by_value(weights.astype(np.int32), units.astype(np.int32), valid, n_values)
            )
            # best value at budget b = the largest v whose least weight fits (least is non-decreasing)
            best_units = np.stack([np.searchsorted(row, budgets, side="right") - 1 for row in least])
            return best_units * quantum
    return np.stack([exact(weights[n, : lengths[n]], values[n, : lengths[n]], budgets) for n in range(len(weights))])


def value_bound(weights: np.ndarray, units: np.ndarray, valid: np.ndarray, budget: int) -> np.ndarray:
    """[N] int64 upper bound on the value (grid units) of any subset weighing <= ``budget``: the
    fractional knapsack (items by value density, the last one cut), plus one unit against rounding.
    ``weights``, ``units``: [N, T] (value 0 beyond each episode's length via ``valid`` [N, T])."""
    weights = np.where(valid, weights, 0).astype(np.float64)
    units = np.where(valid, units, 0).astype(np.float64)
    density = np.where(units > 0, units / np.maximum(weights, 1e-9), -1.0)
    order = np.argsort(-density, axis=1, kind="stable")
    weights, units = np.take_along_axis(weights, order, 1), np.take_along_axis(units, order, 1)
    weight_before = np.cumsum(weights, axis=1) - weights  # weight of the denser items
    room = np.clip(budget - weight_before, 0, None)
    taken = np.where(weights <= room, 1.0, room / np.maximum(weights, 1e-9))  # whole, or the cut fraction
    return np.floor((units * taken).sum(axis=1)).astype(np.int64) + 1


def _bucket(n: int) -> int:
    """``n`` rounded up to a multiple of 1/8 of its power of two (at most 12.5% more)."""
    step = max(1 << max(n.bit_length() - 4, 0), 1)
    return -(-n // step) * step


def exact(weights: np.ndarray, values: np.ndarray, budgets) -> np.ndarray:
    """The true optimum at each budget by a float64 DP over capacity. ``weights``: [T] int,
    ``values``: [T] float, ``budgets``: [B]."""
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


def published_rule(weights: np.ndarray, values: np.ndarray, budgets) -> np.ndarray:
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


def check_mode(mode: str) -> str:
    """``mode`` if it is an oracle mode, else a ValueError listing the modes."""
    if mode not in ORACLE_MODES:
        raise ValueError(f"unknown oracle mode {mode!r}; expected one of {', '.join(ORACLE_MODES)}")
    return mode


def oracle_batch(
    costs: np.ndarray, utility: np.ndarray, lengths: np.ndarray, budgets, mode: str = "exact"
) -> np.ndarray:
    """[N, B] oracle utility of N episodes (``costs``: [N, T] one track's write costs; ``utility``:
    [N, T] float64; ``lengths``: [N] steps) at every budget, under oracle ``mode``."""
    if check_mode(mode) == "exact":
        return exact_batch(costs, utility, lengths, budgets)
    return np.stack(
        [published_rule(costs[n, : lengths[n]], utility[n, : lengths[n]], budgets) for n in range(len(lengths))]
    ).reshape(len(lengths), len(np.atleast_1d(budgets)))


# --- The exact oracle's chosen set (oracle_optimal; additive, exact_batch is unchanged) ----------
MAX_CHOICE_CELLS = 1 << 27  # table cells one episode's DP with back-tracking may use (int32 / bool)


def exact_choice(weights: np.ndarray, values: np.ndarray, budgets) -> np.ndarray:
    """An optimal 0/1 knapsack set at each budget: [B, T] bool, Σ weights <= budget and Σ values =
    the exact optimum (:func:`exact`). Items of value <= 0 are never chosen.

    ``weights``: [T] int, ``values``: [T] float. On a 2^-k grid: a DP over value (least weight for each
    exact value total, all rows kept) and a back-track per budget; otherwise a float64 DP over capacity
    with a keep table. Raises ValueError if the table would exceed MAX_CHOICE_CELLS.
    """
    weights = np.asarray(weights, np.int64)
    values = np.asarray(values, np.float64)
    budgets = np.asarray(budgets, np.int64)
    usable = values > 0
    quantum = value_grid(np.where(usable, values, 0.0))
    if quantum is not None:
        units = np.where(usable, np.round(values / quantum), 0).astype(np.int64)
        n_values = int(units.sum()) + 1
        if (len(weights) + 1) * n_values <= MAX_CHOICE_CELLS:
            return _choice_by_value(weights, units, n_values, budgets)
    capacity = int(min(budgets.max(), weights[usable].sum()))
    if len(weights) * (capacity + 1) > MAX_CHOICE_CELLS:
        raise ValueError(
            f"exact_choice: a capacity DP of {len(weights)} items x {capacity + 1} bytes is too large "
            f"(utilities are not on a 2^-k grid); use smaller budgets or grid utilities"
        )
    return _choice_by_capacity(weights, values, usable, capacity, budgets)


def _choice_by_value(weights, units, n_values, budgets) -> np.ndarray:
    unreachable = np.iinfo(np.int64).max // 4
    least = np.full((len(weights) + 1, n_values), unreachable, np.int64)  # row i: first i items, exact value
    least[0, 0] = 0
    for i, (weight, unit) in enumerate(zip(weights.tolist(), units.tolist())):
        least[i + 1] = least[i]
        if unit > 0:
            least[i + 1, unit:] = np.minimum(least[i, unit:], least[i, :-unit] + weight)
    # best exact value total that fits each budget, then walk back: an item is taken where the row changes
    fits = least[-1][None, :] <= budgets[:, None]  # [B, V]
    value = np.where(fits, np.arange(n_values)[None, :], 0).max(axis=1)  # [B]
    chosen = np.zeros((len(budgets), len(weights)), bool)
    for i in range(len(weights) - 1, -1, -1):
        taken = least[i + 1, value] != least[i, value]
        chosen[:, i] = taken
        value = value - np.where(taken, units[i], 0)
    return chosen


def _choice_by_capacity(weights, values, usable, capacity, budgets) -> np.ndarray:
    best = np.zeros(capacity + 1, np.float64)
    keep = np.zeros((len(weights), capacity + 1), bool)
    for i, (weight, value) in enumerate(zip(weights.tolist(), values.tolist())):
        if usable[i] and 0 < weight <= capacity:
            with_item = best[:-weight] + value
            keep[i, weight:] = with_item > best[weight:]
            best[weight:] = np.maximum(best[weight:], with_item)
    chosen = np.zeros((len(budgets), len(weights)), bool)
    room = np.minimum(budgets, capacity)
    for i in range(len(weights) - 1, -1, -1):
        taken = keep[i, room]
        chosen[:, i] = taken
        room = room - np.where(taken, weights[i], 0)
    return chosen


def exact_choice_batch(weights: np.ndarray, values: np.ndarray, lengths: np.ndarray, budgets) -> np.ndarray:
    """:func:`exact_choice` for every episode: [N, B, T] bool (False beyond each episode's length)."""
    budgets = np.asarray(budgets, np.int64)
    chosen = np.zeros((weights.shape[0], len(budgets), weights.shape[1]), bool)
    for n, length in enumerate(np.asarray(lengths).tolist()):
        chosen[n, :, :length] = exact_choice(weights[n, :length], values[n, :length], budgets)
    return chosen
