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
Offline writers (a ``fori_loop`` of at most G picks over the whole package):
  greedy          largest marginal density over every candidate of an unused group that fits.
  fact_only, summary_only        greedy over atomic facts / summaries only.
  no_tombstone_gvt / _greedy     oracle_gvt / greedy without tombstones and compound updates.
(``opt`` and ``no_tombstone_opt`` are exact optima: wpbjax.packages.opt.)

Exactness: float64 under a scoped ``jax.enable_x64`` (the rest of wpbjax stays 32-bit); F adds
w_r h(t_r) one unit after another as the artifact does, so its exact ties fall the same way.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.packages.model import RAW_KINDS, TIE, TOMBSTONE_KINDS, PackageBatch, kind_mask

STREAMING = ("oracle_gvt", "density_only", "recency_raw", "reservoir_raw", "no_tombstone_gvt")
OFFLINE = ("greedy", "fact_only", "summary_only", "no_tombstone_greedy")
WRITERS = STREAMING + OFFLINE
_H_JAX = {"min": lambda z: jnp.minimum(1.0, z), "log1p": jnp.log1p, "linear": lambda z: z}
_UNROLL_UNITS = 64


def _ordered_sum(terms: jax.Array) -> jax.Array:
    """sum over the last axis, one unit after another (bit-equal to the artifact's loop): [..., R] -> [...]."""
    n_units = terms.shape[-1]
    if n_units <= _UNROLL_UNITS:
        total = jnp.zeros(terms.shape[:-1], terms.dtype)
        for r in range(n_units):
            total = total + terms[..., r]
        return total
    total, _ = jax.lax.scan(lambda acc, t: (acc + t, None), jnp.zeros(terms.shape[:-1], terms.dtype),
                            jnp.moveaxis(terms, -1, 0))
    return total


def _objective(weight, totals, h):
    """F from totals: weight [R], totals [..., R] -> [...]."""
    return _ordered_sum(weight * _H_JAX[h](totals))


def _lex_argmax(ok, keys):
    """Index of the largest candidate under lexicographic ``keys`` among ``ok``; and whether any."""
    mask = ok
    for key in keys:
        best = jnp.max(jnp.where(mask, key, -jnp.inf))
        mask = mask & (key == best)
    return jnp.argmax(mask), jnp.any(ok)


def _group_step(pkg, budget, threshold, rule, h):
    """One arriving group of a streaming marginal writer; carry = (totals [R], used cost)."""
    weight = pkg["weight"]

    def step(carry, group):
        totals, used = carry
        cov, cost, valid, rank = group
        marginal = _objective(weight, totals[None, :] + cov, h) - _objective(weight, totals, h)   # [C]
        density = marginal / jnp.maximum(cost.astype(marginal.dtype), 1e-12)
        ok = valid & (used + cost <= budget) & (marginal > TIE)
        if rule == "threshold":
            ok = ok & (density + TIE >= threshold)
            keys = (marginal, -cost.astype(marginal.dtype), rank.astype(marginal.dtype))
        else:
            keys = (density, marginal, -cost.astype(marginal.dtype), rank.astype(marginal.dtype))
        pick, any_ok = _lex_argmax(ok, keys)
        totals = jnp.where(any_ok, totals + cov[pick], totals)
        used = jnp.where(any_ok, used + cost[pick], used)
        return (totals, used), jnp.where(any_ok, pick, -1).astype(jnp.int32)

    return step


def _stream(pkg, budget, threshold, rule, h):
    """Run one streaming pass: -> (F of the store, its cost, chosen [G])."""
    step = _group_step(pkg, budget, threshold, rule, h)
    init = (jnp.zeros_like(pkg["weight"]), jnp.zeros((), jnp.int32))
    (totals, used), chosen = jax.lax.scan(
        step, init, (pkg["coverage"], pkg["cost"], pkg["valid"], pkg["rank"]))
    return _objective(pkg["weight"], totals, h), used, chosen


