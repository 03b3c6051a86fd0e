"""Traced programs kept on disk beside the compile cache, so that a second process skips tracing too.

JAX's persistent compile cache spares a process XLA's compile, not the Python trace and lowering that come
first; for a policy's rollout (a scan over steps, vmapped twice, with the store's and the policy's code
inside) that trace is most of a warm sweep's first seconds. :func:`call` runs a program made by
:func:`wpbjax.runtime.programs.jit` through ``jax.export``: the first process to meet a program and its
argument types traces it as usual, exports it (StableHLO) and writes it to ``DIR/traced`` (``DIR``: JAX's
compile cache, ``$WPBJAX_CACHE_DIR`` under the CLI); later processes read it back and only embed it, and the
compile cache then finds the compiled program.

An entry is keyed by everything the trace depends on: the source of every module of :mod:`wpbjax`, the
JAX, jaxlib and numpy versions, the devices, the program's function and options, the static arguments
described field by field (a dataclass by its fields, a function by its module, name, defaults and closure,
a JAX or numpy callable by its name, an array by its bytes), and each other argument's type, shape, dtype and sharding. A static argument that
cannot be described so (an object of another kind, a function from outside :mod:`wpbjax`, JAX and numpy)
makes the call an ordinary one: nothing is read or written. Entries are written to a temporary file and
renamed into place; one that cannot be read, written or used is skipped, and the program runs as usual.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import pickle
import tempfile
import types

import jax
import numpy as np

from wpbjax.runtime import programs

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_KNOWN_MODULES = ("wpbjax", "jax", "numpy")  # functions whose code the key covers (source or version)
_LOADED: dict[str, tuple | None] = {}  # key -> (jitted call of the exported program, out tree), or None:
#   a program that could not be exported runs as an ordinary one (this process's)


def call(program, *args):
    """``program(*args)`` for a program made by :func:`wpbjax.runtime.programs.jit`, its trace read from
    the cache when the cache is on (JAX's compile cache has a directory) and the call can be keyed."""
    folder = _folder()
    if folder is None:
        return program(*args)
    try:
        function, options = programs.source(program)
    except ValueError:  # a program made otherwise (wpbjax.testing.max_traces swaps in a counting one)
        return program(*args)
    numbers = options.get("static_argnums", ())
    static = frozenset((numbers,) if isinstance(numbers, int) else numbers)
    dynamic = tuple(arg for number, arg in enumerate(args) if number not in static)
    leaves, in_tree = jax.tree_util.tree_flatten(dynamic)
    key = _key(function, options, args, static, leaves, in_tree)
    if key is None:
        return program(*args)
    if key not in _LOADED:
        _LOADED[key] = _read(folder, key, options) or _export(folder, key, function, options, args, static, leaves)
    if _LOADED[key] is None:
        return program(*args)
    run, out_tree = _LOADED[key]
    return jax.tree_util.tree_unflatten(out_tree, run(*leaves))


def _folder() -> str | None:
    """``DIR/traced`` of JAX's compile cache, or None: no cache, or several processes (whose programs span
    every process's devices: they are traced as usual)."""
    cache = jax.config.jax_compilation_cache_dir
    return os.path.join(cache, "traced") if cache and jax.process_count() == 1 else None


@functools.lru_cache(maxsize=1)
def package_digest() -> str:
    """SHA-256 of the source of every module of wpbjax."""
    digest = hashlib.sha256()
    paths = sorted(
        os.path.join(folder, name) for folder, _, names in os.walk(_PACKAGE) for name in names if name.endswith(".py")
    )
    for path in paths:
        with open(path, "rb") as handle:
            digest.update(os.path.relpath(path, _PACKAGE).encode() + b"\0" + handle.read())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _versions() -> list:
    return [jax.__version__, importlib.metadata.version("jaxlib"), np.__version__]


class _Opaque(Exception):
    """A static argument the key cannot describe."""


def describe(value):
    """A JSON-able description of ``value`` that equal descriptions give equal traces, or _Opaque."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return [type(value).__name__, value]
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [describe(item) for item in value]]
    if isinstance(value, (set, frozenset)):
        return ["set", sorted(json.dumps(describe(item)) for item in value)]
    if isinstance(value, dict):
        return ["dict", sorted([json.dumps(describe(name)), describe(item)] for name, item in value.items())]
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return ["array", array.dtype.str, list(array.shape), hashlib.sha256(array.tobytes()).hexdigest()]
    if isinstance(value, jax.sharding.Mesh):
        return ["mesh", list(value.axis_names), list(value.devices.shape), [d.id for d in value.devices.flat]]
    if isinstance(value, functools.partial):
        return ["partial", describe(value.func), describe(value.args), describe(value.keywords)]
    if isinstance(value, types.FunctionType):
        if not value.__module__.startswith(_KNOWN_MODULES):
            raise _Opaque(f"{value.__module__}.{value.__qualname__}")
        cells = [cell.cell_contents for cell in value.__closure__ or ()]
        defaults = [describe(value.__defaults__), describe(value.__kwdefaults__)]
        return ["function", value.__module__, value.__qualname__, defaults, describe(cells)]
    if callable(value) and not isinstance(value, type) and hasattr(value, "__name__"):
        # a jitted function or a ufunc of JAX or numpy: its code is the library's (its version is in the key)
        module = getattr(value, "__module__", None) or ""
        if not module.startswith(_KNOWN_MODULES):
            raise _Opaque(f"{module}.{value.__name__}")
        return ["callable", module, getattr(value, "__qualname__", None) or value.__name__]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        fields = {field.name: describe(getattr(value, field.name)) for field in dataclasses.fields(value)}
        return ["dataclass", kind.__module__, kind.__qualname__, fields]
    raise _Opaque(type(value).__qualname__)


def _leaf(leaf) -> list:
    """A dynamic argument's leaf as the trace sees it: its type, shape, dtype and sharding."""
    sharding, weak = getattr(leaf, "sharding", None), getattr(leaf, "weak_type", None)
    return [type(leaf).__name__, list(np.shape(leaf)), str(jax.numpy.result_type(leaf)), weak, repr(sharding)]


def _key(function, options, args, static, leaves, in_tree) -> str | None:
    try:
        parts = [
            package_digest(),
            _versions(),
            [[device.platform, device.device_kind, device.id] for device in jax.devices()],
            describe(function),
            describe({name: value for name, value in options.items() if name != "static_argnums"}),
            [describe(arg) for number, arg in enumerate(args) if number in static],
            str(in_tree),
            [_leaf(leaf) for leaf in leaves],
        ]
    except _Opaque:
        return None
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _read(folder: str, key: str, options) -> tuple | None:
    try:
        with open(os.path.join(folder, key + ".pkl"), "rb") as handle:
            stored = pickle.load(handle)
        exported = jax.export.deserialize(bytearray(stored["exported"]))
    except Exception:  # absent, unreadable, or from another serialisation: exported again
        return None
    return jax.jit(exported.call, compiler_options=options.get("compiler_options")), stored["out_tree"]


def _export(folder: str, key: str, function, options, args, static, leaves) -> tuple | None:
    """Trace and export ``function`` (a program's) for these arguments, write the entry; None if that fails.
    The program is exported over its dynamic arguments' leaves (``leaves``), the static ones fixed."""
    in_tree = jax.tree_util.tree_structure(tuple(arg for number, arg in enumerate(args) if number not in static))
    out_tree = []

    def flat(*leaves):
        dynamic = iter(jax.tree_util.tree_unflatten(in_tree, leaves))
        full = [arg if number in static else next(dynamic) for number, arg in enumerate(args)]
        leaves_out, tree = jax.tree_util.tree_flatten(function(*full))
        out_tree.append(tree)
        return leaves_out

    try:
        exported = jax.export.export(jax.jit(flat, compiler_options=options.get("compiler_options")))(*leaves)
        blob = {"exported": bytes(exported.serialize()), "out_tree": out_tree[-1]}
    except Exception:  # not exportable (a host callback), or no flatbuffers package: an ordinary call
        return None
    _write(folder, key, blob)
    return jax.jit(exported.call, compiler_options=options.get("compiler_options")), out_tree[-1]


def _write(folder: str, key: str, blob: dict) -> None:
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            pickle.dump(blob, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, os.path.join(folder, key + ".pkl"))
    except OSError:
        pass
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
