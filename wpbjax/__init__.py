"""wpbjax: memory write policies under byte budgets, simulated in JAX.

    import wpbjax as wj

    episodes = wj.episodes.generate(modes=["default"], n_episodes=10)        # or wj.episodes.load("ep.jsonl")
    metrics = wj.simulate("priority_greedy", episodes, [1024, 10240], track="privileged")  # {name: [N, B]}
    grid = wj.Grid(budgets=[1024, 10240])                                    # what runs (wj.Reads, wj.Tiers, wj.Run)
    table = wj.sweep(wj.Generate(n_episodes=2), grid=grid)                   # the CLI sweep's rows
    board = wj.leaderboard(table)                                            # mean F1 by (track, policy) x budget
    wj.sweep(wj.Generate(n_episodes=2), grid=grid, out="results.csv")        # + results.csv.meta.json
    wj.report("results.csv", "report/")                                      # tables and figures
    policy = wj.policies.get("priority_threshold", threshold=0.5); wj.policies.register(my_policy)
    # a policy's act emits wj.actions (write_if, skip, ...) and reads the store through wj.store (remaining, ...)

Attributes load on first use (``import wpbjax`` alone imports no JAX). The public functions live in
:mod:`wpbjax.api`; the code behind them in packages named for what they hold (``core``, ``sweeps``,
``reports``; docs/api.md lists the API and the naming scheme).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBMODULES = {
    "episodes": "wpbjax.episodes",
    "policies": "wpbjax.policies",
    "actions": "wpbjax.state.actions",
    "store": "wpbjax.state.store",
    "host": "wpbjax.host",
}
_API = (
    "simulate",
    "sweep",
    "report",
    "leaderboard",
    "train_gate",
    "SweepFile",
    "run_python_policy",
    "score_steps",
    "adversary",
)
_CONFIGS = ("Generate", "Grid", "Reads", "Tiers", "Run")  # a sweep's configs (wpbjax.sweeps.config)
__all__ = [
    "EpisodeSource",
    "Generate",
    "Grid",
    "Reads",
    "Run",
    "SweepFile",
    "Tiers",
    "WriteEnv",
    "actions",
    "adversary",
    "episodes",
    "host",
    "leaderboard",
    "policies",
    "report",
    "run_python_policy",
    "score_steps",
    "simulate",
    "store",
    "sweep",
    "train_gate",
]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[name])
    if name in _API:
        return getattr(importlib.import_module("wpbjax.api"), name)
    if name in _CONFIGS:
        return getattr(importlib.import_module("wpbjax.sweeps.config"), name)
    if name == "EpisodeSource":
        return importlib.import_module("wpbjax.episodes.source").EpisodeSource
    if name == "WriteEnv":  # the gymnax-style environment of wpbjax.learn
        return importlib.import_module("wpbjax.learn.env").WriteEnv
    raise AttributeError(f"module 'wpbjax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