def _best_over_grid(values, costs, chosen, live):
    """The artifact's fold over thresholds (descending): strictly better by 1e-12, or as good and cheaper."""
    def fold(best, run):
        value, cost, pick, ok = run
        b_value, b_cost, b_pick = best
        better = ok & ((value > b_value + TIE) | ((jnp.abs(value - b_value) <= TIE) & (cost < b_cost)))
        return (jnp.where(better, value, b_value), jnp.where(better, cost, b_cost),
                jnp.where(better, pick, b_pick)), None

    init = (jnp.asarray(-1.0, values.dtype), jnp.zeros((), costs.dtype), jnp.full(chosen.shape[1:], -1, jnp.int32))
    (_, _, pick), _ = jax.lax.scan(fold, init, (values, costs, chosen, live))
    return pick


@functools.partial(jax.jit, static_argnames=("h",))
def _gvt_program(pkgs, budgets, thresholds, live, h):
    """thresholds, live: [P, B, K] (descending, masked) -> chosen [P, B, G]."""
    def one(pkg, budget, taus, live_k):
        runs = jax.vmap(lambda tau: _stream(pkg, budget, tau, "threshold", h))(taus)
        return _best_over_grid(*runs, live_k)

    per_budget = jax.vmap(one, in_axes=(None, 0, 0, 0))
    return jax.vmap(per_budget, in_axes=(0, None, 0, 0))(pkgs, budgets, thresholds, live)


@functools.partial(jax.jit, static_argnames=("h",))
def _density_program(pkgs, budgets, h):
    def one(pkg, budget):
        return _stream(pkg, budget, 0.0, "density", h)[2]

    return jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None))(pkgs, budgets)


@jax.jit
def _admission_program(pkgs, budgets, order):
    """Keep candidates in ``order: [P, K]`` (flat g*C+c, -1 padding) while they fit, one per group."""
    def one(pkg, budget, order_p):
        n_groups, n_cand = pkg["cost"].shape

        def step(carry, flat):
            used, chosen = carry
            g, c = jnp.maximum(flat, 0) // n_cand, jnp.maximum(flat, 0) % n_cand
            cost = pkg["cost"][g, c]
            take = (flat >= 0) & (chosen[g] < 0) & (used + cost <= budget)
            return (jnp.where(take, used + cost, used), chosen.at[g].set(jnp.where(take, c, chosen[g]).astype(jnp.int32))), None

        init = (jnp.zeros((), jnp.int32), jnp.full((n_groups,), -1, jnp.int32))
        return jax.lax.scan(step, init, order_p)[0][1]

    return jax.vmap(jax.vmap(one, in_axes=(None, 0, None)), in_axes=(0, None, 0))(pkgs, budgets, order)


@functools.partial(jax.jit, static_argnames=("h",))
def _greedy_program(pkgs, budgets, h):
    """Offline greedy by marginal density over all candidates (at most G picks)."""
    def one(pkg, budget):
        weight, cov, cost = pkg["weight"], pkg["coverage"], pkg["cost"]
        n_groups = cost.shape[0]
        fcost = cost.astype(cov.dtype)

        def pick_one(_, state):
            totals, used, chosen = state
            marginal = _objective(weight, totals + cov, h) - _objective(weight, totals, h)     # [G, C]
            ok = pkg["valid"] & (chosen[:, None] < 0) & (used + cost <= budget) & (marginal > TIE)
            keys = (marginal / jnp.maximum(fcost, 1e-12), marginal, -fcost, pkg["rank"].astype(cov.dtype))
            flat, any_ok = _lex_argmax(ok.reshape(-1), [k.reshape(-1) for k in keys])
            g, c = flat // cost.shape[1], flat % cost.shape[1]
            return (jnp.where(any_ok, totals + cov[g, c], totals), jnp.where(any_ok, used + cost[g, c], used),
                    chosen.at[g].set(jnp.where(any_ok, c, chosen[g]).astype(jnp.int32)))

        init = (jnp.zeros_like(weight), jnp.zeros((), jnp.int32), jnp.full((n_groups,), -1, jnp.int32))
        return jax.lax.fori_loop(0, n_groups, pick_one, init)[2]

    return jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None))(pkgs, budgets)


