"""Policy: a name, a params pytree with defaults, and pure ``init`` / ``act`` functions.

``act(params, state, store, episode, pos, budget) -> (Action, state)`` sees one episode's
arrays (``EpisodeBatch`` fields without the N axis), the store as it stands, and the step
position. Keep it O(1) in T: rollouts run it millions of times. It may read past steps and stored items; it never changes the store — it emits
actions and :func:`wpbjax.store.apply` decides.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np


def no_state(params, episode, key):
    """``init`` for stateless policies."""
    return ()


@dataclasses.dataclass(frozen=True, eq=False)
class Policy:
    name: str
    act: Callable[..., Any]
    tracks: tuple = ("unprivileged", "privileged")
    params: dict = dataclasses.field(default_factory=dict)  # default params (scalars)
    init: Callable[..., Any] = no_state
    doc: str = ""
    # True if the policy may emit CONTINUE (several EXPIREs of different items in one step); the
    # rollout then loops within the step. Off by default: a single call per step is cheaper.
    multi_action: bool = False
    # The action kinds the policy can emit ("write", "expire", "merge"), plus "order" if it reads the
    # store's oldest-first links, or "fifo" if it only ever expires the oldest item (see
    # wpbjax.store.apply). The compiled step leaves out store code for the rest, so declare all it needs.
    kinds: frozenset = frozenset({"write", "expire", "merge", "order"})
    # Hindsight policies (oracle track): a host function ``plan(write_cost [n, T] int, utility [n, T]
    # float64, length [n], budgets [B]) -> {name: [n, B, ...] array}`` whose outputs reach ``act`` as
    # extra per-run params (see wpbjax.simulate.simulate_grid). None for every causal policy.
    plan: Callable[..., Any] | None = None

    def default_params(self) -> dict:
        """The default params as a pytree of arrays (int32 for int defaults, else float32)."""
        return self.resolve_params({})

    def resolve_params(self, overrides) -> dict:
        """Defaults updated by ``overrides``, each cast to its default's dtype (int32 or
        float32, never weakly typed) so that new values never recompile. Values may carry
        leading axes (a batch of params)."""
        unknown = sorted(set(overrides) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise ValueError(f"policy {self.name!r} has no param {', '.join(unknown)}; its params: {known}")
        resolved = {}
        for name, default in self.params.items():
            dtype = np.int32 if isinstance(default, int) and not isinstance(default, bool) else np.float32
            value = overrides.get(name, default)
            # host values stay numpy: jnp.asarray would compile a tiny program per value shape
            resolved[name] = jnp.asarray(value, dtype) if isinstance(value, jax.Array) else np.asarray(value, dtype)
        return resolved
