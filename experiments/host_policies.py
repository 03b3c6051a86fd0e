"""Python and model-based policies (docs/policies.md, "Python and model-based policies").

    python experiments/host_policies.py triage [--out-dir DIR]   # the text-classifier triage gate's table
    python experiments/host_policies.py speed                    # host loop vs the published harness's time
    python experiments/host_policies.py scores-speed             # score_steps + 101 x 11 sweep vs the scorer

``triage``: a scikit-learn TF-IDF + logistic-regression classifier is trained on the stripe-python
changelog's entries (text: section and entry; label: the entry is breaking) and used, through
``wj.score_steps`` (one pass of the model over every step, cached in ``DIR/scores_*.jsonl``), as a triage
gate on held-out episodes -- the openai-python changelog's windows and the real API-drift windows
(``real:stripe``, ``real:openai``, ``real:digitalocean``, ``real:discord``) -- swept at 1-100 KB as
``scored_threshold`` / ``scored_recency`` / ``scored_greedy`` beside zoo baselines and the hindsight
oracle (``oracle_optimal``, oracle track). Prints the mean-F1 and mean-regret table in Markdown.

``speed``: the published baselines written as spec-style Python functions (``wpbjax.host.baselines``) driven
on the host over the paper grid (5,280 runs), against the suite's plain-Python copy of the published harness
(tests/pyref.py) on the same episodes; then the whole path (host loop + replay + scoring): one
``wj.run_python_policy`` call per policy, and the seven in one call (a list of policies: one sweep).

``llm_scorer`` shows where a model call goes: any client whose call returns text; it is never called here
(no model service can be reached from this machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import pandas as pd

import wpbjax as wj

TRAIN = "changelog:stripe-python"
HELD_OUT = ["changelog:openai-python", "real:stripe", "real:openai", "real:digitalocean", "real:discord"]
BUDGETS = [1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400]
THRESHOLD = 0.5
ZOO = ["always_write", "last_kb", "recency", "uniform_sample", "novelty_gate"]
SEED = 0


def step_text(step) -> str:
    """What the classifier reads of a step: a changelog entry's section and text, else the observation's JSON."""
    observation = step.observation
    if isinstance(observation, dict) and "content" in observation:
        return f"{observation.get('section', '')} {observation['content']}"
    return json.dumps(observation, sort_keys=True)


def training_set(spec: str = TRAIN) -> tuple[list[str], list[int]]:
    """Each distinct entry of the changelog once (windows overlap), labelled breaking (1) or not (0)."""
    from wpbjax.host.run import dict_episodes
    from wpbjax.host.store import make_step

    texts, labels = {}, {}
    for episode in dict_episodes(wj.EpisodeSource.from_files([spec])):
        critical = set(episode["labels"]["critical_steps"])
        for raw in episode["steps"]:
            key = (raw["metadata"].get("release"), raw["t"])
            texts[key] = step_text(make_step(raw, "unprivileged"))
            labels[key] = int(raw["t"] in critical)
    return list(texts.values()), list(labels.values())


def train_classifier(texts: list[str], labels: list[int]):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
        LogisticRegression(class_weight="balanced", max_iter=2000, random_state=SEED),
    )
    return model.fit(texts, labels)


def classifier_scorer(model):
    """A batch scorer for ``wj.score_steps(..., batch=N)``: P(breaking) of each step's text."""

    def score(steps):
        return model.predict_proba([step_text(step) for step in steps])[:, 1].tolist()

    return score


def llm_scorer(complete, prompt: str = "Is this change breaking for API clients? Answer with a number 0-1.\n\n{text}"):
    """The adapter where a model call goes: ``complete(prompt) -> str`` is any client's call (an HTTP API, a
    local model). ``wj.score_steps(llm_scorer(my_client_call), episodes, cache="llm_scores.jsonl")`` asks the
    model once per step, and the cache makes a rerun (or a rate-limited restart) ask only for the steps it
    does not hold. Not called in this script: no model service is reachable here."""

    def score(step) -> float:
        answer = complete(prompt.format(text=step_text(step)))
        return min(max(float(answer.strip().split()[0]), 0.0), 1.0)

    return score


