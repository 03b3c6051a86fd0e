"""The MEMAUDIT artifact's stress distributions (oraclemem/distributions.py), bit-exact.

Each package is a handful of hand-shaped groups; a few weights are drawn from
``random.Random((seed + 1) * 1_000_003 + salt)`` with ``randrange``. Sizes follow the
artifact's clamps of ``normal_count`` / ``update_count``. Built per seed on the host (the
packages are tiny), then stacked into one PackageSet.
"""

from __future__ import annotations

import random

from wpbjax.packages.io import assemble, stack
from wpbjax.packages.model import PackageSet


def _rng(seed: int, salt: int) -> random.Random:
    return random.Random((int(seed) + 1) * 1_000_003 + salt)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(int(value), high))


class _Builder:
    """Collects one package's candidates and weights in the artifact's insertion order."""

    def __init__(self, prefix: str):
        self.prefix, self.candidates, self.weights, self.invalidation = prefix, [], {}, []

    def add(self, exp: str, variant: str, kind: str, cost: int, coverage: dict, time: int) -> None:
        self.candidates.append(
            {
                "id": f"{self.prefix}:{exp}:{variant}",
                "group": f"{self.prefix}:{exp}",
                "kind": kind,
                "cost": cost,
                "time": time,
                "coverage": {u: a for u, a in coverage.items() if a > 0},
            }
        )

    def done(self, seed: int):
        return assemble(self.candidates, self.weights, self.invalidation, self.prefix, seed)


def density_trap(seed, normal_count=3, update_count=2):
    rng, size = _rng(seed, 11), _clamp(normal_count + update_count, 4, 6)
    b = _Builder(f"density_trap_s{seed}")
    common = f"{b.prefix}:shared_lure"
    b.weights[common] = 2.2
    for i in range(size):
        unit, context = f"{b.prefix}:specific:{i}", f"{b.prefix}:context:{i // 2}"
        b.weights[unit] = 1.45 + 0.15 * rng.randrange(3)
        b.weights.setdefault(context, 0.3)
        exp = f"memory_{i}"
        b.add(exp, "cheap_lure", "atomic_fact", 1, {common: 0.55, unit: 0.05}, i)
        b.add(exp, "specific_fact", "atomic_fact", 2, {unit: 1.0}, i)
        b.add(exp, "context_summary", "summary", 3, {unit: 0.7, common: 0.25, context: 0.35}, i)
        b.add(exp, "raw_detail", "raw_span", 4, {unit: 1.0, context: 0.6, common: 0.15}, i)
    return b.done(seed)


def update_chain(seed, normal_count=3, update_count=2):
    chain_len = _clamp(update_count + 1, 2, 4)
    b = _Builder(f"update_chain_s{seed}")
    original = f"{b.prefix}:version:0"
    b.weights[original] = 0.1
    b.add("version_0", "raw_old", "raw_span", 4, {original: 1.0}, 0)
    b.add("version_0", "fact_old", "atomic_fact", 2, {original: 1.0}, 0)
    b.add("version_0", "summary_old", "summary", 3, {original: 0.7}, 0)
    for step in range(1, chain_len + 1):
        previous, current = f"{b.prefix}:version:{step - 1}", f"{b.prefix}:version:{step}"
        invalid = f"{b.prefix}:invalidates:version:{step - 1}"
        b.invalidation.append(invalid)
        b.weights[previous] = 0.1
        b.weights[current] = 2.3 if step == chain_len else 0.25
        b.weights[invalid] = 1.85
        exp = f"update_{step}"
        b.add(exp, "raw_correction", "raw_span", 5, {current: 1.0, invalid: 0.35, previous: 0.15}, step)
        b.add(exp, "current_only", "atomic_fact", 2, {current: 1.0}, step)
        b.add(exp, "invalidate_only", "tombstone", 1, {invalid: 1.0}, step)
        b.add(exp, "compound", "compound_update", 3, {current: 0.95, invalid: 1.0}, step)
        b.add(exp, "summary_update", "summary", 3, {current: 0.65, invalid: 0.65}, step)
    return b.done(seed)


