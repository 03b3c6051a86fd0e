"""Packages on disk in the MEMAUDIT artifact's export layout, one directory per package:

    candidate_memories.jsonl  one candidate per line: candidate_id, experience_id (or candidate_group),
                              representation_type, cost (an int or {"total": n}; or cost_tokens),
                              time_index (optional, default 0), coverage (optional: a mapping
                              unit -> fidelity or a list of {"unit_id", "fidelity"})
    coverage_matrix.jsonl     one cell per line: candidate_id, unit_id, coverage (or fidelity)
    evidence_units.jsonl      one unit per line: unit_id, unit_weight (optional), kind
    instance.json             instance_id, seed, unit_weights {unit: w}, invalidation_units [...]

Unit weights come from instance.json, else evidence_units.jsonl, else 1 for every covered unit (as
the artifact infers them). Invalidation units from instance.json, else units of kind "invalidation".
Files are UTF-8 (optionally gzip-compressed). Malformed input raises :class:`PackageFormatError`
naming the file, line and field (instance.json: the file and field), as does a number outside what
the solvers compute exactly (:data:`wpbjax.packages.model.MAX_COST` and the other ranges there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from wpbjax.common.argument_errors import refuse_repeats
from wpbjax.episodes.jsontext import parse_json, read_json, text_lines
from wpbjax.episodes.validate import FLOAT32_MAX, Bounds, number_problem
from wpbjax.packages.ids import hash_ids
from wpbjax.packages.model import (
    AMOUNT_RANGE,
    COST_RANGE,
    KINDS,
    TIME_RANGE,
    PackageBatch,
    PackageMeta,
    PackageSet,
    kind_id,
    value_bound,
)


class PackageFormatError(ValueError):
    """A package file that cannot be read: the message names file, line and field."""


def fail_at(path, line, message):
    where = f"{os.fspath(path)}:{line}" if line else os.fspath(path)
    raise PackageFormatError(f"{where}: {message}")


def read_jsonl_rows(path: Path):
    """(line number, object) per non-empty line."""
    for number, line in text_lines(path, PackageFormatError, "package file"):
        if not line.strip():
            continue
        row = parse_json(line, f"{os.fspath(path)}:{number}", PackageFormatError)
        if not isinstance(row, dict):
            fail_at(path, number, "expected a JSON object")
        yield number, row


def read_number(value, path, line, field, bounds: Bounds = AMOUNT_RANGE, integer: bool = False):
    """A weight or coverage (float), or with ``integer`` a cost or time index (a float without fraction
    reads as an int), within ``bounds``."""
    problem = number_problem(value, bounds, integer=integer, whole_floats=True)
    if problem:
        fail_at(path, line, f"field {field!r}: {problem}")
    return int(value) if integer else float(value)


def read_id(value, path, line, field) -> str:
    """An id (of a unit or an experience): a JSON string or integer, as a string."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        fail_at(path, line, f"field {field!r}: expected a non-empty string or an integer, got {value!r}")
    return str(value)


def read_cost(row, path, line):
    raw = row.get("cost", row.get("cost_tokens"))
    if raw is None:
        fail_at(path, line, "field 'cost': missing")
    if isinstance(raw, dict):
        if "total" not in raw:
            fail_at(path, line, "field 'cost': a mapping needs 'total'")
        return read_number(raw["total"], path, line, "cost.total", COST_RANGE, integer=True)
    return read_number(raw, path, line, "cost", COST_RANGE, integer=True)


def read_coverage(raw, path, line, field="coverage") -> dict[str, float]:
    cells: dict[str, float] = {}
    if isinstance(raw, dict):
        items = raw.items()
    elif isinstance(raw, list):
        items = []
        for entry in raw:
            if not isinstance(entry, dict) or "unit_id" not in entry:
                fail_at(path, line, f"field {field!r}: list entries need 'unit_id' (and 'fidelity')")
            items.append((entry["unit_id"], entry.get("fidelity", entry.get("coverage", 1.0))))
    else:
        fail_at(path, line, f"field {field!r}: expected a mapping or a list of {{unit_id, fidelity}}")
    for unit, value in items:
        unit = read_id(unit, path, line, f"{field}.unit_id")
        value = read_number(value, path, line, f"{field}[{unit}]")
        if value > 0:
            cells[unit] = _amount(cells.get(unit, 0.0) + value, path, line, f"{field}[{unit}]")
    return cells


