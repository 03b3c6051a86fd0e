"""The library's module-level compiled programs, made with :func:`jit` so that each keeps its
function and options: :func:`wpbjax.testing.max_traces` rebuilds one to count its traces with
``chex.assert_max_traces`` (JAX's own compile counters are private)."""

from __future__ import annotations

import jax

_SOURCES: dict[int, tuple] = {}  # id(program) -> (program, function, jit options)


def jit(fn, **options):
    """``jax.jit(fn, **options)``, remembered (see :func:`source`)."""
    program = jax.jit(fn, **options)
    _SOURCES[id(program)] = (program, fn, options)
    return program


def source(program) -> tuple:
    """``(function, jit options)`` of a program made by :func:`jit`."""
    if id(program) not in _SOURCES or _SOURCES[id(program)][0] is not program:
        raise ValueError(f"{program!r} was not made by wpbjax.runtime.programs.jit")
    return _SOURCES[id(program)][1:]
