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

from wpbjax.episodes.generators import jax_gen
from wpbjax.sweeps import run_sweep

REGIMES = ("default",) + jax_gen.NEW_MODES
TABLE_POLICIES = ("fifo_store_all", "last_kb", "merge_aggressive", "priority_threshold", "priority_greedy")


def regime_rows(
    regimes=REGIMES, episodes: int = 100, steps: int = 200, budgets=(2048, 8192, 32768), seed: int = 0, **sweep_options
) -> pd.DataFrame:
    """Every run of the reference baselines on ``episodes`` x ``steps`` episodes of each regime (each regime's
    episodes depend only on its mode and the seed, so a subset of regimes gives the same rows)."""
    configs = [jax_gen.JaxGenConfig(mode=mode, steps=steps, seed=seed) for mode in regimes]
    encoded = jax_gen.generate_encoded(configs, episodes)
    set_index = [i for i in range(len(configs)) for _ in range(episodes)]
    return run_sweep(encoded, budgets=list(budgets), set_index=set_index, **sweep_options)


def privileged_markdown(table: pd.DataFrame) -> str:
    """Mean F1 on the privileged track, a row per (regime, budget), a column per TABLE_POLICIES: the table
    in docs/generators.md."""
    privileged = table[table.track == "privileged"]
    means = privileged.pivot_table(
        index=["mode", "budget_bytes"], columns="policy", values="f1", aggfunc="mean", sort=False
    )
    lines = ["| regime | budget | " + " | ".join(TABLE_POLICIES) + " |", "|" + " --- |" * (len(TABLE_POLICIES) + 2)]
    for (mode, budget), row in means.iterrows():
        lines.append(f"| {mode} | {budget:,} | " + " | ".join(f"{row[policy]:.3f}" for policy in TABLE_POLICIES) + " |")
    return "\n".join(lines)


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
    table = regime_rows(REGIMES, args.episodes, args.steps, budgets, args.seed)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    summary = table.pivot_table(index=["mode", "track", "policy"], columns="budget_bytes", values="f1", aggfunc="mean")
    critical = {
        config.mode: float(
            jax_gen.to_encoded(
                config, jax_gen.generate_arrays(config, args.episodes, with_latent=False)
            ).arrays.critical.mean()
        )
        for config in configs
    }
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        for mode in REGIMES:
            print(
                f"\n== {mode}: {args.episodes} episodes x {args.steps} steps, critical fraction "
                f"{critical[mode]:.3f}; mean F1 =="
            )
            print(summary.loc[mode].to_string(float_format=lambda v: f"{v:.3f}"))
    print("\nMean F1, privileged track (the table in docs/generators.md):\n" + privileged_markdown(table))
    print(f"\nwrote {len(table):,} rows to {args.out}")


if __name__ == "__main__":
    main()
