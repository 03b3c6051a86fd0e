"""Saved weights of small two-layer MLP heads as ``.npz`` (the learned gate's and the learned package
writer's): float32 arrays ``HEAD/LAYER`` plus a JSON ``info`` entry, and the checks that give one
clear ValueError naming the file instead of a traceback."""

from __future__ import annotations

import json
import os
import zipfile

import jax.numpy as jnp
import numpy as np

from wpbjax.files.atomic import atomic_file

LAYERS = ("w_in", "b_in", "w_out", "b_out")  # tanh(x @ w_in + b_in) @ w_out + b_out


def save_heads(path: str, weights: dict, info: dict) -> None:
    """Write ``weights: {head: {layer: array}}`` and JSON-able ``info`` to ``path``."""
    arrays = {
        f"{head}/{name}": np.asarray(layers[name], np.float32) for head, layers in weights.items() for name in LAYERS
    }
    # a file object: np.savez would append ".npz" to other names; atomic: a complete file or none
    with atomic_file(path, "wb") as handle:
        np.savez(handle, **arrays, info=np.asarray(json.dumps(info)))


def load_heads(path: str, heads, label: str, command: str) -> tuple[dict, dict]:
    """``(weights, info)`` from ``path``; ValueError naming the file (as ``label``) if it is missing or
    not an .npz of these heads (``command`` is what writes one)."""
    if not os.path.isfile(path):
        raise ValueError(f"{label} {path!r}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            info = json.loads(str(data["info"]))
            weights = {
                head: {name: jnp.asarray(data[f"{head}/{name}"], jnp.float32) for name in LAYERS} for head in heads
            }
    except (OSError, KeyError, ValueError, EOFError, RecursionError, zipfile.BadZipFile) as err:
        raise ValueError(
            f"{label} {path!r} is malformed ({type(err).__name__}: {err}); expected an .npz written by `{command}`"
        ) from None
    return weights, info


def check_head_shapes(weights: dict, widths: dict, label: str, path: str) -> None:
    """Every head ``h`` is ``[widths[h], H] -> [H] -> scalar`` for one hidden width H."""
    for head, width in widths.items():
        hidden = weights[head]["b_in"].shape
        shapes = {"w_in": (width,) + hidden, "b_in": hidden, "w_out": hidden, "b_out": ()}
        for name, shape in shapes.items():
            if len(hidden) != 1 or weights[head][name].shape != shape:
                raise ValueError(
                    f"{label} {path!r}: {head}/{name} has shape {weights[head][name].shape}, expected {shape}"
                )
