"""``memaudit_small``: the MEMAUDIT artifact's base sweep packages, bit-exact, many seeds at once.

Facts from the artifact (``oraclemem/evaluate.py::generate_synthetic_instance``): per seed one
``random.Random(seed)``; per fact i, ``choice([1.0, 1.2, 1.4])`` (the fact unit's weight) then
``randint(0, 1)`` (the raw span's extra cost); per update i, ``randint(0, 2)`` twice (current and
invalidation weights ``2.0 + 0.25 k``). Everything else (coverage, other costs and weights) is the
same for every seed, so the few integers are drawn on the host and the arrays are built at once.

Defaults (3 facts, 2 updates): 7 groups, 25 candidates, 11 units.
"""

from __future__ import annotations

import dataclasses
import functools
import random

import numpy as np

from wpbjax.packages.ids import hash_prefixed
from wpbjax.packages.model import PackageBatch, PackageMeta, PackageSet, kind_id

FACT_WEIGHTS = (1.0, 1.2, 1.4)
CONTEXT_WEIGHT = 0.35
STALE_WEIGHT = 0.15


@dataclasses.dataclass(frozen=True)
class _Candidate:
    suffix: str  # candidate id without the "s{seed}_" prefix
    kind: str
    cost: int
    coverage: dict  # unit suffix -> fidelity


@dataclasses.dataclass(frozen=True)
class Template:
    """The seed-independent shape of memaudit_small for given counts (groups in arrival order)."""

    groups: tuple[tuple[str, tuple[_Candidate, ...]], ...]  # (group suffix, candidates in (cost, id) order)
    units: tuple[str, ...]  # unit suffixes in the artifact's dict order
    fact_slots: tuple[tuple[int, int, int], ...]  # per fact: (unit index, group, raw candidate index)
    update_units: tuple[tuple[int, int], ...]  # per update: (current unit, invalidation unit)


def _fact_group(index: int) -> tuple[str, list[_Candidate]]:
    unit, context = f"fact:{index}", f"context:{index // 2}"
    exp = f"fact_{index}"
    return exp, [
        _Candidate(f"{exp}_raw_span", "raw_span", 5, {unit: 1.0, context: 0.4}),  # +randint(0, 1)
        _Candidate(f"{exp}_atomic_fact", "atomic_fact", 2, {unit: 1.0}),
        _Candidate(f"{exp}_summary", "summary", 3, {unit: 0.7, context: 0.5}),
    ]


def _update_groups(index: int) -> list[tuple[str, list[_Candidate]]]:
    stale, current, invalid = (
        f"stale:pref:{index}:old",
        f"current:pref:{index}:new",
        f"invalid:pref:{index}:old_after_update",
    )
    old, upd = f"pref_{index}_old", f"pref_{index}_update"
    return [
        (
            old,
            [
                _Candidate(f"{old}_raw_span", "raw_span", 4, {stale: 1.0}),
                _Candidate(f"{old}_atomic_fact", "atomic_fact", 2, {stale: 1.0}),
                _Candidate(f"{old}_summary", "summary", 3, {stale: 0.75}),
            ],
        ),
        (
            upd,
            [
                _Candidate(f"{upd}_raw_span", "raw_span", 6, {current: 1.0, invalid: 0.45, stale: 0.2}),
                _Candidate(f"{upd}_atomic_fact", "atomic_fact", 2, {current: 1.0}),
                _Candidate(f"{upd}_tombstone", "tombstone", 1, {invalid: 1.0}),
                _Candidate(f"{upd}_compound_update", "compound_update", 3, {current: 1.0, invalid: 1.0}),
                _Candidate(f"{upd}_summary", "summary", 4, {current: 0.75, invalid: 0.75, stale: 0.1}),
            ],
        ),
    ]


@functools.lru_cache(maxsize=16)
def template(normal_count: int = 3, update_count: int = 2) -> Template:
    units: dict[str, None] = {}
    groups: list[tuple[str, list[_Candidate]]] = []
    for index in range(normal_count):
        units.setdefault(f"fact:{index}")
        units.setdefault(f"context:{index // 2}")
        groups.append(_fact_group(index))
    for index in range(update_count):
        for name in (f"stale:pref:{index}:old", f"current:pref:{index}:new", f"invalid:pref:{index}:old_after_update"):
            units.setdefault(name)
        groups.extend(_update_groups(index))
    unit_list = tuple(units)
    # The raw span's extra cost is drawn per seed; (cost, id) order must not depend on it:
    # fact groups' raw span (5 or 6) is their most expensive candidate either way.
    ordered = tuple((exp, tuple(sorted(cands, key=lambda c: (c.cost, c.suffix)))) for exp, cands in groups)
    fact_slots = tuple(
        (unit_list.index(f"fact:{i}"), i, [c.kind for c in ordered[i][1]].index("raw_span"))
        for i in range(normal_count)
    )
    update_units = tuple(
        (unit_list.index(f"current:pref:{i}:new"), unit_list.index(f"invalid:pref:{i}:old_after_update"))
        for i in range(update_count)
    )
    return Template(ordered, unit_list, fact_slots, update_units)


