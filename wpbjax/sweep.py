"""Sweeps: episodes × budgets × tracks × policies → one results table (the published columns).

Rows come in the published harness's order: episode set, budget, episode, track, policy.
"""
from __future__ import annotations

import sys
import time
from typing import Sequence

import numpy as np
import pandas as pd

from wpbjax import oracle as oracle_lib, simulate
from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.metrics import policy_utility, score
from wpbjax.policies import lineup, make
from wpbjax.tracks import check_track

PAPER_BUDGETS = (1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400, 262144, 1048576)
PUBLISHED_COLUMNS = ("avg_staleness", "budget_bytes", "bytes_used", "drift_coverage", "episode_id",
                     "expire_actions", "expire_rate", "f1", "mode", "oracle_utility", "policy",
                     "policy_utility", "precision", "recall", "regret", "regret_write_only", "track",
                     "utility_per_kb", "utilization", "write_actions", "write_density")


def check_budgets(budgets: Sequence[int]) -> np.ndarray:
    budgets = np.asarray(list(budgets))
    if budgets.size == 0:
        raise ValueError("budgets: give at least one budget")
    if not np.issubdtype(budgets.dtype, np.integer) or (budgets < 1).any() or (budgets >= 2**31).any():
        raise ValueError(f"budgets must be whole numbers of bytes between 1 and 2^31-1; got {budgets.tolist()}")
    return budgets.astype(np.int64)


def resolve_policies(spec: str | Sequence[str], tracks: Sequence[str]) -> dict[str, list[str]]:
    """Track → policy names. ``"reference"`` is the published line-up per track; otherwise the
    named policies each run on the asked tracks they support."""
    for track in tracks:
        check_track(track)
    if spec == "reference":
        return {track: list(lineup(track)) for track in tracks}
    names = [name for name in (spec.split(",") if isinstance(spec, str) else spec) if name]
    for name in names:
        if not set(make(name).tracks) & set(tracks):
            raise ValueError(f"policy {name!r} runs on tracks {', '.join(make(name).tracks)}, "
                             f"none of which was asked ({', '.join(tracks)})")
    return {track: [name for name in names if track in make(name).tracks] for track in tracks}


def oracle_table(encoded: EncodedEpisodes, track: str, budgets: np.ndarray, mode: str) -> np.ndarray:
    """[N, B] oracle utility per episode and budget under ``track``'s write costs."""
    costs = encoded.track_costs(track)
    lengths = encoded.arrays["length"]
    return np.stack([oracle_lib.oracle_utility(costs[n, :lengths[n]], encoded.utility64[n, :lengths[n]], budgets, mode)
                     for n in range(encoded.n_episodes)])


def run_sweep(encoded: EncodedEpisodes, budgets: Sequence[int] = PAPER_BUDGETS,
              policies: str | Sequence[str] = "reference", tracks: Sequence[str] = ("unprivileged", "privileged"),
              oracle: str = "exact", set_index: Sequence[int] | None = None, quiet: bool = True) -> pd.DataFrame:
    """Every (episode, budget, track, policy) run as one row with the published columns.

    ``set_index`` [N] groups episodes into sets (e.g. one per input file) for row order.
    """
    budgets = check_budgets(budgets)
    if oracle not in oracle_lib.ORACLE_MODES:
        raise ValueError(f"unknown oracle mode {oracle!r}; expected one of {', '.join(oracle_lib.ORACLE_MODES)}")
    plan = resolve_policies(policies, tracks)
    n_episodes, n_budgets = encoded.n_episodes, len(budgets)
    set_index = np.zeros(n_episodes, np.int64) if set_index is None else np.asarray(set_index)
    episode_axis = np.arange(n_episodes)[:, None].repeat(n_budgets, 1)
    budget_axis = np.arange(n_budgets)[None, :].repeat(n_episodes, 0)
    lengths = encoded.arrays["length"][:, None]
    frames = []
    for track_number, track in enumerate(plan):
        batch = encoded.batch(track)
        oracle_utility = oracle_table(encoded, track, budgets, oracle)
        for policy_number, name in enumerate(plan[track]):
            started = time.perf_counter()
            counts = simulate.simulate(make(name), batch, budgets)
            host = {field: np.asarray(value) for field, value in vars(counts).items()}
            utility = policy_utility(host["retained"], encoded.utility64[:, None, :])
            columns = score(host, utility, oracle_utility, encoded.n_critical[:, None],
                            encoded.total_drift_events[:, None], lengths, budgets[None, :])
            columns.update(budget_bytes=budgets[budget_axis], episode_id=np.asarray(encoded.episode_id, object)[episode_axis],
                           mode=np.asarray(encoded.mode, object)[episode_axis], policy=name, track=track,
                           merge_actions=host["merge_actions"].astype(np.int64),
                           _set=set_index[episode_axis], _budget=budget_axis, _episode=episode_axis,
                           _track=track_number, _policy=policy_number)
            frames.append(pd.DataFrame({key: np.broadcast_to(value, (n_episodes, n_budgets)).ravel()
                                        for key, value in columns.items()}))
            if not quiet:
                runs = n_episodes * n_budgets
                print(f"  {track:<12} {name:<20} {runs:>7} runs  {time.perf_counter() - started:6.2f} s",
                      file=sys.stderr)
    table = pd.concat(frames, ignore_index=True)
    table = table.sort_values(["_set", "_budget", "_episode", "_track", "_policy"], kind="stable")
    ordered = list(PUBLISHED_COLUMNS) + ["merge_actions"]
    return table[ordered].reset_index(drop=True)


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Mean F1 by (track, policy) × budget, rows in the table's order."""
    board = table.pivot_table(index=["track", "policy"], columns="budget_bytes", values="f1", aggfunc="mean")
    return board.reindex(pd.MultiIndex.from_frame(table[["track", "policy"]].drop_duplicates()))
