"""Episodes: JSONL files and generators, encoded to fixed-shape arrays.

wpbjax.episodes.generate(modes=["default"], n_episodes=10, steps=200, seed=0)   # encoded episodes
wpbjax.episodes.load("episodes.jsonl")                                          # the same, from files
wpbjax.episodes.real("stripe", steps=200)                                        # real API drift windows
wpbjax.episodes.EpisodeSource.from_files([...]) / .generated(...)               # a recordable source
"""

from __future__ import annotations

import importlib

__all__ = ["EpisodeSource", "generate", "load", "real", "write_generated"]


def __getattr__(name: str):
    """The names above load on first use: reading or writing episode files (``wpbjax import-writ``)
    imports no JAX."""
    if name in __all__:
        return getattr(importlib.import_module("wpbjax.episodes.source"), name)
    raise AttributeError(f"module 'wpbjax.episodes' has no attribute {name!r}")
