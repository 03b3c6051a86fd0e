"""Policy: a name, a params pytree with defaults, and pure ``init`` / ``act`` functions.

``act(params, state, store, episode, pos, budget) -> (Action, state)`` sees one episode's
arrays (``EpisodeBatch`` fields without the N axis), the store as it stands, and the step
position. Keep it O(1) in T: rollouts run it millions of times. It may read past steps and stored items; it never changes the store — it emits
actions and :func:`wpbjax.state.store.apply` decides.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.state.actions import (  # noqa: F401 (re-exported)
    ALL_EMITS,
    DEFAULT_LAYOUT,
    EMIT_WRITE_PAST,
    EMITS,
    FIFO,
    LAYOUTS,
    OLDEST_ONLY,
    ORDER,
    check_names,
)


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
    # The actions the policy can emit (write, expire, merge, write_past) and how the store keeps its items
    # for it: ORDER if it reads the store's oldest-first links, or FIFO if it only ever expires the oldest
    # item (see wpbjax.state.actions and wpbjax.state.store.apply). The compiled step leaves out store code
    # for the rest, so declare all it needs; wpbjax.testing.check_policy checks that the declared sets give
    # the rows the defaults give. Any iterable of names becomes a frozenset.
    emits: frozenset = ALL_EMITS
    layout: frozenset = DEFAULT_LAYOUT
    # Hindsight policies (oracle track): a host function ``plan(write_cost [n, T] int, utility [n, T]
    # float64, length [n], budgets [B]) -> {name: [n, B, ...] array}`` whose outputs reach ``act`` as
    # extra per-run params (see wpbjax.core.rollout.grid_counts). None for every causal policy.
    plan: Callable[..., Any] | None = None

    def __post_init__(self):
        from wpbjax.common.tracks import ALL_TRACKS

        where = f"policy {self.name!r}"
        object.__setattr__(self, "emits", check_names(self.emits, EMITS, "emits", where))
        object.__setattr__(self, "layout", check_names(self.layout, LAYOUTS, "layout", where))
        if EMIT_WRITE_PAST in self.emits and not self.multi_action:
            raise ValueError(
                f"{where}: emits 'write_past', which needs multi_action=True (the policy acts again after it)"
            )
        if OLDEST_ONLY in self.layout and self.multi_action:
            raise ValueError(
                f"{where}: layout 'oldest_only' is for a policy that acts once per step (its EXPIRE takes effect "
                "at the next step's flush); a multi_action policy may declare 'fifo'"
            )
        tracks = (self.tracks,) if isinstance(self.tracks, str) else tuple(self.tracks)
        unknown = [track for track in tracks if track not in ALL_TRACKS]
        if unknown or not tracks:
            raise ValueError(
                f"{where}: unknown track(s) {unknown or '(none given)'}; tracks are {', '.join(ALL_TRACKS)}"
            )
        object.__setattr__(self, "tracks", tracks)
        params = {}
        for param, default in self.params.items():
            if isinstance(default, np.generic) and default.ndim == 0:
                default = default.item()  # numpy scalars: their Python value (int or float)
            if not isinstance(default, (int, float)):
                raise ValueError(f"{where}: param {param!r} must default to an int or a float; got {default!r}")
            params[param] = default
        object.__setattr__(self, "params", params)

    @property
    def features(self) -> frozenset:
        """The store code this policy's steps compile: what it emits and its layout (wpbjax.state.store)."""
        return self.emits | self.layout

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


def once_per_file_version(cache: dict, path: str, load: Callable):
    """``load(path)``, cached in ``cache`` per version of the file (path, mtime, size): a Policy made
    from a file stays one object, so it compiles once, until the file changes."""
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in cache:
        cache[key] = load(path)
    return cache[key]
