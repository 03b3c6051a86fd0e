"""Results on real API drift (docs/real_drift.md): the zoo on every shipped history (``real:stripe``,
``real:openai``, ``real:digitalocean``, ``real:discord``), the learned gate across vendors, each stream's
statistics beside the JAX generator's, and the generator's knob sets fitted to each vendor.

    python experiments/real_drift.py [--vendors stripe,openai,digitalocean,discord] [--out experiments/results]
        [--figure-dir docs/figures] [--doc docs/real_drift.md] [--skip-gates] [--skip-fit] [--quick]

A vendor is a shipped history's name or a history file's path (its name up to the first dot labels it); a
shipped name whose file is absent is skipped with a note.

1. Zoo: every zoo policy on every 200-step window (stride 100) of each vendor x the paper's 11 budgets x
   every track it supports, exact oracle, reads with the default generated probes (docs/reads.md: 0.1
   probes per step, the default retriever) at K = 5. Every row to OUT/real_drift_zoo.csv; tables of mean F1
   at 1-100 KB, the integrity columns and the read columns at 10 KB, each policy once, on the least informed
   track it supports (:data:`TRACK_ORDER`); a figure of F1 against budget per vendor.
2. Transfer: per vendor V, the learned gate (wpbjax.learn, unprivileged track, TrainConfig's defaults but a
   batch no larger than the pool) trained on the other vendors' train windows pooled (200 steps, stride 20,
   at most POOL windows per vendor, evenly spaced) and calibrated on every fifth window of that pool, and the
   same trained on V's own train windows; both on V's test windows (stride 100) beside the unprivileged zoo and the exact oracle
   (rows to OUT/real_drift_transfer.csv). The split is wj.episodes.real's.
3. Statistics (wpbjax.episodes.generators.stream_stats) of each vendor's windows beside every JAX mode's (64 episodes x
   200 steps, seed 0) and every fitted knob set's.
4. Fit, per vendor, of the JAX generator's stripe_like mode (:func:`fit`); exit 1 if a shipped knob set
   (jax_gen.KNOB_SETS["VENDOR_like"]) differs from its fit or is missing (the fitted sets are printed).
Markdown on stdout and in OUT/real_drift.md; with --doc, the generated blocks of that page
(``<!-- real_drift.py: NAME -->`` ... ``<!-- /real_drift.py -->``) are rewritten in place.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import pathlib
import re
import sys
import tempfile
import time

import numpy as np
import pandas as pd

VENDORS = ("stripe", "openai", "digitalocean", "discord")
STEPS = 200
STRIDE = 100
TRAIN_STRIDE = 20
CALIBRATION_EVERY = 5  # the afford threshold is calibrated on every fifth window of a gate's pool
POOL_PER_VENDOR = 128  # as TrainConfig.pool_per_mode: no vendor dominates a pooled training set
TABLE_BUDGETS = {1024: "1 KB", 4096: "4 KB", 10240: "10 KB", 32768: "32 KB", 102400: "100 KB"}
DETAIL_BUDGET = 10240
TRACK_ORDER = ("unprivileged", "feedback", "privileged", "oracle")  # least informed first
INTEGRITY = ("update_fidelity", "history_coverage", "stale_rate", "temporal_accuracy", "over_retention")
TOP_K = 5
READS = (
    "read_accuracy",
    "stale_answer_rate",
    "memory_miss_rate",
    "retrieval_miss_rate",
    "read_accuracy_oracle_memory",
    "writer_error_share",
)
QUICK_POLICIES = ("recency", "version_journal", "priority_threshold", "oracle_optimal")
SIZES = ("bytes_per_step", "endpoints")
# The fit (module note, :func:`fit`): stage 1 over the knobs that shape the stream (max_params fixed), stage 2
# over max_params, which sets the bytes per step.
STAGE1 = dict(
    api_pool=(100, 125, 150, 200, 250, 300, 350),
    drift_prob=(0.01, 0.02, 0.03, 0.04, 0.05, 0.06),
    burst_interval=(80, 100),
    burst_len=(4, 8, 12, 15),
    burst_drift_prob=(0.5, 1.0),
    decoy_prob=(0.8, 1.0),
)
STAGE1_MAX_PARAMS = 24
MAX_PARAMS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1000)
FIT_EPISODES = 64
FIT_SEED = 1
QUICK_STAGE1 = dict(
    api_pool=(150, 300),
    drift_prob=(0.03,),
    burst_interval=(100,),
    burst_len=(15,),
    burst_drift_prob=(1.0,),
    decoy_prob=(1.0,),
)
BEGIN = "<!-- real_drift.py: {} -->"
END = "<!-- /real_drift.py -->"


@dataclasses.dataclass(frozen=True)
class Settings:
    """What one run computes (the command line's flags)."""

    policies: tuple | None = None  # None: the whole zoo
    budgets: tuple | None = None  # None: the paper's 11
    stride: int = STRIDE
    train_stride: int = TRAIN_STRIDE
    pool_per_vendor: int = POOL_PER_VENDOR
    gate_steps: int = 300
    stage1: dict = dataclasses.field(default_factory=lambda: STAGE1)


def note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# --- vendors ---------------------------------------------------------------------------------------------


def vendor_label(name: str) -> str:
    return name if name in VENDORS else os.path.basename(name).split(".")[0]


def history_file(name: str) -> str | None:
    """The history file of a shipped name or a path; None where it is not there (not shipped yet)."""
    from wpbjax.episodes.importers import real_drift

    try:
        path = real_drift.history_path(name)
    except ValueError:
        return None
    return path if os.path.isfile(path) else None


def sidecar(name: str) -> dict:
    with open(history_file(name) + ".meta.json", encoding="utf-8") as handle:
        return json.load(handle)


def licence_name(meta: dict) -> str:
    text = meta.get("licence", {}).get("text", "")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "unknown")
    return re.sub(r"^The\s+", "", first)


