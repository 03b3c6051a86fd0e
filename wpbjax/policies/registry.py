"""Name → Policy. ``make("priority_greedy")``; ``register(policy)`` adds your own."""
from __future__ import annotations

from wpbjax.policies.base import Policy
from wpbjax.policies.reference import REFERENCE_POLICIES, TRACK_LINEUP

_REGISTRY: dict[str, Policy] = {}


def register(policy: Policy, replace: bool = False) -> Policy:
    if policy.name in _REGISTRY and not replace:
        raise ValueError(f"a policy named {policy.name!r} is already registered")
    _REGISTRY[policy.name] = policy
    return policy


def make(name: str) -> Policy:
    if name not in _REGISTRY and name.startswith("learned_gate:"):  # a trained gate checkpoint (wpbjax.learn)
        from wpbjax.learn.gate_policy import load_gate_policy

        return load_gate_policy(name[len("learned_gate:"):])
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def names() -> list[str]:
    return list(_REGISTRY)


def lineup(track: str) -> tuple[str, ...]:
    """The published harness's policies for ``track``, in its order."""
    return TRACK_LINEUP[track]


for _policy in REFERENCE_POLICIES:
    register(_policy)


# The policy zoo (spec and literature baselines, docs/policies.md): registered after the published seven.
from wpbjax.policies.zoo import ZOO_POLICIES  # noqa: E402

for _policy in ZOO_POLICIES:
    register(_policy)
