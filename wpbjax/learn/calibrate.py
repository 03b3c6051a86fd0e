"""Calibrate the gate's afford threshold on held-back training episodes (never evaluation seeds).

The afford head estimates how likely the incoming critical step belongs to an F1-best
continuation; where to cut that estimate depends on how costly a wrong skip is, which the
hindsight loss only approximates. So after training, the hard policy is run in the exact simulator
on calibration episodes (training seeds + 5_000, all modes, the paper budgets up to 16 KB) for a
few thresholds, and compared with the same gate budget-blind (afford ignored). Kept: the
threshold with the best mean F1 gain at 1 KB among those whose gain is >= -``tolerance`` for every
(mode, budget); the budget-blind gate itself (gain 0) always qualifies.
"""

from __future__ import annotations

import numpy as np

from wpbjax.core import rollout
from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.learn.gate_policy import BUDGET_BLIND, gate_policy
from wpbjax.scoring.metrics import f1_from_counts

CALIBRATION_BUDGETS = (1024, 2048, 4096, 8192, 10240, 16384)
THRESHOLDS = (-4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0)


def mean_f1_by_mode(counts, encoded: EncodedEpisodes) -> np.ndarray:
    """[modes, B] mean exact F1 from simulate counts ([N, B])."""
    hits, retained = np.asarray(counts.n_hit, np.float64), np.asarray(counts.n_retained, np.float64)
    n_critical = encoded.n_critical[:, None].astype(np.float64)
    f1 = f1_from_counts(hits, retained, n_critical)
    modes = np.asarray(encoded.mode)
    return np.stack([f1[modes == mode].mean(axis=0) for mode in dict.fromkeys(encoded.mode)])


def calibrate_afford_threshold(weights: dict, track: str, encoded: EncodedEpisodes, tolerance: float = 0.002):
    """``(threshold, table)``: the chosen afford threshold, and per candidate its worst and 1 KB gains."""
    policy = gate_policy(weights, track)
    batch = encoded.batch(track)

    def f1(threshold):
        return mean_f1_by_mode(
            rollout.batch_counts(policy, batch, CALIBRATION_BUDGETS, params={"afford_threshold": threshold}), encoded
        )

    blind = f1(BUDGET_BLIND)
    best, best_gain, table = BUDGET_BLIND, 0.0, []
    for threshold in THRESHOLDS:
        gain = f1(threshold) - blind
        worst, at_1kb = float(gain.min()), float(gain[:, 0].mean())
        table.append({"afford_threshold": threshold, "worst_gain": round(worst, 4), "gain_1kb": round(at_1kb, 4)})
        if worst >= -tolerance and at_1kb > best_gain:
            best, best_gain = threshold, at_1kb
    return best, table
