"""Episodes: JSONL files and generators, encoded to fixed-shape arrays.

    wpbjax.episodes.generate(modes=["default"], n_episodes=10, steps=200, seed=0)   # encoded episodes
    wpbjax.episodes.load("episodes.jsonl")                                          # the same, from files
    wpbjax.episodes.EpisodeSource.from_files([...]) / .generated(...)               # a recordable source
"""
from wpbjax.episodes.source import EpisodeSource, generate, load, write_generated

__all__ = ["EpisodeSource", "generate", "load", "write_generated"]
