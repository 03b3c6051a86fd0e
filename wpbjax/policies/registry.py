"""Name → Policy.

* ``get("priority_greedy")`` (or ``make``): a registered policy; ``get("uniform_sample", every_n=5)``
  the same policy with other default params (one Policy object per distinct set, so it compiles once).
* ``register(policy)`` adds your own; ``register_factory("learned_gate", loader)`` makes every name
  ``learned_gate:ARG`` resolve to ``loader(ARG)``.
* A name that is neither resolves as a spec of a user's module: ``"my_pkg.my_policies:MY_POLICY"``
  (an importable module and an attribute) or ``"path/to/file.py:MY_POLICY"`` (``:POLICY`` when the
  attribute is left out), so the CLI's ``--policies`` sweeps your own policy with no CLI change.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable

from wpbjax.policies.base import Policy, once_per_file_version
from wpbjax.policies.published import PUBLISHED_POLICIES, TRACK_LINEUP

_REGISTRY: dict[str, Policy] = {}
_FACTORIES: dict[str, Callable[[str], Policy]] = {}
_VARIANTS: dict[tuple, Policy] = {}  # (name, params) -> Policy with those defaults (one object: one compile)
_FILE_MODULES: dict[tuple, object] = {}  # (path, mtime, size) -> module loaded from a .py file


def register(policy: Policy, replace: bool = False) -> Policy:
    """Add ``policy`` under its name (a ValueError if the name is taken, unless ``replace``)."""
    if not isinstance(policy, Policy):
        raise TypeError(f"register: expected a wpbjax.policies.Policy; got {type(policy).__name__}")
    if ":" in policy.name:
        raise ValueError(
            f"policy names may not contain ':' (it separates a factory or module from its "
            f"argument); got {policy.name!r}"
        )
    if policy.name in _REGISTRY and not replace:
        raise ValueError(f"a policy named {policy.name!r} is already registered")
    _REGISTRY[policy.name] = policy
    return policy


def register_factory(prefix: str, loader: Callable[[str], Policy] | str, replace: bool = False) -> None:
    """Resolve every name ``PREFIX:ARG`` to ``loader(ARG)`` (a Policy; cache it if it is costly:
    an equal Policy made twice compiles twice). ``loader`` may be named as ``"module.path:function"``,
    imported on first use (as gymnasium's ``entry_point``): a factory from a layer above the registry."""
    if prefix in _FACTORIES and not replace:
        raise ValueError(f"a policy factory {prefix!r} is already registered")
    _FACTORIES[prefix] = loader


def get(name: str, **params) -> Policy:
    """The policy called ``name`` (registered, ``FACTORY:ARG`` or ``module:ATTR``), with ``params``
    overriding its default params (unknown names raise)."""
    policy = make(name)
    if not params:
        return policy
    policy.resolve_params(params)  # checks the names and that the values cast
    key = (name, tuple(sorted(params.items())))
    if key not in _VARIANTS:
        import dataclasses

        _VARIANTS[key] = dataclasses.replace(policy, params={**policy.params, **params})
    return _VARIANTS[key]


def make(name: str) -> Policy:
    """The policy called ``name`` (see :func:`get`, without param overrides)."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    prefix, colon, arg = name.partition(":")
    if colon and prefix in _FACTORIES:
        return _factory(prefix)(arg)
    if colon or name.endswith(".py"):
        return _from_module(name)
    raise ValueError(
        f"unknown policy {name!r}; known: {', '.join(sorted(_REGISTRY))} (or FACTORY:ARG with a "
        f"factory among {', '.join(sorted(_FACTORIES))}, or module.path:ATTR, or file.py:ATTR)"
    )


def _factory(prefix: str) -> Callable[[str], Policy]:
    """The loader registered for ``prefix``, imported when it was registered by name."""
    loader = _FACTORIES[prefix]
    if isinstance(loader, str):
        module, _, function = loader.partition(":")
        loader = _FACTORIES[prefix] = getattr(importlib.import_module(module), function)
    return loader


def _from_module(spec: str) -> Policy:
    """The Policy at ``module.path:ATTR`` or ``file.py[:ATTR]`` (ATTR defaults to ``POLICY``)."""
    where, _, attr = spec.rpartition(":") if not spec.endswith(".py") else (spec, ":", "")
    attr = attr or "POLICY"
    try:
        module = _load_file(where) if where.endswith(".py") else importlib.import_module(where)
    except (ImportError, OSError, SyntaxError) as err:
        raise ValueError(f"policy {spec!r}: cannot load {where!r} ({type(err).__name__}: {err})") from None
    policy = getattr(module, attr, None)
    if not isinstance(policy, Policy):
        found = "nothing" if policy is None else f"a {type(policy).__name__}"
        raise ValueError(f"policy {spec!r}: {where}:{attr} must be a wpbjax.policies.Policy; found {found}")
    return policy


def _load_file(path: str):
    """The module of a .py file, loaded once per file version."""
    if not os.path.isfile(path):
        raise OSError(f"no such file {path!r}")
    return once_per_file_version(_FILE_MODULES, path, _exec_file)


def _exec_file(path: str):
    module_name = f"wpbjax_user_policy_{len(_FILE_MODULES)}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    loader_spec.loader.exec_module(module)
    return module


def names() -> list[str]:
    return list(_REGISTRY)


def lineup(track: str) -> tuple[str, ...]:
    """The published harness's policies for ``track``, in its order."""
    return TRACK_LINEUP[track]


for _policy in PUBLISHED_POLICIES:
    register(_policy)
# (named, not imported: the policies layer sits below wpbjax.learn, which loads only when a gate is asked for)
register_factory("learned_gate", "wpbjax.learn.gate_policy:load_gate_policy")


# The policy zoo (spec and literature baselines, docs/policies.md): registered after the published seven.
from wpbjax.policies.zoo import ZOO_POLICIES  # noqa: E402

for _policy in ZOO_POLICIES:
    register(_policy)