def _amount(total: float, path, line, field) -> float:
    """A sum of coverages, refused where it passes float32 range."""
    if total > FLOAT32_MAX:
        fail_at(path, line, f"field {field!r}: the unit's coverages sum past float32 range ({FLOAT32_MAX:.4g})")
    return total


def _candidates(directory: Path) -> list[dict]:
    path = directory / "candidate_memories.jsonl"
    if not path.exists():
        fail_at(path, 0, "missing (a package directory needs candidate_memories.jsonl)")
    rows, seen = [], set()
    for line, row in read_jsonl_rows(path):
        cid = row.get("candidate_id")
        group = row.get("experience_id", row.get("candidate_group"))
        if not isinstance(cid, str) or not cid:
            fail_at(path, line, "field 'candidate_id': missing or not a non-empty string")
        if group is None:
            fail_at(path, line, "field 'experience_id': missing")
        group = read_id(group, path, line, "experience_id")
        if cid in seen:
            fail_at(path, line, f"field 'candidate_id': duplicate {cid!r}")
        seen.add(cid)
        kind = row.get("representation_type", row.get("type", "other"))
        time_index = read_number(row.get("time_index", 0), path, line, "time_index", TIME_RANGE, integer=True)
        coverage = read_coverage(row["coverage"], path, line) if "coverage" in row else {}
        rows.append(
            {
                "id": cid,
                "group": group,
                "kind": str(kind),
                "cost": read_cost(row, path, line),
                "time": time_index,
                "coverage": coverage,
            }
        )
    if not rows:
        fail_at(path, 0, "no candidates")
    return rows


def _matrix(directory: Path, candidates: list[dict]) -> None:
    """Add coverage_matrix.jsonl's cells to the candidates' coverage (in place)."""
    path = directory / "coverage_matrix.jsonl"
    if not path.exists():
        if not any(c["coverage"] for c in candidates):
            fail_at(path, 0, "missing, and no candidate carries 'coverage'")
        return
    by_id = {c["id"]: c for c in candidates}
    for line, row in read_jsonl_rows(path):
        cid, unit = row.get("candidate_id"), row.get("unit_id")
        if cid not in by_id:
            fail_at(path, line, f"field 'candidate_id': {cid!r} is not in candidate_memories.jsonl")
        if unit is None:
            fail_at(path, line, "field 'unit_id': missing")
        unit = read_id(unit, path, line, "unit_id")
        value = read_number(row.get("coverage", row.get("fidelity")), path, line, "coverage")
        if value > 0:
            cells = by_id[cid]["coverage"]
            cells[unit] = _amount(cells.get(unit, 0.0) + value, path, line, "coverage")


def _units(directory: Path, candidates: list[dict]):
    """(unit weights in order, invalidation units, instance id, seed)."""
    instance_path, units_path = directory / "instance.json", directory / "evidence_units.jsonl"
    instance = {}
    if instance_path.exists():
        instance = read_json(instance_path, PackageFormatError, "package file")
        if not isinstance(instance, dict):
            fail_at(instance_path, 1, "expected a JSON object")
    weights: dict[str, float] = {}
    unit_weights = instance.get("unit_weights")
    if unit_weights is not None and not isinstance(unit_weights, dict):
        fail_at(instance_path, 0, f"field 'unit_weights': expected a mapping unit -> weight, got {unit_weights!r}")
    for unit, w in (unit_weights or {}).items():
        weights[unit] = read_number(w, instance_path, 0, f"unit_weights[{unit}]")
    listed = instance.get("invalidation_units") or []
    if not isinstance(listed, list):
        fail_at(instance_path, 0, f"field 'invalidation_units': expected a list of unit ids, got {listed!r}")
    invalidation = {
        read_id(unit, instance_path, 0, f"invalidation_units[{index}]") for index, unit in enumerate(listed)
    }
    if units_path.exists():
        for line, row in read_jsonl_rows(units_path):
            unit = row.get("unit_id")
            if unit is None:
                fail_at(units_path, line, "field 'unit_id': missing")
            unit = read_id(unit, units_path, line, "unit_id")
            if "unit_weight" in row and unit not in weights and "unit_weights" not in instance:
                weights[unit] = read_number(row["unit_weight"], units_path, line, "unit_weight")
            if row.get("kind") == "invalidation" and "invalidation_units" not in instance:
                invalidation.add(unit)
    if not weights:  # the artifact's default: weight 1 for every covered unit
        weights = {u: 1.0 for u in sorted({u for c in candidates for u in c["coverage"]})}
    if not weights:
        fail_at(
            directory,
            0,
            "no evidence units: no candidate covers a unit (coverage_matrix.jsonl or the "
            "candidates' 'coverage') and instance.json gives no 'unit_weights'",
        )
    seed = instance.get("seed")
    return (
        weights,
        invalidation,
        str(instance.get("instance_id", directory.name)),
        seed if isinstance(seed, int) else None,
    )


