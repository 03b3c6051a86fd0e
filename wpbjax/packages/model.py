"""Packages (MEMAUDIT representation choice) as fixed-shape arrays, and their exact objective.

A package is a list of experiences ("groups"), each offering candidate representations u of the
experience (raw span, atomic fact, summary, tombstone, ...) with an integer cost c_u and a coverage
row a_ur over evidence units r of weight w_r. A store keeps at most one candidate per group within
a budget B and is worth ``F(X) = sum_r w_r h(sum_{u in X} a_ur)`` with ``h(z) = min(1, z)`` by default.

Shapes: P packages, G groups (arrival order, padded), C candidates per group (padded), R units.
Groups are in the artifact's arrival order (first time index, then group id); candidates within
a group in (cost, candidate id) order.

Exactness: values are float64 numpy. ``F`` sums ``w_r h(t_r)`` one unit after another in the
package's unit order (as the artifact does), so equal stores give bit-equal values and the
1e-12 tie rules of the artifact carry over. Nothing here turns on ``jax_enable_x64``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg, refuse_repeats
from wpbjax.episodes.validate import FLOAT32_MAX, Bounds, number_problem

# Representation kinds, index = kind id. Append-only: ids are stored in files and trained writers.
KINDS: tuple[str, ...] = (
    "raw_span",
    "atomic_fact",
    "summary",
    "tombstone",
    "compound_update",
    "interval_fact",
    "abstention",
    "uncertainty",
    "raw",
    "fact",
    "compound_evidence",
    "graph_edge",
    "skill",
    "other",
)
KIND_ID: dict[str, int] = {name: index for index, name in enumerate(KINDS)}
RAW_KINDS = ("raw", "raw_span")  # recency_raw / reservoir_raw keep only these
TOMBSTONE_KINDS = ("tombstone", "compound_update")  # removed by the no_tombstone ablations
TIE = 1e-12  # the artifact's tie tolerance on values

# What a package's numbers may be (refused at load, naming file, line and field, beyond these):
# costs and budgets are whole numbers up to 2^24, exact in float32 (the learned writer's budget
# arithmetic), so a store's cost plus one more candidate's stays far inside int32 on device (the
# writers) and a budget is never compared after rounding; time indices fit int32 with room for an
# external store's memories, numbered after the package's; weights and coverages are finite and
# within float32 (the learned writer's arithmetic), and so is a package's largest possible value.
MAX_COST = 2**24
MAX_TIME = 2**30 - 1
COST_RANGE = Bounds(0, MAX_COST, f"an integer in 0..{MAX_COST:,} (2^24)")
TIME_RANGE = Bounds(0, MAX_TIME, f"an integer in 0..{MAX_TIME:,} (2^30 - 1)")
AMOUNT_RANGE = Bounds(0.0, FLOAT32_MAX, f"a finite number in 0..{FLOAT32_MAX:.4g} (float32)")


def kind_id(name: str) -> int:
    """Kind id of a representation name; unknown names map to ``other``."""
    return KIND_ID.get(name, KIND_ID["other"])


def kind_mask(kind: np.ndarray, names) -> np.ndarray:
    """``kind`` in the given names: same shape as ``kind``, bool."""
    ids = [KIND_ID[name] for name in names]
    return np.isin(np.asarray(kind), ids)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PackageBatch:
    """P packages, padded to G groups x C candidates x R units; a JAX pytree of arrays."""

    cost: np.ndarray  # [P, G, C] int32   candidate cost c_u (0 on padding)
    valid: np.ndarray  # [P, G, C] bool    real candidate
    kind: np.ndarray  # [P, G, C] int32   index into KINDS (-1 on padding)
    coverage: np.ndarray  # [P, G, C, R] float64  a_ur (0 on padding)
    weight: np.ndarray  # [P, R] float64    unit weight w_r (0 on padding units)
    invalidation: np.ndarray  # [P, R] bool       unit is an invalidation unit
    rank: np.ndarray  # [P, G, C] int32   rank of the candidate id among the package's ids
    #                   (the artifact breaks exact ties by id; -1 padding)
    time: np.ndarray  # [P, G, C] int32   arrival time index of the candidate

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(P, G, C, R)."""
        return tuple(self.coverage.shape)  # type: ignore[return-value]

    def take(self, indices) -> PackageBatch:
        """The sub-batch of the given package indices (host-side)."""
        return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[np.asarray(indices)], self)

    def only_kinds(self, keep: np.ndarray) -> PackageBatch:
        """The same packages with candidates outside ``keep: [P, G, C] bool`` removed.

        The kept candidates move to the front of their group, in their order (padding last).
        """
        keep = np.asarray(keep) & np.asarray(self.valid)
        order = np.argsort(~keep, axis=2, kind="stable")  # kept first, stable

        def pack(a, fill):
            a = np.take_along_axis(np.asarray(a), order.reshape(order.shape + (1,) * (np.ndim(a) - 3)), axis=2)
            kept = np.take_along_axis(keep, order, axis=2).reshape(order.shape + (1,) * (np.ndim(a) - 3))
            return np.where(kept, a, fill).astype(np.asarray(a).dtype)

        return dataclasses.replace(
            self,
            valid=np.take_along_axis(keep, order, axis=2),
            cost=pack(self.cost, 0),
            kind=pack(self.kind, -1),
            coverage=pack(self.coverage, 0.0),
            rank=pack(self.rank, -1),
            time=pack(self.time, 0),
        )


@dataclasses.dataclass(frozen=True)
class PackageMeta:
    """Host-only names of a batch's packages, candidates and units (for I/O and reports)."""

    package_ids: tuple[str, ...]  # [P]
    group_ids: tuple[tuple[str, ...], ...]  # [P][G_p]
    candidate_ids: tuple[tuple[tuple[str, ...], ...], ...]  # [P][G_p][C_g]
    unit_ids: tuple[tuple[str, ...], ...]  # [P][R_p]
    seeds: tuple[int | None, ...] = ()  # [P] generator seed where known