def histories_table(names) -> pd.DataFrame:
    """One row per vendor, from its sidecar: source, licence, commits, versions read, lines, breaking lines."""
    rows = {}
    for name in names:
        meta = sidecar(name)
        commits, counts = meta["commits"], meta["counts"]
        rows[vendor_label(name)] = {
            "source": meta.get("origin", ""),
            "licence": licence_name(meta),
            "commits": f"{commits['first'][:7]} ({commits['first_date'][:10]}) .. "
            f"{commits['last'][:7]} ({commits['last_date'][:10]})",
            "versions read": f"{counts['versions']:,}",
            "lines": f"{counts['lines']:,}",
            "breaking lines": f"{counts['breaking_lines']:,}",
        }
    return pd.DataFrame(rows).T


# --- 1. the zoo ------------------------------------------------------------------------------------------


def zoo_rows(name: str, settings: Settings, episodes=None) -> pd.DataFrame:
    """Every zoo policy x track x budget on the vendor's windows, exact oracle, reads at K = TOP_K."""
    import wpbjax as wj
    from wpbjax.common.budgets import PAPER_BUDGETS
    from wpbjax.common.tracks import ALL_TRACKS
    from wpbjax.policies.zoo import ZOO_NAMES

    episodes = episodes if episodes is not None else wj.episodes.real(name, steps=STEPS, stride=settings.stride)
    rows = wj.sweep(
        episodes,
        grid=wj.Grid(
            budgets=list(settings.budgets or PAPER_BUDGETS),
            policies=list(settings.policies or ZOO_NAMES),
            tracks=list(ALL_TRACKS),
            oracle="exact",
        ),
        # one-fact generated probes: the probes docs/real_drift.md's read tables were measured with (the generator's
        # shares of multi-fact and history probes came later, docs/reads.md)
        reads=wj.Reads(top_k=(TOP_K,), probes="generate", multi_fact_rate=0.0, history_rate=0.0),
    )
    rows.insert(0, "vendor", vendor_label(name))
    return rows


def shown(rows: pd.DataFrame) -> pd.DataFrame:
    """Each policy's rows on the least informed track it ran on (TRACK_ORDER): the tables' rows."""
    rank = rows["track"].map({track: n for n, track in enumerate(TRACK_ORDER)})
    first = rank.groupby(rows["policy"]).transform("min")
    return rows[rank == first]


def f1_table(rows: pd.DataFrame, budgets: dict = TABLE_BUDGETS) -> pd.DataFrame:
    """Mean F1 per (track, policy) x budgets."""
    rows = rows[rows.budget_bytes.isin(budgets)]
    table = rows.groupby(["track", "policy", "budget_bytes"], sort=False)["f1"].mean().unstack("budget_bytes")
    table = table[[budget for budget in budgets if budget in table.columns]]
    table.columns = [budgets[budget] for budget in table.columns]
    return table


