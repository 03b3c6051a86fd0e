"""The integrity-aware learned gate's F1 / update-fidelity trade-off (docs/integrity.md).

    python experiments/integrity_gate_curve.py [--weights 0,1,4] [--steps 150] [--out experiments/results/integrity_gate_curve.md]

For each fidelity weight w: `wpbjax train` with loss (1 - soft F1) + w (1 - soft update fidelity) (seed 0,
unprivileged, --steps), then the gate swept on the paper episodes (four modes x 10, seed 0) at 2, 4 and
10 KB; prints mean F1, update fidelity and history coverage per (w, budget).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import pandas as pd

from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.gate import save_gate
from wpbjax.learn.train import train_gate
from wpbjax.sweeps import run_sweep

BUDGETS = (2048, 4096, 10240)


def curve(weights, steps: int) -> pd.DataFrame:
    encoded = concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode), 10)) for mode in MODES])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for weight in weights:
            config = TrainConfig(steps=steps, fidelity_weight=weight)
            result = train_gate(config)
            path = f"{tmp}/gate_{weight}.npz"
            save_gate(path, result["weights"], config.track, {"afford_threshold": result["afford_threshold"]})
            table = run_sweep(encoded, list(BUDGETS), policies=[f"learned_gate:{path}"], tracks=[config.track])
            means = table.groupby("budget_bytes")[["f1", "update_fidelity", "history_coverage"]].mean()
            rows += [
                {"fidelity_weight": weight, "budget_bytes": budget, **means.loc[budget].to_dict()} for budget in BUDGETS
            ]
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    lines = [
        "| fidelity weight | budget | F1 | update fidelity | history coverage |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {row.fidelity_weight:g} | {row.budget_bytes} | {row.f1:.3f} | {row.update_fidelity:.3f} | "
        f"{row.history_coverage:.3f} |"
        for row in table.itertuples()
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", default="0,1,4", help="comma-separated fidelity weights")
    parser.add_argument("--steps", type=int, default=150, help="optimisation steps per gate")
    parser.add_argument("--out", default="experiments/results/integrity_gate_curve.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    markdown = to_markdown(curve([float(w) for w in args.weights.split(",")], args.steps))
    print(markdown)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(markdown)
    print(f"({time.perf_counter() - started:.0f} s; written to {args.out})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
