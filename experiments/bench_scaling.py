"""Throughput vs batch size N and episode length T, per policy: a table and a plot.

    python experiments/bench_scaling.py [--out-dir experiments/results] [--quick]

Writes ``scaling.csv`` (one row per policy × N × T with compile seconds, run seconds and
episode-steps/s) and ``scaling.png`` (throughput vs N at T=200, and per-step throughput vs T).
Figures come from ``wpbjax.bench.run_bench`` (best of 3 timed runs after a warm-up).
"""

import argparse
import os
import sys

import pandas as pd

from wpbjax.runtime.devices import use_every_core

use_every_core()  # as `wpbjax bench` does: one XLA CPU device per core (before JAX starts)

from wpbjax.bench import run_bench  # noqa: E402
from wpbjax.policies import lineup  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--policies", default=",".join(name for name in lineup("privileged") if name != "no_mem"))
    args = parser.parse_args()
    policies = args.policies.split(",")
    sizes = [200, 1000] if args.quick else [1000, 3000, 10000, 30000]
    lengths = [50, 200] if args.quick else [100, 200, 500, 1000, 2000]
    fixed_n = sizes[0] if args.quick else 2000  # the T sweep: 2,000 episodes x 3 budgets
    rows = []
    for n_episodes in sizes:
        report = run_bench(n_episodes=n_episodes, n_steps=200, policies=policies, budgets=(1024, 10240, 102400))
        rows += [dict(row, episodes=n_episodes, steps=200, sweep="N") for row in report["policies"]]
        print(
            f"N={n_episodes}: "
            + ", ".join(f"{r['policy']} {r['episode_steps_per_s'] / 1e6:.1f}M" for r in report["policies"]),
            flush=True,
        )
    for n_steps in lengths:
        report = run_bench(n_episodes=fixed_n, n_steps=n_steps, policies=policies, budgets=(1024, 10240, 102400))
        rows += [dict(row, episodes=fixed_n, steps=n_steps, sweep="T") for row in report["policies"]]
        print(
            f"T={n_steps}: "
            + ", ".join(f"{r['policy']} {r['episode_steps_per_s'] / 1e6:.1f}M" for r in report["policies"]),
            flush=True,
        )
    table = pd.DataFrame(rows)
    os.makedirs(args.out_dir, exist_ok=True)
    table.to_csv(os.path.join(args.out_dir, "scaling.csv"), index=False)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_n, by_t) = plt.subplots(1, 2, figsize=(11, 4.2))
    for policy, group in table[table.sweep == "N"].groupby("policy", sort=False):
        by_n.plot(group.episodes, group.episode_steps_per_s, marker="o", label=policy)
    for policy, group in table[table.sweep == "T"].groupby("policy", sort=False):
        by_t.plot(group.steps, group.episode_steps_per_s, marker="o", label=policy)
    by_n.set(
        xscale="log",
        yscale="log",
        xlabel="episodes in the batch (×3 budgets = runs)",
        ylabel="episode-steps per second",
        title="Throughput vs batch size (T = 200)",
    )
    by_t.set(
        xscale="log",
        yscale="log",
        xlabel="steps per episode",
        ylabel="episode-steps per second",
        title=f"Per-step throughput vs episode length (N = {fixed_n})",
    )
    for axis in (by_n, by_t):
        axis.grid(True, which="both", alpha=0.3)
    by_t.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)
    figure.tight_layout()
    figure.savefig(os.path.join(args.out_dir, "scaling.png"), dpi=120)
    print(f"wrote {args.out_dir}/scaling.csv and scaling.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
