"""Train a learned package writer and report it on packages it never saw, against oracle_gvt.

    PYTHONPATH=. python experiments/train_package_writer.py --out-dir experiments/package_writer

Training: memaudit_small seeds from 1,000,000 on (``wpbjax.packages.learned_train``), each package
labelled with its certified OPT at every training budget. Evaluation (all certified exact):

- held-out seeds 0..N-1 of the training shape (the paper's base-sweep seeds);
- package shapes it never saw (other normal x update counts);
- the artifact's seven stress distributions.

For each set and budget: mean ratio to OPT of ``learned`` and ``oracle_gvt`` with 95% bootstrap
intervals, and the paired difference learned - GVT (same packages) with its 95% interval. Writes
``writer.npz``, ``rows.csv`` (every row) and ``summary.md``; prints the summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time

import numpy as np
import pandas as pd

from wpbjax.packages import sweeps
from wpbjax.packages.catalog import STRESS
from wpbjax.packages.distributions import generate
from wpbjax.packages.learned import save_writer
from wpbjax.packages.learned_train import WriterTrainConfig, train_writer

BUDGETS = (1, 2, 4, 8, 16)
UNSEEN_SHAPES = ((2, 1), (1, 2), (2, 2), (4, 2), (3, 3))


def paired_interval(diff: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of paired differences."""
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), (n_boot, len(diff)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def evaluate(writer: str, name: str, distribution: str, shape, seeds, budgets=BUDGETS) -> tuple[pd.DataFrame, list]:
    """Rows of opt / oracle_gvt / the learned writer on one evaluation set, and its summary lines."""
    method = f"learned:{writer}"
    pset = generate(distribution, seeds, *shape)
    rows = sweeps.run(pset, budgets, ["opt", "oracle_gvt", method], distribution=distribution)
    rows.insert(1, "eval_set", name)
    lines = []
    for budget in budgets:
        at = rows[rows.budget == budget]
        mine = at[at.method == method]["ratio"].to_numpy()
        gvt = at[at.method == "oracle_gvt"]["ratio"].to_numpy()
        lo, hi = sweeps.bootstrap_interval(mine)
        glo, ghi = sweeps.bootstrap_interval(gvt)
        dlo, dhi = paired_interval(mine - gvt)
        lines.append(
            {
                "set": name,
                "budget": budget,
                "n": len(mine),
                "learned": mine.mean(),
                "learned_ci": (lo, hi),
                "gvt": gvt.mean(),
                "gvt_ci": (glo, ghi),
                "diff": (mine - gvt).mean(),
                "diff_ci": (dlo, dhi),
            }
        )
    return rows, lines


def summary_markdown(lines: list) -> str:
    out = ["| set | B | learned [95% CI] | oracle_gvt [95% CI] | learned - GVT [95% CI] |", "|---|---:|---|---|---|"]
    for r in lines:
        out.append(
            f"| {r['set']} | {r['budget']} | {r['learned']:.4f} [{r['learned_ci'][0]:.4f}, {r['learned_ci'][1]:.4f}] "
            f"| {r['gvt']:.4f} [{r['gvt_ci'][0]:.4f}, {r['gvt_ci'][1]:.4f}] "
            f"| {r['diff']:+.4f} [{r['diff_ci'][0]:+.4f}, {r['diff_ci'][1]:+.4f}] |"
        )
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default="package_writer")
    parser.add_argument("--writer", default=None, help="evaluate this checkpoint instead of training one")
    parser.add_argument("--steps", type=int, default=WriterTrainConfig.steps)
    parser.add_argument("--packages", type=int, default=WriterTrainConfig.packages)
    parser.add_argument("--relaxation", default=WriterTrainConfig.relaxation)
    parser.add_argument("--distributions", default="memaudit_small", help="training distributions, comma-separated")
    parser.add_argument("--shapes", default="3x2", help="training NORMALxUPDATE shapes, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", default="", help="fine-tune this writer checkpoint")
    parser.add_argument("--hidden", type=int, default=WriterTrainConfig.hidden)
    parser.add_argument("--budgets", default=",".join(map(str, WriterTrainConfig.budgets)), help="training budgets")
    parser.add_argument("--learning-rate", type=float, default=WriterTrainConfig.learning_rate)
    parser.add_argument("--tau-start", type=float, default=WriterTrainConfig.tau_start)
    parser.add_argument("--tau-end", type=float, default=WriterTrainConfig.tau_end)
    parser.add_argument("--eval-seeds", type=int, default=500)
    parser.add_argument("--no-stress", action="store_true")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    distributions = tuple(args.distributions.split(","))
    shapes = tuple(tuple(int(n) for n in part.split("x")) for part in args.shapes.split(","))
    writer = args.writer
    if writer is None:
        config = WriterTrainConfig(
            seed=args.seed,
            steps=args.steps,
            packages=args.packages,
            relaxation=args.relaxation,
            check_packages=max(args.packages // 5, 1),
            distributions=distributions,
            shapes=shapes,
            init=args.init,
            hidden=args.hidden,
            budgets=tuple(int(b) for b in args.budgets.split(",")),
            learning_rate=args.learning_rate,
            tau_start=args.tau_start,
            tau_end=args.tau_end,
        )
        result = train_writer(config, log)
        writer = str(out / "writer.npz")
        save_writer(
            writer,
            result["params"],
            result["kinds"],
            {"config": dataclasses.asdict(config), "history": result["history"], "train_seconds": result["seconds"]},
        )
        log(f"trained in {result['seconds']:.0f} s; kept {json.dumps(result['history'][-1])}")
    seeds = range(args.eval_seeds)
    sets = [(f"{name} {n}x{u} held-out seeds", name, (n, u)) for name in distributions for n, u in shapes]
    sets += [
        (f"memaudit_small {n}x{u} unseen shape", "memaudit_small", (n, u))
        for n, u in UNSEEN_SHAPES
        if (n, u) not in shapes
    ]
    if not args.no_stress:
        sets += [(f"{name} 3x2 never seen", name, (3, 2)) for name in STRESS if name not in distributions]
        sets += [(f"{name} 2x2 unseen shape", name, (2, 2)) for name in STRESS if name in distributions]
    frames, lines = [], []
    for name, distribution, shape in sets:
        started = time.perf_counter()
        rows, summary = evaluate(writer, name, distribution, shape, seeds)
        frames.append(rows)
        lines += summary
        log(f"{name}: {time.perf_counter() - started:.1f} s")
    pd.concat(frames, ignore_index=True).to_csv(out / "rows.csv", index=False)
    text = summary_markdown(lines)
    (out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
