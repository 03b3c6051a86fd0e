"""Regenerate docs/adversarial.md's tables and figure: every zoo policy's worst regime at 1, 10 and 100 KB
beside its worst named regime (the published seven with a full search, the rest with a quarter of it), the
minimax and mean rankings, CMA-ES vs random search, and the speed of one generation.

    PYTHONPATH=. python experiments/adversarial.py            # the study (hours on 2 CPU cores)
    PYTHONPATH=. python experiments/adversarial.py --only recency,novelty_gate  # some policies, no doc
    PYTHONPATH=. python experiments/adversarial.py --tables   # the doc from the saved documents
    PYTHONPATH=. python experiments/adversarial.py --speed    # one generation, 256 regimes x 32 x 200 x 3 budgets
    PYTHONPATH=. python experiments/adversarial.py --speed-reads  # read_accuracy vs utility_ratio, 64 x 16 x 200

Writes experiments/adversarial_studies/NAME.json (each policy's adv.json document) and the tables between the markers of
docs/adversarial.md, and docs/figures/adversarial_progress.png.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import numpy as np

import wpbjax as wj

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "experiments" / "adversarial_studies"  # one adv.json document per policy
DOC = ROOT / "docs" / "adversarial.md"
FIGURE = ROOT / "docs" / "figures" / "adversarial_progress.png"
BUDGETS = [1024, 10240, 102400]
# The published seven, each on the track the published line-up runs it on (priority policies: privileged).
POLICIES = {
    "no_mem": "unprivileged",
    "fifo_store_all": "unprivileged",
    "uniform_sample": "unprivileged",
    "last_kb": "unprivileged",
    "merge_aggressive": "unprivileged",
    "priority_threshold": "privileged",
    "priority_greedy": "privileged",
}
# The rest of the zoo (docs/policies.md) on its first track; oracle_optimal plans on the host (refused).
ZOO = {
    "always_write": "unprivileged",
    "never_write": "unprivileged",
    "recency": "unprivileged",
    "random": "unprivileged",
    "expire_oldest": "unprivileged",
    "dedupe_gate": "unprivileged",
    "memorybank_decay": "unprivileged",
    "token_bucket": "unprivileged",
    "deferred_batch": "unprivileged",
    "novelty_gate": "unprivileged",
    "supersede": "unprivileged",
    "version_journal": "unprivileged",
    "add_only": "unprivileged",
    "epsilon_greedy": "feedback",
    "bandit_ucb": "feedback",
    "utility_greedy": "oracle",
}
MODES = ["burst_redundancy", "delayed_relevance", "rollback", "docs_migration"]
SIZES = dict(population=16, generations=8, episodes_per_regime=16, confirm_episodes=128, seed=0)
# The zoo's searches are a quarter of the published seven's (same confirmation): upper bounds, looser ones
ZOO_SIZES = dict(SIZES, population=8, generations=4)


def study(names: list) -> None:
    """Each policy's adv.json document into RESULTS_DIR (``random:last_kb``: last_kb by random search)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    for name in names:
        start = time.time()
        policy = name.partition(":")[2] or name
        method = "random" if name.startswith("random:") else "cma_es"
        track, sizes = (POLICIES[policy], SIZES) if policy in POLICIES else (ZOO[policy], ZOO_SIZES)
        document = wj.adversary([policy], BUDGETS, track=track, modes=MODES, search=method, **sizes)
        document["seconds"] = time.time() - start
        (RESULTS_DIR / f"{name.replace(':', '_')}.json").write_text(json.dumps(document, indent=1) + "\n")
        print(f"{name}: {document['seconds']:.0f} s", flush=True)


def speed(policy: str = "last_kb") -> dict:
    """Seconds of one warm generation: 256 regimes per budget x 3 budgets, 32 episodes each, 200 steps."""
    import jax.numpy as jnp

    from wpbjax.adversarial import evaluate as ev, knobs as knobs_lib
    from wpbjax.episodes.generators import jax_gen
    from wpbjax.policies import make

    space = knobs_lib.space("burst_redundancy")
    groups = tuple(ev.group(256, 200, budget, "utility_ratio", search=True) for budget in BUDGETS)
    setup = ev.Setup(jax_gen.Shape(space.mode, 200, 8, 6), "unprivileged", groups)
    seeds = jax_gen.episode_seeds(0, 0, 32)
    budgets = np.repeat(BUDGETS, 256).astype(np.int32)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(4):  # the first compiles
        points = rng.random((len(budgets), space.dim)).astype(np.float32)
        start = time.perf_counter()
        ev.evaluate(make(policy), setup, space.to_knobs(jnp.asarray(points)), budgets, seeds)
        times.append(time.perf_counter() - start)
    return dict(policy=policy, first_s=times[0], warm_s=min(times[1:]), load=os.getloadavg()[0], cores=os.cpu_count())


