"""Policies: ``get(name, **params)`` a registered one, ``register(policy)`` your own (docs/policies.md)."""

from wpbjax.policies.base import ALL_EMITS, DEFAULT_LAYOUT, EMITS, LAYOUTS, Policy
from wpbjax.policies.registry import get, lineup, make, names, register, register_factory

__all__ = [
    "ALL_EMITS",
    "DEFAULT_LAYOUT",
    "EMITS",
    "LAYOUTS",
    "Policy",
    "get",
    "lineup",
    "make",
    "names",
    "register",
    "register_factory",
]
