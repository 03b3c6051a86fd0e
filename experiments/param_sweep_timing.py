"""Wall time of a 101-value priority_threshold sweep against a single threshold (paper episodes).

    python experiments/param_sweep_timing.py [--repeats 5]

Both run ``run_sweep`` (simulation, exact oracle, scoring, the results table) on the 40 paper
episodes at the 11 paper budgets, privileged track: 440 runs against 44,440. Reported: the first
call (compile included) and the best of ``--repeats`` warm calls, and the ratio of each.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.sweeps import PAPER_BUDGETS, run_sweep
from wpbjax.testing import count_compiles


def timed(encoded, thresholds, repeats):
    def once():
        started = time.perf_counter()
        table = run_sweep(
            encoded,
            budgets=PAPER_BUDGETS,
            policies=["priority_threshold"],
            tracks=["privileged"],
            params={"threshold": thresholds},
        )
        return time.perf_counter() - started, len(table)

    with count_compiles() as compiles:
        first, rows = once()
    compiled = compiles["jit(_counts_of_grid)"]
    warm = min(once()[0] for _ in range(repeats))
    return first, warm, rows, compiled


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    encoded = concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode), 10)) for mode in MODES])
    single = timed(encoded, [0.5], args.repeats)
    grid = timed(encoded, np.linspace(0, 1, 101), args.repeats)
    for label, (first, warm, rows, compiled) in (("1 threshold", single), ("101 thresholds", grid)):
        print(f"{label:>15}: {rows:>6,} rows, {compiled} compile(s); first call {first:.2f} s, warm best {warm:.3f} s")
    print(f"ratio 101 / 1: first call {grid[0] / single[0]:.2f}x, warm {grid[1] / single[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