def scope_shift(seed, normal_count=3, update_count=2):
    rng, count = _rng(seed, 23), _clamp(normal_count + 1, 3, 5)
    b = _Builder(f"scope_shift_s{seed}")
    scopes = ("home", "work", "travel", "medical", "finance")[:count]
    for i, scope in enumerate(scopes):
        unit, context, generic = (f"{b.prefix}:pref:{scope}", f"{b.prefix}:context:{scope}", f"{b.prefix}:pref:generic")
        b.weights[unit] = 1.6 + 0.2 * rng.randrange(3)
        b.weights[context] = 0.55
        b.weights[generic] = 0.35
        exp = f"scope_{scope}"
        b.add(exp, "scoped_fact", "atomic_fact", 2, {unit: 1.0}, i)
        b.add(exp, "generic_summary", "summary", 2, {generic: 0.8, unit: 0.35}, i)
        b.add(exp, "scoped_summary", "summary", 3, {unit: 0.75, context: 0.8}, i)
        b.add(exp, "raw_scope", "raw_span", 5, {unit: 1.0, context: 1.0, generic: 0.2}, i)
    review = {f"{b.prefix}:pref:{s}": 0.42 for s in scopes} | {f"{b.prefix}:context:{s}": 0.35 for s in scopes}
    b.add("cross_scope_review", "broad_review", "summary", 4, review, count)
    return b.done(seed)


def summary_tradeoff(seed, normal_count=3, update_count=2):
    rng, count = _rng(seed, 37), _clamp(normal_count + update_count, 3, 5)
    b = _Builder(f"summary_tradeoff_s{seed}")
    for i in range(count):
        primary, secondary, context = (
            f"{b.prefix}:primary:{i}",
            f"{b.prefix}:secondary:{i}",
            f"{b.prefix}:context:{i}",
        )
        b.weights[primary] = 1.35 + 0.15 * rng.randrange(3)
        b.weights[secondary] = 1.0 + 0.1 * rng.randrange(2)
        b.weights[context] = 0.35
        exp = f"episode_{i}"
        b.add(exp, "primary_fact", "atomic_fact", 2, {primary: 1.0}, i)
        b.add(exp, "secondary_fact", "atomic_fact", 2, {secondary: 1.0}, i)
        b.add(exp, "compressed_summary", "summary", 2, {primary: 0.45, secondary: 0.45, context: 0.25}, i)
        b.add(exp, "balanced_summary", "summary", 3, {primary: 0.72, secondary: 0.72, context: 0.45}, i)
        b.add(exp, "raw_episode", "raw_span", 5, {primary: 1.0, secondary: 1.0, context: 0.85}, i)
    return b.done(seed)


def redundancy_heavy(seed, normal_count=3, update_count=2):
    rng, count = _rng(seed, 41), _clamp(normal_count + update_count, 4, 6)
    b = _Builder(f"redundancy_heavy_s{seed}")
    core = f"{b.prefix}:core"
    b.weights[core] = 2.4
    for i in range(count):
        unique, local = f"{b.prefix}:tail:{i}", f"{b.prefix}:local:{i // 2}"
        b.weights[unique] = 1.0 + 0.15 * rng.randrange(3)
        b.weights.setdefault(local, 0.3)
        exp = f"redundant_{i}"
        b.add(exp, "core_fact", "atomic_fact", 2, {core: 0.85}, i)
        b.add(exp, "tail_fact", "atomic_fact", 2, {unique: 1.0}, i)
        b.add(exp, "core_tail_summary", "summary", 3, {core: 0.6, unique: 0.8, local: 0.25}, i)
        b.add(exp, "raw_redundant", "raw_span", 4, {core: 1.0, unique: 1.0, local: 0.4}, i)
    return b.done(seed)