def draw_seed(seed: int, normal_count: int = 3, update_count: int = 2) -> tuple[list[int], list[int], list[int]]:
    """The artifact's draws for one seed, in its order: (fact weight picks, raw extras, update picks)."""
    rng = random.Random(seed)
    fact_pick, raw_extra = [], []
    for _ in range(normal_count):
        fact_pick.append(FACT_WEIGHTS.index(rng.choice(FACT_WEIGHTS)))
        raw_extra.append(rng.randint(0, 1))
    update_pick = []
    for _ in range(update_count):
        update_pick.append(rng.randint(0, 2))  # current weight 2.0 + 0.25 k
        update_pick.append(rng.randint(0, 2))  # invalidation weight 2.0 + 0.25 k
    return fact_pick, raw_extra, update_pick


@functools.lru_cache(maxsize=16)
def static_arrays(normal_count: int, update_count: int):
    """Seed-independent arrays: cost, valid, kind, coverage, base weight, invalidation, rank, time."""
    tpl = template(normal_count, update_count)
    n_groups, n_units = len(tpl.groups), len(tpl.units)
    n_cand = max(len(c) for _, c in tpl.groups)
    unit_index = {u: r for r, u in enumerate(tpl.units)}
    ids = sorted(c.suffix for _, cands in tpl.groups for c in cands)  # common "s{seed}_" prefix
    cost = np.zeros((n_groups, n_cand), np.int32)
    valid = np.zeros((n_groups, n_cand), bool)
    kind = np.full((n_groups, n_cand), -1, np.int32)
    rank = np.full((n_groups, n_cand), -1, np.int32)
    coverage = np.zeros((n_groups, n_cand, n_units))
    for g, (_, cands) in enumerate(tpl.groups):
        for c, cand in enumerate(cands):
            cost[g, c], valid[g, c], kind[g, c] = cand.cost, True, kind_id(cand.kind)
            rank[g, c] = ids.index(cand.suffix)
            for unit, fidelity in cand.coverage.items():
                coverage[g, c, unit_index[unit]] = fidelity
    weight = np.array(
        [
            CONTEXT_WEIGHT if u.startswith("context:") else STALE_WEIGHT if u.startswith("stale:") else 0.0
            for u in tpl.units
        ]
    )
    invalidation = np.array([u.startswith("invalid:") for u in tpl.units])
    time = np.where(valid, np.arange(n_groups, dtype=np.int32)[:, None], 0).astype(np.int32)
    return cost, valid, kind, coverage, weight, invalidation, rank, time


def memaudit_small(seeds, normal_count: int = 3, update_count: int = 2, with_meta: bool = True) -> PackageSet:
    """memaudit_small packages for the given seeds: batch [S, G, C(, R)] plus names."""
    if normal_count < 0 or update_count < 0 or normal_count + update_count == 0:
        raise ValueError("memaudit_small needs normal_count + update_count >= 1 (both >= 0)")
    seeds = [int(s) for s in seeds]
    tpl = template(normal_count, update_count)
    draws = [draw_seed(s, normal_count, update_count) for s in seeds]
    n = len(seeds)
    fact_pick = np.array([d[0] for d in draws], np.int64).reshape(n, normal_count)
    raw_extra = np.array([d[1] for d in draws], np.int32).reshape(n, normal_count)
    update_pick = np.array([d[2] for d in draws], np.int64).reshape(n, update_count, 2)
    batch = build_batch(np, fact_pick, raw_extra, update_pick, normal_count, update_count)
    meta = _meta(seeds, tpl) if with_meta else PackageMeta((), (), (), (), tuple(seeds))
    return PackageSet(batch, meta, reservoir_keys(seeds, normal_count, update_count))