def triage(out_dir: str) -> pd.DataFrame:
    os.makedirs(out_dir, exist_ok=True)
    started = time.perf_counter()
    texts, labels = training_set()
    model = train_classifier(texts, labels)
    print(f"trained on {len(texts)} entries of {TRAIN} ({sum(labels)} breaking)", file=sys.stderr)
    tables = []
    for spec in HELD_OUT:
        tag = spec.replace(":", "_").replace("-", "_")
        cache = os.path.join(out_dir, f"scores_{tag}.jsonl")
        scoring = time.perf_counter()
        scores = wj.score_steps(classifier_scorer(model), [spec], cache=cache, batch=512)
        scoring = time.perf_counter() - scoring
        names = scores.register(tag)
        sweeping = time.perf_counter()
        grid = wj.Grid(
            BUDGETS,
            policies=names + ZOO + ["oracle_optimal"],
            tracks=["unprivileged", "oracle"],
            params={"threshold": [THRESHOLD]},
        )
        rows = wj.sweep([spec], grid=grid)
        sweeping = time.perf_counter() - sweeping
        rows["policy"] = rows["policy"].str.replace(f"_{tag}", "", regex=False)
        rows["episodes"] = spec
        tables.append(rows)
        print(
            f"{spec}: {scores.calls} scorer calls in {scoring:.1f} s, sweep {sweeping:.1f} s ({len(rows)} rows)",
            file=sys.stderr,
        )
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(os.path.join(out_dir, "host_policies.csv"), index=False)
    print(f"total {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return table


def markdown(table: pd.DataFrame, budgets=(1024, 10240, 102400)) -> str:
    board = (
        table[table.budget_bytes.isin(budgets)]
        .groupby(["episodes", "policy", "budget_bytes"])[["f1", "regret"]]
        .mean()
        .unstack("budget_bytes")
    )
    header = (
        ["episodes", "policy"] + [f"F1 @{b // 1024}K" for b in budgets] + [f"regret @{b // 1024}K" for b in budgets]
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (episodes, policy), row in board.iterrows():
        cells = [f"{row['f1', b]:.3f}" for b in budgets] + [f"{row['regret', b]:.1f}" for b in budgets]
        lines.append(f"| {episodes} | {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def speed() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    import pyref  # the suite's plain-Python copy of the published harness

    from wpbjax.episodes.jsonl import load_jsonl
    from wpbjax.host import baselines
    from wpbjax.host.run import HostPolicy, HostRun, host_programs

    reference = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "reference")
    modes = ("default", "burst_drift", "redundancy", "burst_redundancy")
    files = [
        os.path.join(reference, "episodes", f"episodes__schema=priority_v1__mode={mode}__seed=0__steps=200__n=10.jsonl")
        for mode in modes
    ]
    episodes = [episode for path in files for episode in load_jsonl(path)]
    budgets = (1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400, 262144, 1048576)
    started = time.perf_counter()
    pyref.run_grid(episodes, budgets)
    harness = time.perf_counter() - started
    started = time.perf_counter()
    for name, policy in baselines.BASELINES.items():
        for track in ["privileged"] if name.startswith("priority") else ["unprivileged", "privileged"]:
            host_programs(policy, episodes, budgets, track, HostRun(workers=1))
    host = time.perf_counter() - started
    started = time.perf_counter()
    for name, policy in baselines.BASELINES.items():
        tracks = ["privileged"] if name.startswith("priority") else ["unprivileged", "privileged"]
        grid = wj.Grid(budgets, tracks=tracks, oracle="published_rule")
        wj.run_python_policy(policy, files, grid=grid, workers=1)
    separate = time.perf_counter() - started
    started = time.perf_counter()
    host_policies = [
        HostPolicy(policy, ("privileged",) if name.startswith("priority") else None, name=f"speed.{name}")
        for name, policy in baselines.BASELINES.items()
    ]
    wj.run_python_policy(host_policies, files, grid=wj.Grid(budgets, oracle="published_rule"), workers=1)
    together = time.perf_counter() - started
    print(f"published harness (tests/pyref.py, 5,280 runs): {harness:.1f} s")
    print(f"host loop, spec-style baselines (5,280 runs, one process): {host:.1f} s ({host / harness:.2f}x)")
    print(
        f"wj.run_python_policy, one call per policy (host loop + replay + scoring): {separate:.1f} s "
        f"({separate / harness:.2f}x)"
    )
    print(f"the seven in one wj.run_python_policy call: {together:.1f} s ({together / harness:.2f}x)")


PAPER_BUDGETS = (1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400, 262144, 1048576)
THRESHOLDS = np.round(np.linspace(0.0, 1.0, 101), 2).tolist()


def scores_speed(out_dir: str, batch: int = 512) -> None:
    """The issue's target: ``score_steps`` plus a 101 threshold x 11 budget sweep of ``scored_threshold`` over
    the paper episodes (4 modes x 10 x 200 steps), against the scorer's calls alone (the triage classifier's
    ``predict_proba`` over the same steps, in the same batches). Run twice: cold (this process compiles the
    sweep's program, or loads it from the compilation cache, ``$WPBJAX_CACHE_DIR``) and warm (compiled; the
    score cache emptied again so the scorer runs again)."""
    from wpbjax.host.run import dict_episodes
    from wpbjax.host.store import make_step
    from wpbjax.runtime.devices import enable_compilation_cache

    enable_compilation_cache()  # as the CLI does: a later process loads the compiled sweep from disk
    os.makedirs(out_dir, exist_ok=True)
    texts, labels = training_set()
    scorer = classifier_scorer(train_classifier(texts, labels))
    paper = wj.Generate()
    steps = [make_step(raw, "unprivileged") for episode in dict_episodes(wj.EpisodeSource.generated())
             for raw in episode["steps"]]  # fmt: skip
    if batch == 1:  # one step per call, as a model API is called (llm_scorer)
        batched = scorer
        scorer = lambda step: batched([step])[0]  # noqa: E731
    grid = wj.Grid(PAPER_BUDGETS, policies=["scored_threshold_speed"], tracks=["unprivileged"],
                   params={"threshold": THRESHOLDS})  # fmt: skip
    for attempt in ("cold", "warm"):
        started = time.perf_counter()
        for first in range(0, len(steps), batch):
            scorer(steps[first] if batch == 1 else steps[first : first + batch])
        alone = time.perf_counter() - started
        cache = os.path.join(out_dir, "scores_speed.jsonl")
        if os.path.exists(cache):
            os.remove(cache)
        started = time.perf_counter()
        scores = wj.score_steps(scorer, paper, cache=cache, batch=None if batch == 1 else batch)
        scoring = time.perf_counter() - started
        scores.register("speed")
        rows = wj.sweep(scores.episodes, grid=grid)  # the episodes score_steps loaded, not loaded again
        total = time.perf_counter() - started
        print(
            f"{attempt}, batch {batch}: {len(steps):,} steps; scorer alone {alone:.2f} s; score_steps {scoring:.2f} s "
            f"({scores.calls:,} calls); + sweep of {len(THRESHOLDS)} thresholds x {len(PAPER_BUDGETS)} budgets "
            f"({len(rows):,} rows) {total - scoring:.2f} s; total {total:.2f} s = {total / alone:.2f}x the scorer"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("triage", "speed", "scores-speed"))
    parser.add_argument("--out-dir", default="host_policies_out")
    parser.add_argument("--batch", type=int, default=512, help="scores-speed: steps per scorer call (1: one each)")
    args = parser.parse_args()
    if args.what == "speed":
        speed()
        return
    if args.what == "scores-speed":
        scores_speed(args.out_dir, args.batch)
        return
    print(markdown(triage(args.out_dir)))
    np.set_printoptions(precision=3)


if __name__ == "__main__":
    main()
