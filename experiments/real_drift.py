"""Results on real API drift (docs/real_drift.md): the zoo on ``real:stripe``, the learned gate trained on
synthetic vs real episodes, the real stream's statistics beside the generators', and the fit of the JAX
generator's ``stripe_like`` knob set.

    python experiments/real_drift.py [--out experiments/results] [--figure docs/figures/real_drift_f1.png]
        [--skip-gates] [--gate-steps 300]

1. Every zoo policy on every 200-step window of the shipped Stripe history (28 windows, stride 100) x the
   paper's 11 budgets x every track it supports (unprivileged and privileged; the feedback and oracle
   tracks for the policies made for them), exact oracle: mean F1 per policy and budget,
   and the integrity columns at 10 KB (every row to OUT/real_drift_zoo.csv; a figure of F1 against budget).
2. The learned gate (wpbjax.learn, unprivileged track) trained the documented way on the published generator's
   four modes, and the same training on the real train split (200-step windows before 2020-01-01, stride 20),
   each calibrated on its own training data; both and the published line-up on the real test split (windows
   from 2020-01-01, stride 100).
3. wpbjax.episodes.stream_stats of the real windows, of each JAX mode at its default knobs (64 episodes x 200
   steps, seed 0), and of the fitted knob set (seed 0).
4. The fit: a grid over the stripe_like mode's knobs (64 episodes x 200 steps, seed 1 per point), the distance
   being the sum of squared errors (fractions and burstiness in units of 0.1, sizes relative); the best point
   must be jax_gen.KNOB_SETS["stripe_like"] (exit 1 otherwise).
Markdown tables on stdout (pasted into docs/real_drift.md).
"""

from __future__ import annotations

import argparse
import itertools
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import pandas as pd

import wpbjax as wj
from wpbjax.budgets import PAPER_BUDGETS
from wpbjax.episodes import jax_gen
from wpbjax.episodes.stream_stats import STATS, stream_stats
from wpbjax.policies.zoo import ZOO_NAMES
from wpbjax.tracks import ALL_TRACKS

TRACKS = ALL_TRACKS  # each policy runs on the tracks it supports (the paper's two, feedback, oracle)
TABLE_BUDGETS = {1024: "1 KB", 4096: "4 KB", 10240: "10 KB", 32768: "32 KB", 102400: "100 KB", 1048576: "1 MB"}
INTEGRITY = ("update_fidelity", "history_coverage", "stale_rate", "temporal_accuracy", "over_retention")
INTEGRITY_BUDGET = 10240
SIZES = {"bytes_per_step", "endpoints"}
GRID = dict(
    api_pool=(250, 300, 350),
    max_params=(16, 24, 32),
    drift_prob=(0.02, 0.03, 0.04),
    burst_interval=(80, 100),
    burst_len=(12, 15),
    decoy_prob=(0.8, 1.0),
)


def zoo_results() -> pd.DataFrame:
    real = wj.episodes.real("stripe", steps=200)
    return wj.sweep(real, policies=list(ZOO_NAMES), tracks=list(TRACKS), budgets=list(PAPER_BUDGETS), oracle="exact")


