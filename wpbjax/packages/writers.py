"""The MEMAUDIT artifact's writers as batched JAX programs: [P] packages x [B] budgets at once.

Streaming writers (insertion-only, one group at a time, a ``lax.scan`` over groups):
  oracle_gvt      grouped value threshold: for each threshold tau in {F({u})/c_u : c_u <= B} U {0}
                  admit, per arriving group, the candidate of largest raw marginal among those that
                  fit, gain > 1e-12 and have marginal density >= tau - 1e-12 (ties: cheaper, then
                  larger id); keep the best store over the grid (ties within 1e-12: cheaper, then
                  the higher threshold).
  density_only    per group the fitting candidate of largest marginal density (ties: marginal,
                  cheaper, id).
  recency_raw     raw spans newest first (time, cost, id), each kept if it fits.
  reservoir_raw   raw spans in the artifact's stable-hash order of their ids, each kept if it fits.
  no_tombstone_gvt  oracle_gvt without tombstones and compound updates.
Offline writers (a ``fori_loop`` of at most G picks over the whole package):
  greedy          largest marginal density over every candidate of an unused group that fits.
  fact_only, summary_only   greedy over atomic facts / summaries only.
  no_tombstone_greedy       greedy without tombstones and compound updates.
(``opt`` and ``no_tombstone_opt`` are exact optima: wpbjax.packages.opt.)

Batching: every program carries explicit batch axes (packages x runs) rather than nested
``vmap``s: the same XLA program as vmap would give, traced in a fraction of the time, and with
the runs as the minor axis. Packages are split over every local device, in chunks.

Exactness: float64 under a scoped ``jax.enable_x64`` (the rest of wpbjax stays 32-bit); F adds
w_r h(t_r) one unit after another as the artifact does, so its exact ties fall the same way.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.packages.catalog import OFFLINE, STREAMING, WRITERS  # noqa: F401
from wpbjax.packages.model import RAW_KINDS, TIE, TOMBSTONE_KINDS, PackageBatch, kind_mask
from wpbjax.runtime.devices import COMPILER_OPTIONS, local_devices, place

_H_JAX = {"min": lambda z: jnp.minimum(1.0, z), "log1p": jnp.log1p, "linear": lambda z: z}
_UNROLL_UNITS = 64


def _ordered_sum(terms: jax.Array, axis: int = -1) -> jax.Array:
    """Sum over ``axis``, one unit after another (bit-equal to the artifact's loop)."""
    terms = jnp.moveaxis(terms, axis, 0)
    if terms.shape[0] <= _UNROLL_UNITS:
        total = jnp.zeros(terms.shape[1:], terms.dtype)
        for r in range(terms.shape[0]):
            total = total + terms[r]
        return total
    return jax.lax.scan(lambda acc, t: (acc + t, None), jnp.zeros(terms.shape[1:], terms.dtype), terms)[0]


def _objective(weight, totals, h, axis: int = -1):
    """F from totals along the unit ``axis``: weight and totals broadcast -> one axis fewer."""
    return _ordered_sum(weight * _H_JAX[h](totals), axis)


def _lex_argmax(ok, keys, axis: int = -1):
    """Along ``axis``: index of the largest candidate under lexicographic ``keys`` among ``ok``, and
    whether there is any. ok: bool, keys broadcastable to it -> (int32, bool), ``axis`` removed."""
    mask = ok
    for key in keys:
        best = jnp.max(jnp.where(mask, key, -jnp.inf), axis=axis, keepdims=True)
        mask = mask & (key == best)
    return jnp.argmax(mask, axis=axis).astype(jnp.int32), jnp.any(ok, axis=axis)


def _add_picked(values, onehot, axes):
    """Sum of ``values`` where ``onehot`` (one True or none) over ``axes``: exact (zeros plus one term)."""
    return jnp.sum(jnp.where(onehot, values, jnp.zeros((), values.dtype)), axis=axes, dtype=values.dtype)


def _stream(pkgs, budget, threshold, rule, h):
    """Streaming passes, M per package: budget [1, M] int32, threshold [P|1, M] float64 ->
    (F of each store [P, M], its cost [P, M], chosen [P, M, G]). One ``lax.scan`` over groups.

    Runs are the minor axis (state [P, R, M]): the unit-by-unit sums then add contiguous
    vectors, cheaper than strided ones (docs/performance.md)."""
    weight = pkgs["weight"][:, :, None]  # [P, R, 1]
    n_cand = pkgs["cost"].shape[2]

    def step(carry, group):
        totals, used = carry  # [P, R, M], [P, M]
        cov, cost, valid, rank = group  # [P, C, R], [P, C] x3
        after = totals[:, None] + cov[:, :, :, None]  # [P, C, R, M]
        marginal = _objective(weight[:, None], after, h, 2) - _objective(weight, totals, h, 1)[:, None]  # [P, C, M]
        fcost = cost[:, :, None].astype(marginal.dtype)
        density = marginal / jnp.maximum(fcost, 1e-12)
        ok = valid[:, :, None] & (used[:, None] + cost[:, :, None] <= budget[:, None]) & (marginal > TIE)
        frank = rank[:, :, None].astype(marginal.dtype)
        if rule == "threshold":  # admissible by density, then the largest raw marginal
            ok = ok & (density + TIE >= threshold[:, None])
            keys = (marginal, -fcost, frank)
        else:  # density_only: the largest marginal density
            keys = (density, marginal, -fcost, frank)
        pick, any_ok = _lex_argmax(ok, keys, 1)  # [P, M]
        onehot = (jnp.arange(n_cand)[None, :, None] == pick[:, None]) & any_ok[:, None]  # [P, C, M]
        totals = totals + _add_picked(cov[:, :, :, None], onehot[:, :, None], 1)
        used = used + _add_picked(cost[:, :, None], onehot, 1)
        return (totals, used), jnp.where(any_ok, pick, -1)

    n_runs = max(budget.shape[1], threshold.shape[1])
    init = (jnp.zeros(weight.shape[:2] + (n_runs,), weight.dtype), jnp.zeros((weight.shape[0], n_runs), jnp.int32))
    xs = tuple(jnp.moveaxis(pkgs[k], 1, 0) for k in ("coverage", "cost", "valid", "rank"))
    (totals, used), chosen = jax.lax.scan(step, init, xs)
    return _objective(weight, totals, h, 1), used, jnp.moveaxis(chosen, 0, -1)


def _best_over_grid(values, costs, chosen, live):
    """The artifact's fold over thresholds (descending): strictly better by 1e-12, or as good and cheaper.
    values, costs, live: [P, B, K]; chosen [P, B, K, G] -> chosen [P, B, G]."""

    def fold(best, run):
        value, cost, pick, ok = run
        b_value, b_cost, b_pick = best
        better = ok & ((value > b_value + TIE) | ((jnp.abs(value - b_value) <= TIE) & (cost < b_cost)))
        return (
            jnp.where(better, value, b_value),
            jnp.where(better, cost, b_cost),
            jnp.where(better[..., None], pick, b_pick),
        ), None

    init = (
        jnp.full(values.shape[:2], -1.0, values.dtype),
        jnp.zeros(costs.shape[:2], costs.dtype),
        jnp.full(chosen.shape[:2] + chosen.shape[3:], -1, jnp.int32),
    )
    runs = tuple(jnp.moveaxis(a, 2, 0) for a in (values, costs, chosen, live))
    return jax.lax.scan(fold, init, runs)[0][2]


@functools.partial(jax.jit, static_argnames=("h",), compiler_options=COMPILER_OPTIONS)
def _gvt_program(pkgs, budget_runs, thresholds, live, fold_index, h):
    """One streaming pass per run (budget_runs [M], thresholds/live [P, M]); then per budget the
    best run over its thresholds (fold_index [B, K]) -> chosen [P, B, G]."""
    values, costs, chosen = _stream(pkgs, budget_runs[None, :], thresholds, "threshold", h)
    index = jnp.maximum(fold_index, 0)
    ok = (fold_index >= 0)[None] & live[:, index]
    return _best_over_grid(values[:, index], costs[:, index], chosen[:, index], ok)


@functools.partial(jax.jit, static_argnames=("h",), compiler_options=COMPILER_OPTIONS)
def _density_program(pkgs, budgets, h):
    no_threshold = jnp.zeros((1, budgets.shape[0]), pkgs["weight"].dtype)
    return _stream(pkgs, budgets[None, :], no_threshold, "density", h)[2]


@functools.partial(jax.jit, compiler_options=COMPILER_OPTIONS)
def _admission_program(pkgs, budgets, order):
    """Keep candidates in ``order: [P, K]`` (flat g*C+c, -1 padding) while they fit, one per group."""
    n_pkg, n_groups, n_cand = pkgs["cost"].shape
    flat_cost = pkgs["cost"].reshape(n_pkg, -1)

    def step(carry, flat):  # flat: [P]
        used, chosen = carry  # [P, B], [P, B, G]
        g, c = jnp.maximum(flat, 0) // n_cand, jnp.maximum(flat, 0) % n_cand
        cost = jnp.take_along_axis(flat_cost, jnp.maximum(flat, 0)[:, None], axis=1)  # [P, 1]
        here = jnp.arange(n_groups) == g[:, None, None]  # [P, 1, G]
        group_free = ~jnp.any(here & (chosen >= 0), axis=-1)  # [P, B]
        take = (flat >= 0)[:, None] & group_free & (used + cost <= budgets[None, :])
        chosen = jnp.where(take[..., None] & here, c[:, None, None], chosen)
        return (jnp.where(take, used + cost, used), chosen), None

    init = (
        jnp.zeros((n_pkg, budgets.shape[0]), jnp.int32),
        jnp.full((n_pkg, budgets.shape[0], n_groups), -1, jnp.int32),
    )
    return jax.lax.scan(step, init, jnp.moveaxis(order, 1, 0))[0][1]


@functools.partial(jax.jit, static_argnames=("h",), compiler_options=COMPILER_OPTIONS)
def _greedy_program(pkgs, budgets, h):
    """Offline greedy by marginal density over all candidates: at most G picks (a ``fori_loop``)."""
    weight = pkgs["weight"][:, None, :]  # [P, 1, R]
    cov, cost = pkgs["coverage"][:, None], pkgs["cost"][:, None]  # [P, 1, G, C, R], [P, 1, G, C]
    n_pkg, n_groups, n_cand = pkgs["cost"].shape
    fcost = cost.astype(weight.dtype)
    flat_keys = [k.reshape(n_pkg, 1, -1) for k in (-fcost, pkgs["rank"][:, None].astype(weight.dtype))]

    def pick_one(_, state):
        totals, used, chosen = state  # [P, B, R], [P, B], [P, B, G]
        after = totals[:, :, None, None, :] + cov  # [P, B, G, C, R]
        marginal = _objective(weight[:, :, None, None, :], after, h) - _objective(weight, totals, h)[..., None, None]
        ok = (
            pkgs["valid"][:, None]
            & (chosen[..., None] < 0)
            & (used[..., None, None] + cost <= budgets[None, :, None, None])
            & (marginal > TIE)
        )
        flat_marginal = marginal.reshape(marginal.shape[:2] + (-1,))
        density = flat_marginal / jnp.maximum(fcost.reshape(n_pkg, 1, -1), 1e-12)
        pick, any_ok = _lex_argmax(ok.reshape(flat_marginal.shape), [density, flat_marginal] + flat_keys)
        onehot = ((jnp.arange(n_groups * n_cand) == pick[..., None]) & any_ok[..., None]).reshape(marginal.shape)
        totals = totals + _add_picked(cov, onehot[..., None], (2, 3))
        used = used + _add_picked(cost, onehot, (2, 3))
        chosen = jnp.where(jnp.any(onehot, -1), jnp.argmax(onehot, -1).astype(jnp.int32), chosen)
        return totals, used, chosen

    n_budgets = budgets.shape[0]
    init = (
        jnp.zeros((n_pkg, n_budgets) + weight.shape[2:], weight.dtype),
        jnp.zeros((n_pkg, n_budgets), jnp.int32),
        jnp.full((n_pkg, n_budgets, n_groups), -1, jnp.int32),
    )
    return jax.lax.fori_loop(0, n_groups, pick_one, init)[2]


def _device_arrays(batch: PackageBatch) -> dict:
    return {
        "cost": np.asarray(batch.cost, np.int32),
        "valid": np.asarray(batch.valid, bool),
        "coverage": np.asarray(batch.coverage, np.float64),
        "weight": np.asarray(batch.weight, np.float64),
        "rank": np.asarray(batch.rank, np.int32),
    }


def gvt_thresholds(batch: PackageBatch, budgets, h: str = "min"):
    """The distinct thresholds {F({u})/c_u : c_u <= B} U {0} per package and budget, descending,
    laid out as runs: (thresholds [P, M] float64, live [P, M] bool, budget of each run [M] int32,
    fold_index [B, K] int32: budget b's runs in M, -1 padding). Each budget's block is as wide as
    its most thresholds in the batch (budget 1 has a few, budget 16 all)."""
    from wpbjax.packages.opt import singleton_values

    n_pkg = batch.cost.shape[0]
    density = (singleton_values(batch, h) / np.maximum(batch.cost, 1e-12)).reshape(n_pkg, -1)
    cost = np.asarray(batch.cost).reshape(n_pkg, -1)
    valid = np.asarray(batch.valid).reshape(n_pkg, -1)
    blocks, lives, budget_of_run, fold = [], [], [], []
    for budget in budgets:
        candidate = valid & (cost <= budget)
        taus = -np.sort(-np.concatenate([np.where(candidate, density, -np.inf), np.zeros((n_pkg, 1))], 1), 1)
        live = np.isfinite(taus) & np.concatenate([np.ones((n_pkg, 1), bool), taus[:, 1:] != taus[:, :-1]], 1)
        order = np.argsort(~live, axis=1, kind="stable")  # distinct thresholds first, still descending
        taus, live = np.take_along_axis(taus, order, 1), np.take_along_axis(live, order, 1)
        width = int(live.sum(axis=1).max())
        start = sum(len(block) for block in blocks)
        blocks.append(np.where(live, taus, 0.0)[:, :width].T)
        lives.append(live[:, :width].T)
        budget_of_run.extend([int(budget)] * width)
        fold.append(list(range(start, start + width)))
    n_taus = max(len(f) for f in fold)
    fold_index = np.array([f + [-1] * (n_taus - len(f)) for f in fold], np.int32)
    return (
        np.concatenate(blocks, 0).T.copy(),
        np.concatenate(lives, 0).T.copy(),
        np.asarray(budget_of_run, np.int32),
        fold_index,
    )


def _run_chunks(program, batch: PackageBatch, budgets, extra, chunk: int, shared=()):
    """Run ``program(pkgs, budgets, *extra[rows], *shared)`` over package chunks: chosen [P, B, G] int32."""
    out = []
    n_pkg = batch.cost.shape[0]
    devices = local_devices()
    chunk = -(-min(chunk, n_pkg) // len(devices)) * len(devices)  # packages split over every device
    for start in range(0, n_pkg, chunk):
        real = np.arange(start, min(n_pkg, start + chunk))
        rows = np.concatenate([real, np.full(chunk - len(real), real[-1])])  # one shape: one compile
        inputs = place((_device_arrays(batch.take(rows)), *[np.asarray(e[rows]) for e in extra]), devices)
        result = program(inputs[0], jnp.asarray(budgets, jnp.int32), *inputs[1:], *[jnp.asarray(x) for x in shared])
        out.append(np.asarray(result)[: len(real)])
    return np.concatenate(out, axis=0)


def admission_order(batch: PackageBatch, keys) -> np.ndarray:
    """Raw candidates sorted by ``keys`` ([P, G, C] arrays, primary first, ascending), as flat
    indices [P, K] (-1 padding)."""
    raw = kind_mask(batch.kind, RAW_KINDS) & np.asarray(batch.valid)
    n_pkg = raw.shape[0]
    flat_raw = raw.reshape(n_pkg, -1)
    flat_keys = [np.asarray(k).reshape(n_pkg, -1) for k in keys]
    order = np.lexsort(tuple(reversed(flat_keys)) + (~flat_raw,), axis=-1)
    width = max(1, int(flat_raw.sum(axis=1).max()))
    order = order[:, :width]
    return np.where(np.take_along_axis(flat_raw, order, axis=1), order, -1).astype(np.int32)


def write(
    method: str, batch: PackageBatch, budgets, h: str = "min", reservoir_key=None, chunk: int = 1024
) -> tuple[PackageBatch, np.ndarray]:
    """Stores of one writer for every package and budget: (the batch it chose from, chosen [P, B, G]).

    The returned batch is ``batch`` or its filtered view (no_tombstone_*, fact_only, summary_only):
    score the stores against it. ``reservoir_key: [P, G, C] int64`` is the artifact's stable hash of
    each candidate id (needed by reservoir_raw; see wpbjax.packages.ids).
    """
    budgets = np.asarray([int(b) for b in budgets], np.int32)
    if method in ("no_tombstone_gvt", "no_tombstone_greedy"):
        batch = batch.only_kinds(~kind_mask(batch.kind, TOMBSTONE_KINDS))
    elif method in ("fact_only", "summary_only"):
        batch = batch.only_kinds(kind_mask(batch.kind, ("atomic_fact",) if method == "fact_only" else ("summary",)))
    with jax.enable_x64(True):
        if method in ("oracle_gvt", "no_tombstone_gvt"):
            thresholds, live, budget_runs, fold_index = gvt_thresholds(batch, budgets, h)
            chosen = _run_chunks(
                functools.partial(_gvt_program, h=h),
                batch,
                budget_runs,
                (thresholds, live),
                max(1, chunk * len(budgets) // max(1, thresholds.shape[-1]) * 4),
                (fold_index,),
            )
        elif method == "density_only":
            chosen = _run_chunks(functools.partial(_density_program, h=h), batch, budgets, (), chunk)
        elif method in ("greedy", "fact_only", "summary_only", "no_tombstone_greedy"):
            chosen = _run_chunks(functools.partial(_greedy_program, h=h), batch, budgets, (), chunk)
        elif method in ("recency_raw", "reservoir_raw"):
            if method == "recency_raw":  # newest first, then cheaper, then id
                keys = (-np.asarray(batch.time, np.int64), batch.cost, batch.rank)
            elif reservoir_key is None:
                raise ValueError("reservoir_raw needs the candidates' id hashes (reservoir_key)")
            else:  # the artifact's stable hash of the id, then cost
                keys = (np.asarray(reservoir_key, np.int64), batch.cost, batch.rank)
            order = admission_order(batch, keys)
            chosen = _run_chunks(_admission_program, batch, budgets, (order,), chunk)
        else:
            raise ValueError(f"unknown writer {method!r}; choose from opt, no_tombstone_opt, {', '.join(WRITERS)}")
    return batch, chosen