def speed_reads(policy: str = "last_kb", regimes: int = 64, episodes: int = 16) -> dict:
    """Seconds of one warm generation scored by read accuracy (K = 5) beside the same by utility ratio:
    ``regimes`` burst_redundancy regimes x ``episodes`` episodes x 200 steps at 10 KB."""
    import jax.numpy as jnp

    from wpbjax.adversarial import evaluate as ev, knobs as knobs_lib
    from wpbjax.episodes.generators import jax_gen
    from wpbjax.policies import make

    space = knobs_lib.space("burst_redundancy")
    seeds = jax_gen.episode_seeds(0, 0, episodes)
    budgets = np.full(regimes, 10240, np.int32)
    rng = np.random.default_rng(0)
    out = dict(policy=policy, regimes=regimes, episodes=episodes, load=os.getloadavg()[0])
    for objective, top_k in (("utility_ratio", 0), ("read_accuracy", ev.DEFAULT_TOP_K)):
        groups = (ev.group(regimes, 200, 10240, objective, search=True),)
        setup = ev.Setup(jax_gen.Shape(space.mode, 200, 8, 6), "unprivileged", groups, top_k)
        times = []
        for _ in range(3):  # the first compiles
            points = rng.random((regimes, space.dim)).astype(np.float32)
            start = time.perf_counter()
            ev.evaluate(make(policy), setup, space.to_knobs(jnp.asarray(points)), budgets, seeds)
            times.append(time.perf_counter() - start)
        out[f"{objective}_warm_s"] = min(times[1:])
    return out


def _tables(documents: dict) -> str:
    header = [
        "| policy | track | budget | worst found (confirmed, 95% CI) | its regime | worst named | gap |",
        "|---" * 7 + "|",
    ]
    lines = list(header)
    minimax, means = {}, {}
    for policy, document in documents.items():
        if policy.startswith("random:"):
            continue
        if policy == next((name for name in ZOO if name in documents), None):
            lines += [
                "",
                "The rest of the zoo, with a quarter of the search (population 8, 4 generations; the same confirmation):",
                "",
                *header,
            ]
        for result in document["results"]:
            confirmed, named = result["confirmed"], result["worst_named"]
            regime = ", ".join(f"{k}={v}" for k, v in result["regime"].items() if k != "mode")
            low, high = confirmed["ci95"]
            gap = named["objective"] - confirmed["mean"]
            lines.append(
                f"| {policy} | {result['track']} | {result['budget'] // 1024} KB | {confirmed['mean']:.3f} "
                f"[{low:.3f}, {high:.3f}] | {result['regime']['mode']}: {regime} | {named['objective']:.3f} "
                f"({named['mode']}) | {gap:+.3f} |"
            )
            if result["budget"] == 10240:
                minimax[policy] = confirmed["mean"]
                means[policy] = float(np.mean(list(result["named"].values())))
    lines += [
        "",
        "At 10 KB: policies by worst case (minimax) beside their order by mean over the eight named regimes"
        " (each on its track as above).",
        "",
    ]
    lines += ["| rank | minimax: policy (worst case) | mean: policy (mean named) |", "|---|---|---|"]
    by_worst = sorted(minimax, key=lambda name: (-minimax[name], name))  # ties by name: any order of documents
    by_mean = sorted(means, key=lambda name: (-means[name], name))
    for rank, (a, b) in enumerate(zip(by_worst, by_mean), 1):
        lines.append(f"| {rank} | {a} ({minimax[a]:.3f}) | {b} ({means[b]:.3f}) |")
    return "\n".join(lines)


def _figure(documents: dict) -> None:
    if "last_kb" not in documents or "random:last_kb" not in documents:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(BUDGETS), figsize=(4 * len(BUDGETS), 3.2), sharey=False)
    for ax, index in zip(axes, range(len(BUDGETS))):
        for name, style in (("last_kb", "-"), ("random:last_kb", "--")):
            trace = documents[name]["results"][index]["trace"]
            label = "CMA-ES" if name == "last_kb" else "random"
            ax.plot(range(1, len(trace) + 1), trace, style, label=label)
        ax.set_title(f"last_kb, {BUDGETS[index] // 1024} KB")
        ax.set_xlabel("generation")
    axes[0].set_ylabel("best utility ratio so far (search estimate)")
    axes[0].legend()
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)


def _write_doc(documents: dict, timing: dict | None) -> None:
    text = DOC.read_text()
    begin, end = "<!-- tables: experiments/adversarial.py -->", "<!-- end tables -->"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    DOC.write_text(f"{head}{begin}\n{_tables(documents)}\n{end}{tail}")
    if timing is not None:
        print(json.dumps(timing))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", action="store_true", help="only time one generation")
    parser.add_argument("--speed-reads", action="store_true", help="only time a read_accuracy generation")
    parser.add_argument("--tables", action="store_true", help="only rewrite the doc from the saved results")
    parser.add_argument("--only", default=None, help="comma-separated names to run (default: all, then the doc)")
    args = parser.parse_args()
    if args.speed:
        print(json.dumps(speed()))
        return
    if args.speed_reads:
        print(json.dumps(speed_reads()))
        return
    names = list(POLICIES) + ["random:last_kb"] + list(ZOO)
    if not args.tables:
        study(args.only.split(",") if args.only else names)
        if args.only:
            return
    paths = {name: RESULTS_DIR / f"{name.replace(':', '_')}.json" for name in names}
    documents = {name: json.loads(path.read_text()) for name, path in paths.items() if path.exists()}
    missing = sorted(set(names) - set(documents))
    if missing:
        print(f"not run yet (left out of the doc): {', '.join(missing)}")
    _figure(documents)
    _write_doc(documents, None)


if __name__ == "__main__":
    main()
