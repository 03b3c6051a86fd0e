"""Read-aware learning: a gate trained on soft F1 against one trained on soft read accuracy, both metrics.

    python experiments/reads_gate.py [--steps 300] [--out experiments/results/reads_gate.md]

Two gates (unprivileged track), the same training pool, seed and settings as `wpbjax train` (docs/learning.md)
but for the soft objective: ``f1``: 1 - soft F1 (the default gate); ``reads``: 1 - soft read accuracy alone
(``f1_weight=0, read_weight=1``: default generated probes on the training episodes, the default retriever,
the expected top-5 retrieval under the soft gate's store probabilities, wpbjax.learn.soft_reads). Both keep the afford head's hindsight
term. Then both run as hard policies (``learned_gate:PATH``) on held-out episodes (the published generator's
four modes x 10 at seed 10_000, 200 steps: never seen in training) with the default generated probes:
mean F1 and read accuracy at K = 1, 5, 20, at 1 KB, 10 KB and 100 KB. Prints a markdown table (also --out).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import wpbjax.api as wj
from wpbjax.episodes.generators.parallel import generate_encoded
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.evaluate import HELD_OUT_SEED
from wpbjax.learn.gate import save_gate
from wpbjax.learn.train import train_gate
from wpbjax.reports.tables import budget_label

BUDGETS = (1024, 10240, 102400)
TOP_K = (1, 5, 20)
OBJECTIVES = {"f1": {}, "reads": {"f1_weight": 0.0, "read_weight": 1.0}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default="experiments/results/reads_gate.md")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = {}
    for name, overrides in OBJECTIVES.items():
        trained = train_gate(TrainConfig(steps=args.steps, **overrides))
        paths[name] = str(out.parent / f"reads_gate_{name}.npz")
        save_gate(
            paths[name],
            trained["weights"],
            "unprivileged",
            {"afford_threshold": trained["afford_threshold"], "objective": name, **overrides},
        )
        print(
            f"trained {name}: {trained['seconds']} s, final soft loss {trained['history'][-1]['soft_loss']}", flush=True
        )
    held_out = generate_encoded([DriftConfig(mode=mode, seed=HELD_OUT_SEED, steps=200) for mode in MODES], 10)
    results = wj.sweep(
        held_out,
        grid=wj.Grid(
            budgets=list(BUDGETS),
            policies=[f"learned_gate:{path}" for path in paths.values()],
            tracks=["unprivileged"],
        ),
        reads=wj.Reads(top_k=TOP_K, probes="generate"),
    )
    means = results.groupby(["policy", "budget_bytes", "top_k"])[["f1", "read_accuracy"]].mean()
    header = ["gate trained on", "budget", "F1"] + [f"read acc K={k}" for k in TOP_K]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for name, path in paths.items():
        for budget in BUDGETS:
            at = means.loc[(f"learned_gate:{path}", budget)]
            lines.append(
                f"| {name} | {budget_label(budget)} | {at.f1.iloc[0]:.3f} | "
                + " | ".join(f"{at.read_accuracy.loc[k]:.3f}" for k in TOP_K)
                + " |"
            )
    text = "\n".join(lines) + f"\n\n({time.perf_counter() - started:.0f} s, {args.steps} steps each)\n"
    print(text)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