def f1_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean F1 per (track, policy) x TABLE_BUDGETS."""
    rows = rows[rows.budget_bytes.isin(TABLE_BUDGETS)]
    table = rows.groupby(["track", "policy", "budget_bytes"], sort=False)["f1"].mean().unstack("budget_bytes")
    table.columns = [TABLE_BUDGETS[budget] for budget in table.columns]
    return table


def integrity_table(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows[rows.budget_bytes == INTEGRITY_BUDGET]
    return rows.groupby(["track", "policy"], sort=False)[["f1", "precision", "recall", *INTEGRITY]].mean()


def figure(rows: pd.DataFrame, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9), sharey=True, sharex=True)
    axes = axes.ravel()
    means = rows.groupby(["track", "policy", "budget_bytes"])["f1"].mean()
    colours = plt.get_cmap("tab20").colors  # more policies than tab10 has colours
    for axis, track in zip(axes, TRACKS):
        for number, policy in enumerate(means.loc[track].index.get_level_values(0).unique()):
            series = means.loc[(track, policy)]
            axis.plot(
                series.index,
                series.values,
                marker=".",
                label=policy,
                color=colours[number % len(colours)],
                linestyle="--" if policy == "oracle_optimal" else "-",
            )
        axis.set_xscale("log", base=2)
        axis.set_xlabel("budget (bytes)")
        axis.set_title(f"real:stripe, 28 windows x 200 steps, {track}")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, ncol=2, loc="upper left")
    axes[0].set_ylabel("mean F1")
    axes[2].set_ylabel("mean F1")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)


def gates(steps: int, directory: str) -> pd.DataFrame:
    """Synthetic- vs real-trained gate and the published line-up on the real test split (rows)."""
    from wpbjax.learn.calibrate import calibrate_afford_threshold
    from wpbjax.learn.config import TrainConfig
    from wpbjax.learn.gate import save_gate
    from wpbjax.learn.train import train, train_gate
    from wpbjax.policies.registry import make

    config = TrainConfig(track="unprivileged", steps=steps, log_every=max(steps // 4, 1))
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    paths = {}
    started = time.perf_counter()
    synthetic = train_gate(config, log=log)
    paths["gate_synthetic"] = os.path.join(directory, "gate_synthetic.npz")
    save_gate(
        paths["gate_synthetic"],
        synthetic["weights"],
        "unprivileged",
        {"afford_threshold": synthetic["afford_threshold"]},
    )
    print(f"synthetic gate: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    started = time.perf_counter()
    real_train = wj.episodes.real("stripe", steps=200, stride=20, split="train")
    weights, _ = train(config, pool=real_train, log=log)
    threshold, _ = calibrate_afford_threshold(weights, "unprivileged", real_train)
    paths["gate_real"] = os.path.join(directory, "gate_real.npz")
    save_gate(paths["gate_real"], weights, "unprivileged", {"afford_threshold": threshold})
    print(f"real gate ({real_train.n_episodes} train windows): {time.perf_counter() - started:.0f} s", file=sys.stderr)
    test = wj.episodes.real("stripe", steps=200, split="test")
    causal = [name for name in ZOO_NAMES if "unprivileged" in make(name).tracks]  # the gates' track
    rows = wj.sweep(
        test,
        policies=[f"learned_gate:{path}" for path in paths.values()] + causal + ["oracle_optimal"],
        tracks=["unprivileged", "oracle"],
        budgets=list(PAPER_BUDGETS),
        oracle="exact",
    )
    names = {f"learned_gate:{path}": name for name, path in paths.items()}
    rows["policy"] = rows["policy"].map(lambda policy: names.get(policy, policy))
    return rows, real_train.n_episodes, test.n_episodes


def stats_table(seed: int = 0, n_episodes: int = 64) -> pd.DataFrame:
    rows = {"real:stripe (28 windows)": stream_stats(wj.episodes.real("stripe", steps=200))}
    for mode in jax_gen.JAX_MODES:
        if mode in jax_gen.FITTED_MODES:
            continue
        config = jax_gen.JaxGenConfig(mode=mode, steps=200, seed=seed)
        rows[f"jax {mode}"] = stream_stats(jax_gen.generate_encoded([config], n_episodes))
    for name in jax_gen.KNOB_SETS:
        config = jax_gen.knob_set(name, steps=200, seed=seed)
        rows[f"jax {name} (fitted)"] = stream_stats(jax_gen.generate_encoded([config], n_episodes))
    return pd.DataFrame(rows).T[list(STATS)]


def distance(stats: dict, real: dict) -> float:
    return sum(
        (stats[name] / real[name] - 1) ** 2 if name in SIZES else ((stats[name] - real[name]) / 0.1) ** 2
        for name in STATS
    )


def fit(real: dict, n_episodes: int = 64) -> pd.DataFrame:
    """Every GRID point of the stripe_like mode (burst_drift_prob 1), sorted by distance to ``real``."""
    out = []
    for values in itertools.product(*GRID.values()):
        knobs = dict(zip(GRID, values), mode="stripe_like", burst_drift_prob=1.0)
        config = jax_gen.JaxGenConfig(**knobs, steps=200, seed=1)
        stats = stream_stats(jax_gen.generate_encoded([config], n_episodes))
        out.append({**knobs, **stats, "distance": distance(stats, real)})
    return pd.DataFrame(out).sort_values("distance", kind="stable").reset_index(drop=True)


def markdown(table: pd.DataFrame, digits: int = 3, index_names=None) -> str:
    names = index_names or list(table.index.names)
    head = "| " + " | ".join([*(name or "" for name in names), *map(str, table.columns)]) + " |"
    lines = [head, "|" + " --- |" * (len(names) + len(table.columns))]
    for key, row in table.iterrows():
        keys = key if isinstance(key, tuple) else (key,)
        cells = [f"{value:,.{digits}f}" if isinstance(value, float) else str(value) for value in row]
        lines.append("| " + " | ".join([*map(str, keys), *cells]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="experiments/results")
    parser.add_argument("--figure", default="docs/figures/real_drift_f1.png")
    parser.add_argument("--gate-steps", type=int, default=300)
    parser.add_argument("--skip-gates", action="store_true")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    rows = zoo_results()
    rows.to_csv(out / "real_drift_zoo.csv", index=False)
    print(f"## Zoo on real:stripe ({len(rows):,} rows, {time.perf_counter() - started:.0f} s)\n")
    print(markdown(f1_table(rows)) + "\n")
    print(f"## Integrity at {INTEGRITY_BUDGET:,} bytes\n")
    print(markdown(integrity_table(rows)) + "\n")
    figure(rows, args.figure)

    started = time.perf_counter()
    stats = stats_table()
    print(f"## Stream statistics ({time.perf_counter() - started:.0f} s)\n")
    print(markdown(stats, index_names=["stream"]) + "\n")

    started = time.perf_counter()
    real = stats.iloc[0].to_dict()
    points = fit(real)
    points.to_csv(out / "real_drift_fit.csv", index=False)
    best = points.iloc[0]
    print(f"## Fit ({len(points)} grid points, {time.perf_counter() - started:.0f} s); best 5\n")
    head = points.head(5).set_index("mode")
    head[list(GRID)] = head[list(GRID)].astype(str)
    print(markdown(head, digits=4) + "\n")
    fitted = {name: best[name] for name in jax_gen.KNOB_SETS["stripe_like"] if name != "mode"}
    shipped = {name: value for name, value in jax_gen.KNOB_SETS["stripe_like"].items() if name != "mode"}
    status = 0
    if any(not np.isclose(float(fitted[name]), float(shipped[name])) for name in shipped):
        print(f"FIT DIFFERS from jax_gen.KNOB_SETS['stripe_like']: best {fitted}, shipped {shipped}")
        status = 1

    if not args.skip_gates:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as directory:
            gate_rows, n_train, n_test = gates(args.gate_steps, directory)
        gate_rows.to_csv(out / "real_drift_gates.csv", index=False)
        print(
            f"## Gates on the real test split ({n_train} train windows, {n_test} test windows, "
            f"{time.perf_counter() - started:.0f} s)\n"
        )
        print(markdown(f1_table(gate_rows)) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
