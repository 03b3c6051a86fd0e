"""The reference baselines on the JAX generator's new regimes (and `default` for comparison):
mean F1 by policy and budget, per regime.

    python experiments/new_regimes.py [--episodes 100] [--steps 200] [--budgets 2048,8192,32768]

Writes experiments/results/new_regimes.csv (every row) and prints one table per regime. What the
tables show is discussed in docs/generators.md.
"""
from __future__ import annotations

import argparse
import pathlib

import pandas as pd

from wpbjax.episodes import jax_gen
from wpbjax.sweep import run_sweep

REGIMES = ("default",) + jax_gen.NEW_MODES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--budgets", default="2048,8192,32768")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results" / "new_regimes.csv"))
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    configs = [jax_gen.JaxGenConfig(mode=mode, steps=args.steps, seed=args.seed) for mode in REGIMES]
    encoded = jax_gen.generate_encoded(configs, args.episodes)
    table = run_sweep(encoded, budgets=budgets, set_index=[i for i in range(len(REGIMES)) for _ in range(args.episodes)])
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    summary = table.pivot_table(index=["mode", "track", "policy"], columns="budget_bytes", values="f1", aggfunc="mean")
    critical = {config.mode: float(jax_gen.to_encoded(config, jax_gen.generate_arrays(config, args.episodes,
                                                                                        with_latent=False)
                                                      ).arrays.critical.mean()) for config in configs}
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        for mode in REGIMES:
            print(f"\n== {mode}: {args.episodes} episodes x {args.steps} steps, critical fraction "
                  f"{critical[mode]:.3f}; mean F1 ==")
            print(summary.loc[mode].to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"\nwrote {len(table):,} rows to {args.out}")


if __name__ == "__main__":
    main()
