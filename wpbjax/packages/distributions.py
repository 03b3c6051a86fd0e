"""Named package distributions: memaudit_small and the artifact's stress distributions."""

from __future__ import annotations

from wpbjax.packages.catalog import DISTRIBUTIONS, STRESS
from wpbjax.packages.memaudit_gen import memaudit_small
from wpbjax.packages.model import PackageSet


def generate(name: str, seeds, normal_count: int = 3, update_count: int = 2) -> PackageSet:
    """Packages of a named distribution for the given seeds (bit-exact to the artifact)."""
    if name in ("memaudit_small", "base"):
        return memaudit_small(seeds, normal_count, update_count)
    if name in STRESS:
        from wpbjax.packages import stress

        return stress.generate(name, seeds, normal_count, update_count)
    raise ValueError(f"unknown distribution {name!r}; choose from {', '.join(DISTRIBUTIONS)}")
