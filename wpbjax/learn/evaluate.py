"""Hard-policy evaluation of trained gates in the exact simulator, against the baselines and the
F1-optimal store.

The F1-optimal store at budget B keeps only critical steps, as many as fit: the k cheapest
(a prefix of the costs sorted ascending), so F1* = 2k / (k + |R|).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.episodes.generators.parallel import generate_encoded
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig
from wpbjax.scoring.metrics import f1_from_counts
from wpbjax.sweeps import PAPER_BUDGETS, run_sweep

HELD_OUT_SEED = 10_000  # held-out evaluation episodes (training uses seeds >= 100_000)


def evaluation_sets(n_episodes: int = 10) -> dict[str, EncodedEpisodes]:
    """The published sets (seed 0, 200 steps) and held-out 500-step sets (seed 10_000), all modes."""
    return {
        "published": generate_encoded([DriftConfig(mode=mode, seed=0, steps=200) for mode in MODES], n_episodes),
        "held_out_500": generate_encoded(
            [DriftConfig(mode=mode, seed=HELD_OUT_SEED, steps=500) for mode in MODES], n_episodes
        ),
    }


def f1_optimal(encoded: EncodedEpisodes, track: str, budgets) -> np.ndarray:
    """[N, B] F1 of the best store: the cheapest critical steps that fit (|R| counts every critical t)."""
    costs, critical = encoded.track_costs(track), encoded.arrays.critical & encoded.arrays.valid
    out = np.zeros((encoded.n_episodes, len(budgets)))
    for n in range(encoded.n_episodes):
        prefix = np.cumsum(np.sort(costs[n][critical[n]]))
        fitting = np.searchsorted(prefix, np.asarray(budgets), side="right")
        n_critical = encoded.n_critical[n]
        out[n] = f1_from_counts(fitting, fitting, n_critical)  # every fitting critical step is a hit
    return out


def compare(encoded: EncodedEpisodes, gates: dict[str, str], budgets=PAPER_BUDGETS) -> pd.DataFrame:
    """Mean F1 per (track, mode, budget) of every published baseline and each gate, plus ``f1_optimal``.

    ``gates``: track -> checkpoint path. Returns a long table: track, mode, budget_bytes, policy, f1.
    """
    frames = []
    for track, path in gates.items():
        table = run_sweep(encoded, budgets=budgets, policies="published", tracks=[track])
        gate = run_sweep(encoded, budgets=budgets, policies=[f"learned_gate:{path}"], tracks=[track])
        gate["policy"] = f"learned_gate ({track})"
        table = pd.concat([table, gate], ignore_index=True)
        optimal = f1_optimal(encoded, track, list(budgets))
        modes = np.asarray(encoded.mode)
        for index, budget in enumerate(budgets):
            for mode in dict.fromkeys(encoded.mode):
                frames.append(
                    pd.DataFrame(
                        {
                            "track": [track],
                            "mode": [mode],
                            "budget_bytes": [budget],
                            "policy": ["f1_optimal"],
                            "f1": [optimal[modes == mode, index].mean()],
                        }
                    )
                )
        frames.append(
            table.groupby(["track", "mode", "budget_bytes", "policy"], as_index=False, sort=False)["f1"].mean()
        )
    return pd.concat(frames, ignore_index=True)


def wide(long: pd.DataFrame) -> pd.DataFrame:
    """Rows (track, mode, policy) x columns budget_bytes."""
    return long.pivot_table(index=["track", "mode", "policy"], columns="budget_bytes", values="f1", sort=False)