def temporal_interval(seed, normal_count=3, update_count=2):
    intervals, closures = _clamp(normal_count + update_count, 3, 5), _clamp(update_count, 1, 3)
    b = _Builder(f"temporal_interval_s{seed}")
    for i in range(intervals):
        label, start, end, duration = (
            f"{b.prefix}:interval:{i}:{part}" for part in ("label", "start", "end", "duration")
        )
        b.weights.update({label: 0.9, start: 0.75, end: 0.85, duration: 0.55})
        exp = f"interval_{i}"
        b.add(exp, "label_fact", "atomic_fact", 2, {label: 1.0}, i)
        b.add(exp, "endpoint_fact", "interval_fact", 3, {start: 1.0, end: 1.0, duration: 0.7}, i)
        b.add(exp, "coarse_summary", "summary", 2, {label: 0.85, start: 0.35, end: 0.35}, i)
        b.add(exp, "raw_interval", "raw_span", 5, {label: 1.0, start: 1.0, end: 1.0, duration: 1.0}, i)
    for i in range(closures):
        old_open, closed = f"{b.prefix}:open_interval:{i}:old", f"{b.prefix}:closed_interval:{i}:new_end"
        invalid = f"{b.prefix}:invalid_open_interval:{i}"
        b.invalidation.append(invalid)
        b.weights.update({old_open: 0.1, closed: 1.4, invalid: 1.6})
        exp, time = f"closure_{i}", intervals + i
        b.add(exp, "raw_closure", "raw_span", 5, {closed: 1.0, invalid: 0.45, old_open: 0.15}, time)
        b.add(exp, "closed_fact", "atomic_fact", 2, {closed: 1.0}, time)
        b.add(exp, "invalidate_open", "tombstone", 1, {invalid: 1.0}, time)
        b.add(exp, "compound_closure", "compound_update", 3, {closed: 1.0, invalid: 1.0}, time)
        b.add(exp, "closure_summary", "summary", 3, {closed: 0.7, invalid: 0.7}, time)
    return b.done(seed)


def abstention_hard(seed, normal_count=3, update_count=2):
    rng, count = _rng(seed, 53), _clamp(normal_count + update_count, 3, 5)
    b = _Builder(f"abstention_hard_s{seed}")
    for i in range(count):
        exp = f"question_{i}"
        if i % 2 == 0:
            abstain, conflict, unsupported = (
                f"{b.prefix}:abstain:{i}",
                f"{b.prefix}:conflict:{i}",
                f"{b.prefix}:unsupported_answer:{i}",
            )
            b.weights[abstain] = 2.0 + 0.15 * rng.randrange(3)
            b.weights[conflict] = 0.9
            b.weights[unsupported] = 0.05
            b.add(exp, "overconfident_fact", "atomic_fact", 2, {unsupported: 1.0}, i)
            b.add(exp, "abstain_marker", "abstention", 1, {abstain: 1.0}, i)
            b.add(exp, "conflict_marker", "uncertainty", 2, {abstain: 0.8, conflict: 1.0}, i)
            b.add(exp, "raw_conflict", "raw_span", 4, {abstain: 0.9, conflict: 1.0, unsupported: 0.1}, i)
            b.add(exp, "ambiguous_summary", "summary", 3, {abstain: 0.65, conflict: 0.7}, i)
        else:
            answer, evidence, abstain = (
                f"{b.prefix}:answer:{i}",
                f"{b.prefix}:evidence:{i}",
                f"{b.prefix}:unneeded_abstain:{i}",
            )
            b.weights[answer] = 1.75 + 0.15 * rng.randrange(2)
            b.weights[evidence] = 0.55
            b.weights[abstain] = 0.2
            b.add(exp, "answer_fact", "atomic_fact", 2, {answer: 1.0}, i)
            b.add(exp, "unneeded_abstain", "abstention", 1, {abstain: 1.0}, i)
            b.add(exp, "evidence_summary", "summary", 3, {answer: 0.75, evidence: 0.8}, i)
            b.add(exp, "raw_answer", "raw_span", 4, {answer: 1.0, evidence: 1.0}, i)
    return b.done(seed)


GENERATORS = {
    f.__name__: f
    for f in (
        density_trap,
        update_chain,
        scope_shift,
        summary_tradeoff,
        redundancy_heavy,
        temporal_interval,
        abstention_hard,
    )
}


def generate(name: str, seeds, normal_count: int = 3, update_count: int = 2) -> PackageSet:
    """Packages of one stress distribution, one per seed."""
    make = GENERATORS[name]
    return stack([make(int(seed), normal_count, update_count) for seed in seeds])
