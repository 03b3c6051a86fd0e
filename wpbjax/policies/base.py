"""Policy: a name, a params pytree with defaults, and pure ``init`` / ``act`` functions.

``act(params, state, store, episode, pos, budget) -> (Action, state)`` sees one episode's
arrays (``EpisodeBatch`` fields without the N axis), the store before the step, and the step
position. It may read past steps and stored items; it never changes the store — it emits
actions and :func:`wpbjax.store.apply` decides.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax.numpy as jnp


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

    def default_params(self) -> dict:
        """The default params as a pytree of scalar arrays (float32 or int32)."""
        return {name: jnp.asarray(value) for name, value in self.params.items()}