@functools.lru_cache(maxsize=16)
def placement(normal_count: int, update_count: int):
    """Where the draws land: fact units [N], raw span slots in the flat [G*C] cost [N], current
    units [U], invalidation units [U] (int64 index arrays)."""
    tpl = template(normal_count, update_count)
    n_cand = static_arrays(normal_count, update_count)[0].shape[1]
    fact_unit = np.array([unit for unit, _, _ in tpl.fact_slots], np.int64)
    raw_slot = np.array([group * n_cand + raw for _, group, raw in tpl.fact_slots], np.int64)
    current_unit = np.array([current for current, _ in tpl.update_units], np.int64)
    invalid_unit = np.array([invalid for _, invalid in tpl.update_units], np.int64)
    return fact_unit, raw_slot, current_unit, invalid_unit


def _put(xp, base, index, values, add=False):
    """``base[:, index] = values`` (or ``+=``) for numpy or jax.numpy, without mutating ``base``."""
    if xp is np:
        out = np.array(base, copy=True)
        if add:
            out[:, index] += values
        else:
            out[:, index] = values
        return out
    return base.at[:, index].add(values) if add else base.at[:, index].set(values)


def drawn_arrays(xp, fact_pick, raw_extra, update_pick, cost0, weight0, placed):
    """(cost [S, G, C] int32, weight [S, R] float64) from the draws (numpy or jax.numpy)."""
    fact_unit, raw_slot, current_unit, invalid_unit = placed
    n = fact_pick.shape[0]
    weight = xp.broadcast_to(weight0[None], (n,) + weight0.shape)
    weight = _put(xp, weight, fact_unit, xp.asarray(FACT_WEIGHTS)[fact_pick])
    weight = _put(xp, weight, current_unit, 2.0 + 0.25 * update_pick[..., 0])
    weight = _put(xp, weight, invalid_unit, 2.0 + 0.25 * update_pick[..., 1])
    cost = xp.broadcast_to(cost0.reshape(1, -1), (n, cost0.size))
    cost = _put(xp, cost, raw_slot, raw_extra.astype(cost0.dtype), add=True)
    return cost.reshape((n,) + cost0.shape).astype(xp.int32), weight


def reservoir_keys(seeds, normal_count: int = 3, update_count: int = 2) -> np.ndarray:
    """The artifact's stable hash of every candidate id "s{seed}_<suffix>": [S, G, C] int64 (-1 padding)."""
    tpl, valid = template(normal_count, update_count), static_arrays(normal_count, update_count)[1]
    suffixes = [c.suffix for _, cands in tpl.groups for c in cands]
    keys = np.full((len(seeds), valid.size), -1, np.int64)
    keys[:, np.flatnonzero(valid.reshape(-1))] = hash_prefixed([f"s{s}_" for s in seeds], suffixes)
    return keys.reshape((len(seeds),) + valid.shape)


def build_batch(xp, fact_pick, raw_extra, update_pick, normal_count: int, update_count: int) -> PackageBatch:
    """memaudit_small arrays from the draws (``xp`` = numpy or jax.numpy; shapes [S, N], [S, N], [S, U, 2])."""
    cost0, valid, kind, coverage, weight0, invalidation, rank, time = static_arrays(normal_count, update_count)
    n = fact_pick.shape[0]
    cost, weight = drawn_arrays(
        xp, fact_pick, raw_extra, update_pick, cost0, weight0, placement(normal_count, update_count)
    )

    def tile(a):
        return xp.broadcast_to(xp.asarray(a)[None], (n,) + a.shape)

    return PackageBatch(
        cost=cost,
        valid=tile(valid),
        kind=tile(kind),
        coverage=tile(coverage),
        weight=weight,
        invalidation=tile(invalidation),
        rank=tile(rank),
        time=tile(time),
    )


def _meta(seeds: list[int], tpl: Template) -> PackageMeta:
    def unit_name(seed, suffix):  # "fact:{seed}:0", "stale:pref:{seed}:0:old", ...
        head, _, tail = suffix.partition("pref:") if "pref:" in suffix else suffix.partition(":")
        return f"{head}{'pref:' if 'pref:' in suffix else ':'}{seed}:{tail}"

    return PackageMeta(
        package_ids=tuple(f"synthetic_seed_{s}" for s in seeds),
        group_ids=tuple(tuple(f"s{s}_{exp}" for exp, _ in tpl.groups) for s in seeds),
        candidate_ids=tuple(tuple(tuple(f"s{s}_{c.suffix}" for c in cands) for _, cands in tpl.groups) for s in seeds),
        unit_ids=tuple(tuple(unit_name(s, u) for u in tpl.units) for s in seeds),
        seeds=tuple(seeds),
    )
