from wpbjax.policies.base import Policy
from wpbjax.policies.registry import lineup, make, names, register

__all__ = ["Policy", "lineup", "make", "names", "register"]
