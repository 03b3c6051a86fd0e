"""Every zoo policy's mean F1 and utility/KB at 1 KB, 10 KB and 100 KB on the paper episodes.

    python experiments/policy_table.py [--out experiments/results/policy_table.md]

Paper episodes: the published generator's four modes x 10 episodes (seed 0, 200 steps). Each policy
runs on every track it supports (unprivileged, privileged, feedback, oracle), at its default params,
exact oracle. Prints a markdown table (also written to --out) and what stands out.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import pandas as pd

from wpbjax.common.tracks import ALL_TRACKS
from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.policies.zoo import ZOO_NAMES
from wpbjax.sweeps import run_sweep

BUDGETS = {1024: "1 KB", 10240: "10 KB", 102400: "100 KB"}


def policy_table() -> pd.DataFrame:
    encoded = concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode), 10)) for mode in MODES])
    results = run_sweep(encoded, budgets=list(BUDGETS), policies=list(ZOO_NAMES), tracks=list(ALL_TRACKS))
    return policy_means(results)


def policy_means(results: pd.DataFrame) -> pd.DataFrame:
    """Mean F1 and U/KB per (track, policy) at each of BUDGETS, from a sweep's rows (tests/reports/test_doc_tables.py
    feeds it the paper grid's)."""
    results = results[results.budget_bytes.isin(BUDGETS)]
    means = results.groupby(["track", "policy", "budget_bytes"], sort=False)[["f1", "utility_per_kb"]].mean()
    table = means.unstack("budget_bytes")
    table.columns = [f"{'F1' if metric == 'f1' else 'U/KB'} @ {BUDGETS[budget]}" for metric, budget in table.columns]
    return table[[f"{metric} @ {label}" for metric in ("F1", "U/KB") for label in BUDGETS.values()]]


def to_markdown(table: pd.DataFrame) -> str:
    lines = ["| track | policy | " + " | ".join(table.columns) + " |", "|" + " --- |" * (len(table.columns) + 2)]
    for (track, policy), row in table.iterrows():
        lines.append(f"| {track} | {policy} | " + " | ".join(f"{value:.3f}" for value in row) + " |")
    return "\n".join(lines)


def highlights(table: pd.DataFrame) -> list[str]:
    causal = table.drop(index=["oracle"], level="track", errors="ignore")
    lines = []
    for label in BUDGETS.values():
        best = causal[f"F1 @ {label}"].idxmax()
        lines.append(
            f"best causal F1 @ {label}: {best[1]} ({best[0]}) {causal[f'F1 @ {label}'].max():.3f}; "
            f"oracle_optimal {table.loc[('oracle', 'oracle_optimal'), f'F1 @ {label}']:.3f}"
        )
        best_u = causal[f"U/KB @ {label}"].idxmax()
        lines.append(f"best causal U/KB @ {label}: {best_u[1]} ({best_u[0]}) {causal[f'U/KB @ {label}'].max():.3f}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="experiments/results/policy_table.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    table = policy_table()
    markdown = to_markdown(table)
    print(markdown)
    for line in highlights(table):
        print(line)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(markdown + "\n")
    print(f"({time.perf_counter() - started:.0f} s; table written to {args.out})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
