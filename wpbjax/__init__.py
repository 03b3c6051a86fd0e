"""wpbjax: memory write policies under byte budgets, simulated in JAX.

    import wpbjax as wj

    episodes = wj.episodes.generate(modes=["default"], n_episodes=10)        # or wj.episodes.load("ep.jsonl")
    metrics = wj.simulate("priority_greedy", episodes, [1024, 10240], track="privileged")  # {name: [N, B]}
    table = wj.sweep(budgets=[1024, 10240], n_episodes=2)                    # the CLI sweep's rows
    board = wj.leaderboard(table)                                            # mean F1 by (track, policy) x budget
    wj.sweep_to_file("results.csv", budgets=[1024, 10240], n_episodes=2)     # + results.csv.meta.json
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
}
_API = ("simulate", "sweep", "sweep_to_file", "report", "leaderboard", "train_gate", "SweepFile", "adversary")
__all__ = [
    "EpisodeSource",
    "SweepFile",
    "WriteEnv",
    "actions",
    "adversary",
    "episodes",
    "leaderboard",
    "policies",
    "report",
    "simulate",
    "store",
    "sweep",
    "sweep_to_file",
    "train_gate",
]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[name])
    if name in _API:
        return getattr(importlib.import_module("wpbjax.api"), name)
    if name == "EpisodeSource":
        return importlib.import_module("wpbjax.episodes.source").EpisodeSource
    if name == "WriteEnv":  # the gymnax-style environment of wpbjax.learn
        return importlib.import_module("wpbjax.learn.env").WriteEnv
    raise AttributeError(f"module 'wpbjax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