def read_package(directory) -> tuple[dict, list[list[dict]]]:
    """One package directory -> (header, groups in arrival order, candidates in (cost, id) order)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise PackageFormatError(f"{os.fspath(directory)}: not a package directory")
    candidates = _candidates(directory)
    _matrix(directory, candidates)
    weights, invalidation, instance_id, seed = _units(directory, candidates)
    return assemble(candidates, weights, invalidation, instance_id, seed)


def assemble(candidates: list[dict], weights: dict, invalidation, instance_id: str, seed=None):
    """Candidates ``{id, group, kind, cost, time, coverage}`` -> (header, groups), in the artifact's
    order: groups by (first time index, group id), candidates by (cost, id)."""
    groups: dict[str, list[dict]] = {}
    for cand in candidates:
        groups.setdefault(cand["group"], []).append(cand)
    order = sorted(groups, key=lambda g: (min(c["time"] for c in groups[g]), g))
    ordered = [sorted(groups[g], key=lambda c: (c["cost"], c["id"])) for g in order]
    header = {
        "instance_id": instance_id,
        "seed": seed,
        "weights": dict(weights),
        "invalidation": set(invalidation),
        "group_ids": order,
    }
    return header, ordered


def package_files(directories) -> list[str]:
    """The files in the package ``directories`` (what reading them may open: an output must be none)."""
    return [
        os.path.join(directory, name)
        for directory in map(os.fspath, directories)
        if os.path.isdir(directory)
        for name in os.listdir(directory)
    ]


def read_packages(directories) -> PackageSet:
    """Package directories -> one padded PackageSet. A directory given twice (after resolving links)
    is refused, as is a package whose largest possible value passes float32 range."""
    directories = [os.fspath(d) for d in directories]
    if not directories:
        raise PackageFormatError("no package directories given")
    refuse_repeats("package directories", [os.path.realpath(d) for d in directories], PackageFormatError)
    pset = stack([read_package(d) for d in directories])
    bound = value_bound(pset.batch)
    for directory, worth in zip(directories, bound):
        if not worth <= FLOAT32_MAX:
            raise PackageFormatError(
                f"{directory}: unit weights times coverage sum to {worth:.4g} (sum_r w_r "
                f"max(1, sum_u a_ur)), past float32 range ({FLOAT32_MAX:.4g}): a store's "
                "value would overflow"
            )
    return pset


def stack(packages) -> PackageSet:
    """(header, groups) pairs -> one PackageSet padded to the largest G, C and R."""
    n_groups = max(len(groups) for _, groups in packages)
    n_cand = max(len(g) for _, groups in packages for g in groups)
    n_units = max(len(h["weights"]) for h, _ in packages)
    shape = (len(packages), n_groups, n_cand)
    cost, kind = np.zeros(shape, np.int32), np.full(shape, -1, np.int32)
    valid, rank, time = np.zeros(shape, bool), np.full(shape, -1, np.int32), np.zeros(shape, np.int32)
    coverage, weight = np.zeros(shape + (n_units,)), np.zeros((len(packages), n_units))
    invalidation = np.zeros((len(packages), n_units), bool)
    metas = []
    for p, (header, groups) in enumerate(packages):
        units = list(header["weights"])
        unit_index = {u: r for r, u in enumerate(units)}
        weight[p, : len(units)] = [header["weights"][u] for u in units]
        invalidation[p, : len(units)] = [u in header["invalidation"] for u in units]
        rank_of = {cid: i for i, cid in enumerate(sorted(c["id"] for g in groups for c in g))}
        for g, cands in enumerate(groups):
            for c, cand in enumerate(cands):
                cost[p, g, c], kind[p, g, c], valid[p, g, c] = cand["cost"], kind_id(cand["kind"]), True
                rank[p, g, c], time[p, g, c] = rank_of[cand["id"]], cand["time"]
                for unit, a in cand["coverage"].items():
                    if unit in unit_index:  # units without weight add nothing to F
                        coverage[p, g, c, unit_index[unit]] = a
        metas.append(
            (
                header["instance_id"],
                tuple(header["group_ids"]),
                tuple(tuple(c["id"] for c in g) for g in groups),
                tuple(units),
                header["seed"],
            )
        )
    meta = PackageMeta(*[tuple(m[i] for m in metas) for i in range(5)])
    batch = PackageBatch(
        cost=cost,
        valid=valid,
        kind=kind,
        coverage=coverage,
        weight=weight,
        invalidation=invalidation,
        rank=rank,
        time=time,
    )
    return PackageSet(batch, meta, hash_ids(meta.candidate_ids, shape))


def _write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def write_package(pset: PackageSet, p: int, directory, distribution: str = "") -> Path:
    """Package p of a PackageSet as an export directory (unit_weights in the package's unit order)."""
    batch, meta = pset.batch, pset.meta
    if not meta.candidate_ids:
        raise ValueError("writing packages needs their names (generate with metadata)")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    units = meta.unit_ids[p]
    candidates, cells = [], []
    for g, cands in enumerate(meta.candidate_ids[p]):
        for c, cid in enumerate(cands):
            rep = KINDS[int(batch.kind[p, g, c])]
            candidates.append(
                {
                    "candidate_id": cid,
                    "experience_id": meta.group_ids[p][g],
                    "representation_type": rep,
                    "cost": int(batch.cost[p, g, c]),
                    "time_index": int(batch.time[p, g, c]),
                }
            )
            cells.extend(
                {"candidate_id": cid, "unit_id": units[r], "coverage": float(batch.coverage[p, g, c, r])}
                for r in range(len(units))
                if batch.coverage[p, g, c, r] > 0
            )
    candidates.sort(key=lambda row: row["candidate_id"])
    cells.sort(key=lambda row: (row["candidate_id"], row["unit_id"]))
    _write_jsonl(directory / "candidate_memories.jsonl", candidates)
    _write_jsonl(directory / "coverage_matrix.jsonl", cells)
    invalid = [u for r, u in enumerate(units) if batch.invalidation[p, r]]
    _write_jsonl(
        directory / "evidence_units.jsonl",
        (
            {
                "unit_id": u,
                "unit_weight": float(batch.weight[p, r]),
                "kind": "invalidation" if batch.invalidation[p, r] else "evidence",
            }
            for r, u in enumerate(units)
        ),
    )
    seed = meta.seeds[p] if meta.seeds else None
    (directory / "instance.json").write_text(
        json.dumps(
            {
                "instance_id": meta.package_ids[p],
                "seed": seed,
                "distribution": distribution,
                "unit_weights": {u: float(batch.weight[p, r]) for r, u in enumerate(units)},
                "invalidation_units": invalid,
                "candidate_count": len(candidates),
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    return directory


def write_packages(pset: PackageSet, out, distribution: str = "") -> list[Path]:
    """Every package of a set under ``out/<package id>/``."""
    out = Path(out)
    return [write_package(pset, p, out / _safe(name), distribution) for p, name in enumerate(pset.meta.package_ids)]


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name).strip("._") or "package"