def _device_arrays(batch: PackageBatch) -> dict:
    return {"cost": jnp.asarray(batch.cost, jnp.int32), "valid": jnp.asarray(batch.valid),
            "coverage": jnp.asarray(batch.coverage, jnp.float64), "weight": jnp.asarray(batch.weight, jnp.float64),
            "rank": jnp.asarray(batch.rank, jnp.int32)}


def gvt_thresholds(batch: PackageBatch, budgets, h: str = "min") -> tuple[np.ndarray, np.ndarray]:
    """The threshold grid per package and budget, descending: ([P, B, K] float64, [P, B, K] live)."""
    from wpbjax.packages.opt import singleton_values

    density = singleton_values(batch, h) / np.maximum(batch.cost, 1e-12)
    density = density.reshape(density.shape[0], -1)
    cost = np.asarray(batch.cost).reshape(len(density), -1)
    valid = np.asarray(batch.valid).reshape(len(density), -1)
    grids, lives = [], []
    for budget in budgets:
        live = valid & (cost <= budget)
        taus = np.concatenate([np.where(live, density, -np.inf), np.zeros((len(density), 1))], axis=1)
        taus = -np.sort(-taus, axis=1)
        grids.append(taus)
        lives.append(np.isfinite(taus))
    thresholds, live = np.stack(grids, 1), np.stack(lives, 1)
    width = int(live.sum(axis=2).max())          # trim the padding every package shares
    return np.where(live, thresholds, 0.0)[..., :width], live[..., :width]


def _run_chunks(program, batch: PackageBatch, budgets, extra, chunk: int):
    """Run ``program(pkgs, budgets, *extra[rows])`` over package chunks: chosen [P, B, G] int32."""
    out = []
    n_pkg = batch.cost.shape[0]
    chunk = min(chunk, n_pkg)
    for start in range(0, n_pkg, chunk):
        real = np.arange(start, min(n_pkg, start + chunk))
        rows = np.concatenate([real, np.full(chunk - len(real), real[-1])])  # one shape: one compile
        part = batch.take(rows)
        result = program(_device_arrays(part), jnp.asarray(budgets, jnp.int32), *[jnp.asarray(e[rows]) for e in extra])
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


def write(method: str, batch: PackageBatch, budgets, h: str = "min", reservoir_key=None,
          chunk: int = 4096) -> tuple[PackageBatch, np.ndarray]:
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
            thresholds, live = gvt_thresholds(batch, budgets, h)
            chosen = _run_chunks(functools.partial(_gvt_program, h=h), batch, budgets, (thresholds, live),
                                 max(1, chunk // max(1, thresholds.shape[-1]) * 8))
        elif method == "density_only":
            chosen = _run_chunks(functools.partial(_density_program, h=h), batch, budgets, (), chunk)
        elif method in ("greedy", "fact_only", "summary_only", "no_tombstone_greedy"):
            chosen = _run_chunks(functools.partial(_greedy_program, h=h), batch, budgets, (), chunk)
        elif method in ("recency_raw", "reservoir_raw"):
            if method == "recency_raw":      # newest first, then cheaper, then id
                keys = (-np.asarray(batch.time, np.int64), batch.cost, batch.rank)
            elif reservoir_key is None:
                raise ValueError("reservoir_raw needs the candidates' id hashes (reservoir_key)")
            else:                              # the artifact's stable hash of the id, then cost
                keys = (np.asarray(reservoir_key, np.int64), batch.cost, batch.rank)
            order = admission_order(batch, keys)
            chosen = _run_chunks(_admission_program, batch, budgets, (order,), chunk)
        else:
            raise ValueError(f"unknown writer {method!r}; choose from opt, no_tombstone_opt, {', '.join(WRITERS)}")
    return batch, chosen