def integrity_table(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows[rows.budget_bytes == DETAIL_BUDGET]
    return rows.groupby(["track", "policy"], sort=False)[["f1", "precision", "recall", *INTEGRITY]].mean()


def read_table(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows[(rows.budget_bytes == DETAIL_BUDGET) & (rows.top_k == TOP_K)]
    return rows.groupby(["track", "policy"], sort=False)[["f1", *READS]].mean()


def figure(rows: pd.DataFrame, label: str, n_windows: int, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(9, 6))
    means = rows.groupby(["track", "policy", "budget_bytes"])["f1"].mean()  # sorted: fast lookups
    colours = plt.get_cmap("tab20").colors  # more policies than tab10 has colours
    for number, (track, policy) in enumerate(dict.fromkeys(zip(rows.track, rows.policy))):
        series = means.loc[(track, policy)]
        axis.plot(
            series.index,
            series.values,
            marker=".",
            label=f"{policy} ({track})" if track != "unprivileged" else policy,
            color=colours[number % len(colours)],
            linestyle="--" if track == "oracle" else ":" if track == "privileged" else "-",
        )
    axis.set_xscale("log", base=2)
    axis.set_xlabel("budget (bytes)")
    axis.set_ylabel("mean F1")
    axis.set_title(f"real:{label}, {n_windows} windows x {STEPS} steps")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --- 2. transfer -----------------------------------------------------------------------------------------


def evenly(items: list, most: int) -> list:
    """At most ``most`` of ``items``, evenly spaced, first and last kept."""
    if len(items) <= most:
        return items
    return [items[int(round(i))] for i in np.linspace(0, len(items) - 1, most)]


def train_windows(name: str, settings: Settings):
    """The vendor's train windows (stride ``train_stride``, at most ``pool_per_vendor``), encoded; None if none."""
    from wpbjax.episodes.encode import encode_episodes
    from wpbjax.episodes.importers.real_drift import episodes

    try:
        windows = episodes(name, steps=STEPS, stride=settings.train_stride, split="train")
    except ValueError:
        return None
    return encode_episodes(evenly(windows, settings.pool_per_vendor), source=f"real:{name}:train", validate=False)


def pooled(parts: list):
    """One training set of several vendors' windows. Field slots are only ever compared within an episode,
    so each part's slots are renamed by position before joining: the pool is as wide as its widest part, not
    as the union of every vendor's field names."""
    from wpbjax.episodes.encode import concat_encoded

    if len(parts) == 1:
        return parts[0]
    renamed = [
        dataclasses.replace(part, field_keys=tuple(f"field{slot}" for slot in range(len(part.field_keys))))
        for part in parts
    ]
    return concat_encoded(renamed)


def train_gate(pool, steps: int, path: str) -> str:
    """A gate trained and calibrated on ``pool`` as docs/learning.md does (unprivileged), saved to ``path``."""
    from wpbjax.learn.calibrate import calibrate_afford_threshold
    from wpbjax.learn.config import TrainConfig
    from wpbjax.learn.gate import save_gate
    from wpbjax.learn.train import train

    # TrainConfig's defaults; a batch draws without replacement, so it is at most the pool
    config = TrainConfig(
        track="unprivileged", steps=steps, batch=min(64, pool.n_episodes), log_every=max(steps // 4, 1)
    )
    weights, _ = train(config, pool=pool, log=note)
    # every CALIBRATION_EVERY-th window: windows 20 lines apart overlap by 90%, so a fifth of them carries
    # about as much and costs a fifth of the calibration's ten runs of the exact simulator
    calibration = pool.take(np.arange(0, pool.n_episodes, CALIBRATION_EVERY))
    threshold, _ = calibrate_afford_threshold(weights, "unprivileged", calibration)
    save_gate(path, weights, "unprivileged", {"afford_threshold": threshold})
    return f"learned_gate:{path}"


def transfer_rows(names: list, zoo: pd.DataFrame, settings: Settings, directory: str) -> pd.DataFrame:
    """Per vendor: the transfer gate and the in-vendor gate on its test windows, with the unprivileged zoo's
    and the oracle's rows on those windows (taken from ``zoo``: the test windows are windows of the zoo)."""
    import wpbjax as wj
    from wpbjax.common.budgets import PAPER_BUDGETS

    trains = {}
    for name in names:
        started = time.perf_counter()
        trains[name] = train_windows(name, settings)
        size = "none" if trains[name] is None else trains[name].n_episodes
        note(f"{vendor_label(name)}: train windows {size} ({time.perf_counter() - started:.0f} s)")
    out = []
    for name in names:
        label = vendor_label(name)
        try:
            test = wj.episodes.real(name, steps=STEPS, stride=settings.stride, split="test")
        except ValueError as error:
            note(f"{label}: no test windows ({error}); no transfer")
            continue
        gates, trained_on = {}, {}
        others = [other for other in names if other != name and trains[other] is not None]
        for gate, sources in (("gate_transfer", others), ("gate_in_vendor", [name] if trains[name] else [])):
            if not sources:
                note(f"{label}: no train windows for {gate}")
                continue
            started = time.perf_counter()
            pool = pooled([trains[source] for source in sources])
            policy = train_gate(pool, settings.gate_steps, os.path.join(directory, f"{label}_{gate}.npz"))
            gates[policy] = gate
            trained_on[gate] = f"{', '.join(map(vendor_label, sources))}: {pool.n_episodes} windows"
            note(f"{label}: {gate} on {pool.n_episodes} windows ({time.perf_counter() - started:.0f} s)")
        ids = set(test.episode_id)
        rows = [zoo[(zoo.vendor == label) & zoo.episode_id.isin(ids) & zoo.track.isin(["unprivileged", "oracle"])]]
        if gates:
            gate_rows = wj.sweep(
                test,
                grid=wj.Grid(
                    budgets=list(settings.budgets or PAPER_BUDGETS),
                    policies=list(gates),
                    tracks=["unprivileged"],
                    oracle="exact",
                ),
                reads=wj.Reads(probes="none"),
            )
            gate_rows["policy"] = gate_rows["policy"].map(gates)
            gate_rows["trained_on"] = gate_rows["policy"].map(trained_on)
            gate_rows.insert(0, "vendor", label)
            rows.append(gate_rows)
        joined = pd.concat(rows, ignore_index=True)
        joined["test_windows"] = len(ids)
        out.append(joined)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def transfer_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per vendor: F1 at TABLE_BUDGETS of the two gates (with what each was trained on), the best unprivileged
    zoo policy (per budget, named) and the exact oracle."""
    lines = {}
    for label, vendor_rows in rows.groupby("vendor", sort=False):
        means = f1_table(vendor_rows)
        vendor = f"{label} ({int(vendor_rows['test_windows'].iloc[0])} test windows)"
        for gate in ("gate_transfer", "gate_in_vendor"):
            if ("unprivileged", gate) in means.index:
                trained_on = vendor_rows.loc[vendor_rows.policy == gate, "trained_on"].iloc[0]
                lines[(vendor, gate)] = [trained_on, *(f"{value:.3f}" for value in means.loc[("unprivileged", gate)])]
        zoo = means.loc["unprivileged"].drop(index=["gate_transfer", "gate_in_vendor"], errors="ignore")
        lines[(vendor, "best zoo")] = ["", *(f"{zoo[column].max():.3f} ({zoo[column].idxmax()})" for column in zoo)]
        lines[(vendor, "oracle_optimal")] = ["", *(f"{value:.3f}" for value in means.loc[("oracle", "oracle_optimal")])]
    table = pd.DataFrame(lines, index=["trained on", *TABLE_BUDGETS.values()]).T
    table.index.names = ["vendor", "policy"]
    return table


# --- 3. statistics ---------------------------------------------------------------------------------------


def generated_stats(config, n_episodes: int = 64) -> dict:
    from wpbjax.episodes.generators import jax_gen
    from wpbjax.episodes.generators.stream_stats import stream_stats

    return stream_stats(jax_gen.generate_encoded([config], n_episodes))


def stats_table(real: dict, seed: int = 0, n_episodes: int = 64) -> pd.DataFrame:
    """``real`` ({row name: stats}) beside every JAX mode at its default knobs and every knob set."""
    from wpbjax.episodes.generators import jax_gen
    from wpbjax.episodes.generators.stream_stats import STATS

    rows = dict(real)
    for mode in jax_gen.JAX_MODES:
        if mode not in jax_gen.FITTED_MODES:
            rows[f"jax {mode}"] = generated_stats(jax_gen.JaxGenConfig(mode=mode, steps=STEPS, seed=seed), n_episodes)
    for name in jax_gen.KNOB_SETS:
        config = jax_gen.knob_set(name, steps=STEPS, seed=seed)
        rows[f"jax {name} (fitted)"] = generated_stats(config, n_episodes)
    return pd.DataFrame(rows).T[list(STATS)]


def real_row(label: str, n_windows: int) -> str:
    return f"real:{label} ({n_windows} windows)"


# --- 4. the fit ------------------------------------------------------------------------------------------


def distance(stats: dict, real: dict, names) -> float:
    """Sum of squared errors: sizes relative, fractions and burstiness in units of 0.1."""
    return float(
        sum(
            (stats[name] / real[name] - 1) ** 2 if name in SIZES else ((stats[name] - real[name]) / 0.1) ** 2
            for name in names
        )
    )


def knob_config(knobs: dict):
    from wpbjax.episodes.generators import jax_gen

    return jax_gen.JaxGenConfig(**knobs, steps=STEPS, seed=FIT_SEED)


def stage1_points(grid: dict) -> pd.DataFrame:
    """The statistics of every stage-1 point (mode stripe_like, max_params fixed):
    computed once, shared by every vendor's fit."""
    out = []
    for values in itertools.product(*grid.values()):
        knobs = dict(mode="stripe_like", **dict(zip(grid, values)))
        knobs["max_params"] = STAGE1_MAX_PARAMS
        out.append({**knobs, **generated_stats(knob_config(knobs), FIT_EPISODES)})
    return pd.DataFrame(out)


def fit(real: dict, points: pd.DataFrame) -> pd.DataFrame:
    """The knob set of the stripe_like mode closest to ``real``'s statistics, in two stages.

    Stage 1: the stage-1 point nearest on every statistic but bytes per step (which max_params sets and the
    rest hardly move). Stage 2: at that point, bytes per step as a straight line through max_params 24 (stage
    1) and 1000 (the largest the generator takes); the MAX_PARAMS values (at most three) nearest in log scale
    to where the line meets the real bytes per step; and of those, the nearest on all six statistics.
    Returns the stage-2 candidates, best first, with their distances."""
    from wpbjax.episodes.generators.stream_stats import STATS

    shape = [name for name in STATS if name != "bytes_per_step"]
    first = points.assign(distance=[distance(row, real, shape) for _, row in points.iterrows()])
    best = first.sort_values("distance", kind="stable").iloc[0]
    knobs = {name: best[name] for name in ("mode", *STAGE1)}
    knobs = {name: value.item() if hasattr(value, "item") else value for name, value in knobs.items()}
    evaluated = {}

    def candidate(max_params: int) -> dict:
        if max_params not in evaluated:
            knobs_here = {**knobs, "max_params": int(max_params)}
            stats = generated_stats(knob_config(knobs_here), FIT_EPISODES)
            evaluated[max_params] = {**knobs_here, **stats, "distance": distance(stats, real, STATS)}
        return evaluated[max_params]

    low, high = STAGE1_MAX_PARAMS, MAX_PARAMS[-1]
    slope = (candidate(high)["bytes_per_step"] - best["bytes_per_step"]) / (high - low)
    wanted = min(max(low + (real["bytes_per_step"] - best["bytes_per_step"]) / slope, MAX_PARAMS[0]), high)
    nearest = sorted(MAX_PARAMS, key=lambda value: (abs(np.log(value / wanted)), value))[:3]
    out = [candidate(max_params) for max_params in sorted(nearest)]
    return pd.DataFrame(out).sort_values("distance", kind="stable").reset_index(drop=True)


KNOB_ORDER = (
    "mode",
    "api_pool",
    "max_params",
    "drift_prob",
    "burst_interval",
    "burst_len",
    "burst_drift_prob",
    "decoy_prob",
)


def knob_set_of(best: pd.Series) -> dict:
    out = {}
    for name in KNOB_ORDER:
        value = best[name]
        out[name] = value if isinstance(value, str) else int(value) if name in STAGE1_INTS else float(value)
    return out


STAGE1_INTS = ("api_pool", "max_params", "burst_interval", "burst_len")


def differs(fitted: dict, shipped: dict | None) -> bool:
    if shipped is None or set(shipped) != set(fitted):
        return True
    return any(
        fitted[name] != shipped[name] if isinstance(fitted[name], str) else not np.isclose(fitted[name], shipped[name])
        for name in fitted
    )


def knob_sets_source(sets: dict) -> str:
    """Python text of KNOB_SETS entries (what to paste into jax_gen.py when a fit moves)."""
    lines = []
    for name, knobs in sets.items():
        lines.append(f'    "{name}": dict(')
        lines.extend(f"        {key}={value!r}," for key, value in knobs.items())
        lines.append("    ),")
    return "\n".join(lines)


# --- markdown and the page -------------------------------------------------------------------------------


def markdown(table: pd.DataFrame, digits: int = 3, index_names=None) -> str:
    names = index_names or list(table.index.names)
    head = "| " + " | ".join([*(name or "" for name in names), *map(str, table.columns)]) + " |"
    lines = [head, "|" + " --- |" * (len(names) + len(table.columns))]
    for key, row in table.iterrows():
        keys = key if isinstance(key, tuple) else (key,)
        cells = [f"{value:,.{digits}f}" if isinstance(value, float) else str(value) for value in row]
        lines.append("| " + " | ".join([*map(str, keys), *cells]) + " |")
    return "\n".join(lines)


def rewrite_blocks(text: str, blocks: dict) -> str:
    """``text`` with each ``BEGIN.format(name)`` ... ``END`` block's body replaced by ``blocks[name]``; a
    ValueError naming a block the page lacks."""
    for name, body in blocks.items():
        pattern = re.compile(re.escape(BEGIN.format(name)) + r"\n.*?" + re.escape(END), re.S)
        if not pattern.search(text):
            raise ValueError(f"the page has no block {BEGIN.format(name)} ... {END}")
        replacement = f"{BEGIN.format(name)}\n\n{body.strip()}\n\n{END}"  # blank lines: a table ends
        text = pattern.sub(lambda _, replacement=replacement: replacement, text, count=1)  # no escapes in it
    return text


# --- the run ---------------------------------------------------------------------------------------------


def run_zoo(
    names, settings: Settings, figure_dir: str | None, blocks: dict, real_stats: dict, reuse: pd.DataFrame | None
) -> pd.DataFrame:
    """Part 1 (and each vendor's statistics, from the same windows); ``reuse``: the rows of an earlier run's
    CSV instead of a sweep."""
    import wpbjax as wj
    from wpbjax.episodes.generators.stream_stats import stream_stats

    parts = {"zoo": [], "integrity": [], "reads": []}
    all_rows = []
    for name in names:
        label = vendor_label(name)
        started = time.perf_counter()
        episodes = wj.episodes.real(name, steps=STEPS, stride=settings.stride)
        real_stats[real_row(label, episodes.n_episodes)] = stream_stats(episodes)
        loaded = time.perf_counter() - started
        rows = zoo_rows(name, settings, episodes) if reuse is None else reuse[reuse.vendor == label]
        if rows.empty:
            raise SystemExit(f"--zoo-from has no rows of {label}")
        note(
            f"{label}: zoo {len(rows):,} rows ({loaded:.0f} s loading, {time.perf_counter() - started - loaded:.0f} s)"
        )
        table_rows = shown(rows)
        heading = f"#### real:{label} ({episodes.n_episodes} windows)\n\n"
        parts["zoo"].append(heading + markdown(f1_table(table_rows)))
        parts["integrity"].append(heading + markdown(integrity_table(table_rows)))
        parts["reads"].append(heading + markdown(read_table(table_rows)))
        if figure_dir:
            figure(table_rows, label, episodes.n_episodes, os.path.join(figure_dir, f"real_drift_f1_{label}.png"))
            parts["zoo"][-1] += f"\n\n![mean F1 against budget on real:{label}](figures/real_drift_f1_{label}.png)"
        all_rows.append(rows)
        del episodes
    for part, texts in parts.items():
        blocks[part] = "\n\n".join(texts)
    return pd.concat(all_rows, ignore_index=True)


def run_fit(real_stats: dict, labels: list, settings: Settings, out: pathlib.Path, blocks: dict) -> int:
    from wpbjax.episodes.generators import jax_gen

    started = time.perf_counter()
    points = stage1_points(settings.stage1)
    note(f"fit: {len(points)} stage-1 points ({time.perf_counter() - started:.0f} s)")
    texts, fitted, frames = [], {}, []
    for label, (row, stats) in zip(labels, real_stats.items()):
        candidates = fit(stats, points)
        frames.append(candidates.assign(vendor=label))
        fitted[f"{label}_like"] = knob_set_of(candidates.iloc[0])
        head = candidates.set_index("mode")
        head[list(STAGE1_INTS)] = head[list(STAGE1_INTS)].astype(int).astype(str)
        texts.append(f"#### {row}: stage 2\n\n" + markdown(head, digits=4))
    pd.concat(frames, ignore_index=True).to_csv(out / "real_drift_fit.csv", index=False)
    points.to_csv(out / "real_drift_fit_stage1.csv", index=False)
    blocks["fit"] = "\n\n".join(texts)
    note(f"fit: {time.perf_counter() - started:.0f} s")
    moved = {name: knobs for name, knobs in fitted.items() if differs(knobs, jax_gen.KNOB_SETS.get(name))}
    if moved:
        print("FIT DIFFERS from jax_gen.KNOB_SETS for " + ", ".join(moved) + "; the fitted entries:\n")
        print(knob_sets_source(moved) + "\n")
        return 1
    return 0


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vendors", default=",".join(VENDORS), help="shipped names or history files, commas")
    parser.add_argument("--out", default="experiments/results")
    parser.add_argument("--figure-dir", default="docs/figures")
    parser.add_argument("--doc", default=None, help="rewrite the generated blocks of this page (docs/real_drift.md)")
    parser.add_argument("--skip-gates", action="store_true")
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 policies, 5 budgets, few windows")
    parser.add_argument("--gate-steps", type=int, default=300)
    parser.add_argument("--zoo-from", default=None, help="the zoo's rows from this CSV of an earlier run (no sweep)")
    parser.add_argument("--pool-per-vendor", type=int, default=POOL_PER_VENDOR)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    from wpbjax.runtime.devices import enable_compilation_cache, use_every_core

    use_every_core()  # as the CLI does
    enable_compilation_cache()
    settings = Settings(gate_steps=args.gate_steps, pool_per_vendor=args.pool_per_vendor)
    if args.quick:
        settings = Settings(
            policies=QUICK_POLICIES,
            budgets=tuple(TABLE_BUDGETS),
            stride=500,
            train_stride=200,
            pool_per_vendor=16,
            gate_steps=min(args.gate_steps, 10),
            stage1=QUICK_STAGE1,
        )
    names = []
    for name in args.vendors.split(","):
        if history_file(name) is None:
            note(f"{name}: no history file (not shipped yet); skipped")
        else:
            names.append(name)
    if not names:
        note("no vendor to run")
        return 2
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figure_dir = None if args.quick and args.figure_dir == "docs/figures" else args.figure_dir
    if figure_dir:
        os.makedirs(figure_dir, exist_ok=True)
    blocks = {"histories": markdown(histories_table(names), index_names=["vendor"])}
    timings = {}
    started = time.perf_counter()
    real_stats: dict = {}
    reuse = pd.read_csv(args.zoo_from) if args.zoo_from else None
    zoo = run_zoo(names, settings, figure_dir, blocks, real_stats, reuse)
    if reuse is None:
        zoo.to_csv(out / "real_drift_zoo.csv", index=False)
    timings["zoo"] = time.perf_counter() - started

    status = 0
    if not args.skip_fit:
        started = time.perf_counter()
        status = run_fit(real_stats, [vendor_label(name) for name in names], settings, out, blocks)
        if args.quick:  # a two-point grid is not the fit: nothing to hold the shipped sets to
            note("--quick: the knob sets are not checked against this fit")
            status = 0
        timings["fit"] = time.perf_counter() - started
    started = time.perf_counter()
    stats = stats_table(real_stats)
    blocks["statistics"] = markdown(stats, index_names=["stream"])
    timings["statistics"] = time.perf_counter() - started

    if not args.skip_gates:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as directory:
            rows = transfer_rows(names, zoo, settings, directory)
        if not rows.empty:
            rows.to_csv(out / "real_drift_transfer.csv", index=False)
            blocks["transfer"] = markdown(transfer_table(rows))
        timings["gates"] = time.perf_counter() - started

    page = "\n\n".join(f"## {name}\n\n{body}" for name, body in blocks.items())
    (out / "real_drift.md").write_text(page + "\n", encoding="utf-8")
    print(page)
    note("timings: " + ", ".join(f"{part} {seconds:.0f} s" for part, seconds in timings.items()))
    if args.doc:
        from wpbjax.files.atomic import write_text

        with open(args.doc, encoding="utf-8") as handle:
            text = handle.read()
        write_text(args.doc, rewrite_blocks(text, blocks))
    return status


if __name__ == "__main__":
    sys.exit(main())