@dataclasses.dataclass(frozen=True)
class PackageSet:
    """A batch plus its host metadata (what generators and readers return)."""

    batch: PackageBatch
    meta: PackageMeta
    reservoir_key: np.ndarray | None = None  # [P, G, C] int64 stable hash of each candidate id
    # (reservoir_raw's order; wpbjax.packages.ids)


def _h_min(z):
    return np.minimum(1.0, z)


H: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "min": _h_min,
    "log1p": np.log1p,
    "linear": lambda z: z,
}


def h_function(h: str) -> Callable[[np.ndarray], np.ndarray]:
    if h not in H:
        raise ValueError(f"unknown h {h!r}; choose one of {', '.join(H)}")
    return H[h]


def ordered_unit_sum(weight: np.ndarray, saturated: np.ndarray) -> np.ndarray:
    """``sum_r weight[..., r] * saturated[..., r]`` added one unit after another (artifact order).

    weight, saturated: [..., R] (broadcastable) -> [...] float64. Sequential on purpose: numpy's
    pairwise ``sum`` rounds differently, which would move the artifact's exact ties.
    """
    weight = np.asarray(weight, dtype=np.float64)
    saturated = np.asarray(saturated, dtype=np.float64)
    total = np.zeros(np.broadcast_shapes(weight.shape, saturated.shape)[:-1])
    for r in range(saturated.shape[-1]):
        total = total + weight[..., r] * saturated[..., r]
    return total


def value_from_totals(weight: np.ndarray, totals: np.ndarray, h: str = "min") -> np.ndarray:
    """F from coverage totals: weight [..., R], totals [..., R] -> [...] float64."""
    return ordered_unit_sum(weight, h_function(h)(np.asarray(totals, dtype=np.float64)))


def chosen_mask(batch: PackageBatch, chosen: np.ndarray) -> np.ndarray:
    """One-hot of ``chosen: [P, G] int32`` (-1 = none) -> [P, G, C] bool."""
    chosen = np.asarray(chosen)
    n_cand = batch.cost.shape[-1]
    return (chosen[..., None] == np.arange(n_cand)) & (chosen[..., None] >= 0)


def coverage_totals(batch: PackageBatch, chosen: np.ndarray) -> np.ndarray:
    """sum_{u in X} a_ur in group order: [P, R] float64."""
    onehot = chosen_mask(batch, chosen)
    totals = np.zeros(batch.weight.shape)
    for g in range(onehot.shape[1]):  # group order, as the artifact adds its selection
        totals = totals + np.einsum("pc,pcr->pr", onehot[:, g], batch.coverage[:, g])
    return totals


def value(batch: PackageBatch, chosen: np.ndarray, h: str = "min") -> np.ndarray:
    """F(X) per package: ``chosen: [P, G] int32`` (candidate index per group, -1 none) -> [P] float64."""
    return value_from_totals(batch.weight, coverage_totals(batch, chosen), h)


def cost(batch: PackageBatch, chosen: np.ndarray) -> np.ndarray:
    """Total cost of the store per package: [P] int64 (a store of many candidates may pass int32)."""
    onehot = chosen_mask(batch, chosen)
    return (onehot * np.asarray(batch.cost, dtype=np.int64)).sum(axis=(1, 2))


def value_bound(batch: PackageBatch) -> np.ndarray:
    """An upper bound on F of any store, for every h: ``sum_r w_r max(1, sum_u a_ur)`` over all
    candidates (h(z) <= max(1, z) for min, log1p and linear): [P] float64 (inf if it overflows)."""
    totals = np.asarray(batch.coverage, np.float64).sum(axis=(1, 2))  # [P, R]
    with np.errstate(over="ignore", invalid="ignore"):
        return ordered_unit_sum(batch.weight, np.maximum(1.0, totals))


def invalidation_covered(batch: PackageBatch, chosen: np.ndarray) -> np.ndarray:
    """Covered invalidation mass sum_{r invalidation} min(1, t_r): [P] float64 (artifact's update metric)."""
    totals = coverage_totals(batch, chosen)
    return (np.minimum(1.0, totals) * np.asarray(batch.invalidation)).sum(axis=1)


def check_feasible(batch: PackageBatch, chosen: np.ndarray, budget) -> None:
    """Raise if a store picks padding or exceeds its budget (``budget``: scalar or [P])."""
    chosen = np.asarray(chosen)
    picked_valid = np.take_along_axis(np.asarray(batch.valid), np.maximum(chosen, 0)[..., None], -1)[..., 0]
    if np.any((chosen >= 0) & ~picked_valid):
        raise AssertionError("a store picks a padding candidate")
    over = cost(batch, chosen) > np.asarray(budget)
    if np.any(over):
        raise AssertionError(f"{int(over.sum())} stores exceed their budget")


def check_budgets(budgets) -> list[int]:
    """Package budgets as ints, each a whole number in 0..MAX_COST, none repeated (a repeat would give
    duplicate rows); an ArgumentError naming ``budgets`` otherwise."""
    values = [int(b) if isinstance(b, np.integer) else b for b in np.asarray(budgets, dtype=object).reshape(-1)]
    if not values:
        raise ArgumentError(f"{arg('budgets')}: give at least one budget")
    for budget in values:
        problem = number_problem(budget, COST_RANGE, integer=True)
        if problem:
            raise ArgumentError(f"{arg('budgets')}: each {problem}")
    refuse_repeats(arg("budgets"), values, ArgumentError)
    return values
