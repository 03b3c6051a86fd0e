"""Modules that are also the API's functions: ``wpbjax.simulate``, ``wpbjax.sweep`` and ``wpbjax.report``
are modules (their code) and, called, run :func:`wpbjax.api.simulate`, :func:`wpbjax.api.sweep` and
:func:`wpbjax.api.report`. A package attribute cannot be both a function and a submodule of the same
name (importing the submodule rebinds the attribute), so the module itself is made callable."""
from __future__ import annotations

import sys
import types


def make_callable(module_name: str, api_name: str) -> None:
    """Calling module ``module_name`` calls ``wpbjax.api.<api_name>`` (imported on the first call)."""

    def __call__(self, *args, **kwargs):
        from wpbjax import api

        return getattr(api, api_name)(*args, **kwargs)

    __call__.__doc__ = f"Run :func:`wpbjax.api.{api_name}` (see its docstring)."
    module = sys.modules[module_name]
    module.__class__ = type(f"CallableModule_{api_name}", (types.ModuleType,), {"__call__": __call__})
