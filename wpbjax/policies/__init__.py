"""Policies: ``get(name, **params)`` a registered one, ``register(policy)`` your own (docs/policies.md)."""

from wpbjax.policies.base import ALL_KINDS, KINDS, Policy
from wpbjax.policies.registry import get, lineup, make, names, register, register_factory

__all__ = ["ALL_KINDS", "KINDS", "Policy", "get", "lineup", "make", "names", "register", "register_factory"]
