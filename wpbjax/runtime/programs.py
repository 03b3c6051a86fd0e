"""The library's module-level compiled programs, made with :func:`jit` so that each keeps its
function and options: :func:`wpbjax.testing.max_traces` rebuilds one to count its traces with
``chex.assert_max_traces`` (JAX's own compile counters are private)."""

from __future__ import annotations

import jax

from wpbjax.runtime import devices

_SOURCES: dict[int, tuple] = {}  # id(program) -> (program, function, jit options)


def jit(fn, **options):
    """``jax.jit(fn, **options)``, remembered (see :func:`source`)."""
    program = jax.jit(fn, **options)
    _SOURCES[id(program)] = (program, fn, options)
    return program


def full_and_quick(fn, quick_fn=None, **options) -> tuple:
    """``(full, quick)``: ``fn`` compiled as :func:`jit` with the library's compile options
    (``devices.COMPILER_OPTIONS``), and ``quick_fn`` (default ``fn``) with XLA's backend optimisation off
    (``devices.QUICK_COMPILER_OPTIONS``): it compiles sooner and runs slower (docs/performance.md), so a
    caller takes it for calls of little work (below ``devices.QUICK_COMPILE_BELOW`` run-steps, or its own bound)."""
    full = jit(fn, compiler_options=devices.COMPILER_OPTIONS, **options)
    return full, jit(quick_fn or fn, compiler_options=devices.QUICK_COMPILER_OPTIONS, **options)


def source(program) -> tuple:
    """``(function, jit options)`` of a program made by :func:`jit`."""
    if id(program) not in _SOURCES or _SOURCES[id(program)][0] is not program:
        raise ValueError(f"{program!r} was not made by wpbjax.runtime.programs.jit")
    return _SOURCES[id(program)][1:]
