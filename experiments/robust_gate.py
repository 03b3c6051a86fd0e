"""Robust gates (docs/adversarial.md, "Robust gates"): train the learned gate on a pool that adds the
adversary's regimes over a few rounds, and compare it with the standard gate.

    PYTHONPATH=. python experiments/robust_gate.py     # about ten minutes on 2 CPU cores

The loop (:func:`robust_loop`): train the standard gate on the published generator's pool
(``wpbjax.learn.train.train`` + the afford threshold's calibration, as ``wj.train_gate`` does); then per
round search every mode's worst regime against the current gate (CMA-ES at 10 KB, objective F1, every
regime with some drift: ``Loop.bounds``), add each found regime's episodes (training seeds, never the
search's or the confirmation's) to the pool, and retrain.
The comparison (:func:`compare`): each gate's own worst case (a fresh search against it, the worst over
modes, confirmed on 128 fresh episodes with a 95% interval), each gate on the other's worst regime, and
both on the eight named regimes (same fresh episodes).

Every gate runs as one policy whose weights are traced params (:func:`traced_gate`), so one compiled
search serves every round. Writes experiments/robust_gate/OBJECTIVE_BUDGET.json (atomically) and the
tables between the robust-gate markers of docs/adversarial.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import time

import jax.numpy as jnp
import numpy as np

from wpbjax.adversarial import knobs as knobs_lib, search as search_lib
from wpbjax.adversarial.search import Search
from wpbjax.adversarial.study import Shape
from wpbjax.episodes.batch import concat
from wpbjax.episodes.generators import jax_gen
from wpbjax.files.atomic import write_text
from wpbjax.learn.calibrate import calibrate_afford_threshold
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.features import init_state, steps_since_write
from wpbjax.learn.gate import HEADS, gate_step
from wpbjax.learn.train import calibration_episodes, train, training_episodes
from wpbjax.policies.base import Policy
from wpbjax.state import actions, store as store_lib

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "experiments" / "robust_gate"  # one document per run; not adversarial_studies/ (adv.json only)
DOC_RUNS = ("f1_10240", "f1_1024")  # the runs whose tables the doc shows, in order
DOC = ROOT / "docs" / "adversarial.md"
MARKERS = ("<!-- robust gate: experiments/robust_gate.py -->", "<!-- end robust gate -->")
ADVERSARIAL_SEED_BASE = 900_000  # generator seeds of the regimes' training episodes (search: 0, confirmation: 1)


@dataclasses.dataclass(frozen=True)
class Loop:
    """The robust-gate loop's sizes (defaults: the docs' run)."""

    train: TrainConfig = TrainConfig(steps=150, pool_per_mode=64, batch=64, calibration_per_mode=32)
    search: Search = Search(population=12, generations=5, episodes_per_regime=16, confirm_episodes=128)
    modes: tuple = ("burst_redundancy", "delayed_relevance", "rollback", "docs_migration")
    named_modes: tuple | None = None  # the named regimes compared (None: all eight)
    rounds: int = 2
    episodes_per_found: int = 32  # training episodes added per found regime
    budget: int = 10240
    api_pool: int = 8
    max_params: int = 6
    # F1, the gate's own training objective. Every regime keeps some drift (a drift-free episode has no
    # critical step: its F1 is 0 whatever a policy does, and it teaches an F1-trained gate nothing)
    objective: str = "f1"
    bounds: tuple = (("drift_prob", 0.05, 0.3), ("burst_drift_prob", 0.05, 1.0))

    @property
    def shape(self) -> Shape:
        return Shape(self.train.episode_steps, self.api_pool, self.max_params)

    @property
    def track(self) -> str:
        return self.train.track


# --- a gate whose weights are traced --------------------------------------------------------------
def _weight_names(weights: dict) -> dict:
    """{(head, field): (shape, [param name per element])}: a policy's params are scalars, so each weight
    element is a param of its own (``weight:HEAD/FIELD/INDEX``)."""
    out = {}
    for head in HEADS:
        for field, value in weights[head].items():
            shape = np.shape(value)
            out[(head, field)] = (shape, [f"weight:{head}/{field}/{i}" for i in range(int(np.prod(shape)))])
    return out


def gate_params(weights: dict, afford_threshold: float) -> dict:
    """A trained gate as param overrides of :func:`traced_gate` (threshold, afford threshold, weights)."""
    flat = {}
    for (head, field), (_, names) in _weight_names(weights).items():
        flat.update(zip(names, np.asarray(weights[head][field], np.float64).ravel().tolist()))
    return {"threshold": 0.0, "afford_threshold": float(afford_threshold), **flat}


def traced_gate(weights: dict, track: str, afford_threshold: float, name: str = "learned_gate(traced)") -> Policy:
    """The hard gate of ``wpbjax.learn.gate_policy`` (write iff detect > threshold and afford >
    afford_threshold) with its weights as params: a gate of the same width differs by its params only,
    so it runs in the same compiled program. ``weights``/``afford_threshold``: the default params. The
    weight arrays are assembled once per run (``init``) and carried in the policy's state."""
    layout = _weight_names(weights)

    def init(params, episode, key):
        assembled = {head: {} for head in HEADS}
        for (head, field), (shape, names) in layout.items():
            assembled[head][field] = jnp.stack([params[name] for name in names]).reshape(shape)
        return init_state(episode), assembled

    def act(params, state, store, episode, pos, budget):
        features, assembled = state
        gate, features = gate_step(
            assembled,
            track,
            features,
            episode,
            pos,
            budget,
            store_lib.remaining(store, budget),
            steps_since_write(store.newest, pos),
        )
        write = (gate.detect > params["threshold"]) & (gate.afford > params["afford_threshold"])
        return actions.write_if(write), (features, assembled)

    tracks = ("privileged",) if track == "privileged" else ("unprivileged", "privileged")
    return Policy(name, act, tracks, gate_params(weights, afford_threshold), init=init, emits={"write"}, layout=())


# --- the loop ---------------------------------------------------------------------------------------
def train_on(pool, config: TrainConfig) -> tuple[dict, float]:
    """(weights, afford threshold) of a gate trained on ``pool``, calibrated as ``wj.train_gate`` calibrates."""
    weights, _ = train(config, pool=pool)
    threshold, _ = calibrate_afford_threshold(
        weights, config.track, calibration_episodes(config, config.calibration_per_mode)
    )
    return weights, float(threshold)


def worst_per_mode(policy: Policy, params: dict, loop: Loop) -> list:
    """Per searched mode: {"regime", "objective" (search estimate), "trace"} of its worst regime at
    ``loop.budget``, within ``loop.bounds``."""
    out = []
    for mode in loop.modes:
        used = {knob.name for knob in knobs_lib.KNOBS if mode in knob.modes}
        bounds = {name: (low, high) for name, low, high in loop.bounds if name in used}
        space = knobs_lib.space(mode, loop.shape.steps, loop.api_pool, loop.max_params, bounds)
        (found,) = search_lib.search_space(
            policy, space, [loop.budget], loop.track, loop.objective, loop.search, params=params
        )
        out.append(dict(regime=space.regime(found["unit"]), objective=found["objective"], trace=found["trace"]))
    return out


def regime_episodes(regimes: list, loop: Loop, seed: int):
    """``loop.episodes_per_found`` encoded episodes of each regime at generator seed ``seed``."""
    configs = [
        knobs_lib.regime_config(regime, loop.shape.steps, loop.api_pool, loop.max_params, seed) for regime in regimes
    ]
    return jax_gen.generate_encoded(configs, loop.episodes_per_found)


def robust_loop(loop: Loop, log=print) -> dict:
    """{"standard", "robust": gate param dicts, "policy": the traced gate, "rounds": [{"against", "found"}],
    "pool_sizes": [episodes per training]}: round r searches against the gate of round r - 1 (round 1: the
    standard gate), adds its finds' episodes to the pool and retrains."""
    started = time.time()
    base_pool = training_episodes(loop.train)
    weights, threshold = train_on(base_pool, loop.train)
    log(
        f"standard gate: {base_pool.n_episodes} episodes, afford threshold {threshold:g} ({time.time() - started:.0f} s)"
    )
    policy = traced_gate(weights, loop.track, threshold)
    gates = [gate_params(weights, threshold)]
    rounds, added, sizes = [], [], [base_pool.n_episodes]
    for number in range(1, loop.rounds + 1):
        found = worst_per_mode(policy, gates[-1], loop)
        rounds.append(dict(against=number - 1, found=found))
        added.append(regime_episodes([item["regime"] for item in found], loop, ADVERSARIAL_SEED_BASE + number))
        pool = concat([base_pool, *added])
        sizes.append(pool.n_episodes)
        weights, threshold = train_on(pool, loop.train)
        gates.append(gate_params(weights, threshold))
        worst = min(item["objective"] for item in found)
        log(
            f"round {number}: worst found {worst:.3f} against gate {number - 1}; retrained on {pool.n_episodes} "
            f"episodes, afford threshold {threshold:g} ({time.time() - started:.0f} s)"
        )
    return dict(standard=gates[0], robust=gates[-1], policy=policy, rounds=rounds, pool_sizes=sizes, all_gates=gates)


def weight_change(first: dict, last: dict) -> float:
    """|last - first| / |first| over the weights (L2): how far retraining moved the gate."""
    names = [name for name in first if name.startswith("weight:")]
    a, b = np.array([first[name] for name in names]), np.array([last[name] for name in names])
    return float(np.linalg.norm(b - a) / np.linalg.norm(a))


def compare(loop: Loop, loop_result: dict, log=print) -> dict:
    """Per gate: its own worst case (standard: round 1's search; robust: a fresh search against it), both
    gates confirmed on every gate's worst regime and on the named regimes (128 fresh episodes, 95% CI)."""
    policy = loop_result["policy"]
    own = {"standard": loop_result["rounds"][0]["found"], "robust": worst_per_mode(policy, loop_result["robust"], loop)}
    worst = {name: min(found, key=lambda item: item["objective"]) for name, found in own.items()}
    named = [
        regime
        for regime in search_lib.named_regimes()
        if loop.named_modes is None or regime["mode"] in loop.named_modes
    ]
    regimes = [worst["standard"]["regime"], worst["robust"]["regime"], *named]
    shape = (loop.api_pool, loop.max_params)
    out = {}
    for name in ("standard", "robust"):
        scored = search_lib.score_regimes(
            policy,
            regimes,
            [loop.budget] * len(regimes),
            loop.track,
            loop.objective,
            loop.shape.steps,
            shape,
            loop.search,
            params=loop_result[name],
        )
        by_named = {regime["mode"]: scored[2 + k][0] for k, regime in enumerate(named)}
        worst_named = min(by_named, key=by_named.get)
        out[name] = dict(
            own_worst=dict(
                regime=worst[name]["regime"],
                search=worst[name]["objective"],
                mean=scored[0 if name == "standard" else 1][0],
                ci95=list(scored[0 if name == "standard" else 1][1]),
            ),
            on_standard_worst=dict(mean=scored[0][0], ci95=list(scored[0][1])),
            on_robust_worst=dict(mean=scored[1][0], ci95=list(scored[1][1])),
            named=by_named,
            named_mean=float(np.mean(list(by_named.values()))),
            worst_named=dict(mode=worst_named, objective=by_named[worst_named]),
        )
        log(f"{name}: own worst {out[name]['own_worst']['mean']:.3f}, named mean {out[name]['named_mean']:.3f}")
    return out


# --- the doc's table --------------------------------------------------------------------------------
def table(document: dict) -> str:
    """The robust-gate table of docs/adversarial.md from the saved document."""
    gates, settings = document["gates"], document["settings"]

    def cell(entry):
        low, high = entry["ci95"]
        return f"{entry['mean']:.3f} [{low:.3f}, {high:.3f}]"

    lines = [
        f"{settings['objective']} at {settings['budget'] // 1024} KB, unprivileged (experiments/robust_gate.py "
        f"--objective {settings['objective']} --budget {settings['budget']}; {document['seconds']:.0f} s); afford "
        f"thresholds by round {', '.join(f'{value:g}' for value in document['afford_thresholds'])}; weights moved "
        f"{', '.join(f'{value:.0%}' for value in document['weight_change'])} from the standard gate's by round.",
        "",
        "| gate | own worst case (confirmed, 95% CI) | its regime | on the standard gate's worst regime | "
        "on the robust gate's worst regime | mean over named regimes | worst named |",
        "|---" * 7 + "|",
    ]
    for name in ("standard", "robust"):
        gate = gates[name]
        regime = gate["own_worst"]["regime"]
        knobs = ", ".join(f"{key}={value}" for key, value in regime.items() if key != "mode")
        lines.append(
            f"| {name} | {cell(gate['own_worst'])} | {regime['mode']}: {knobs} | {cell(gate['on_standard_worst'])} | "
            f"{cell(gate['on_robust_worst'])} | {gate['named_mean']:.3f} | "
            f"{gate['worst_named']['objective']:.3f} ({gate['worst_named']['mode']}) |"
        )
    lines += ["", "| named regime | standard gate | robust gate | robust - standard |", "|---|---|---|---|"]
    for mode, value in gates["standard"]["named"].items():
        robust = gates["robust"]["named"][mode]
        lines.append(f"| {mode} | {value:.3f} | {robust:.3f} | {robust - value:+.3f} |")
    return "\n".join(lines)


def write_doc(documents: list) -> None:
    text = DOC.read_text()
    begin, end = MARKERS
    if begin not in text:
        raise SystemExit(f"{DOC}: no {begin} marker")
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    tables = "\n\n".join(table(document) for document in documents)
    DOC.write_text(f"{head}{begin}\n{tables}\n{end}{tail}")


def run(loop: Loop, log=print) -> dict:
    """The loop and the comparison as one JSON-able document."""
    started = time.time()
    result = robust_loop(loop, log)
    gates = compare(loop, result, log)
    settings = dataclasses.asdict(loop)
    return dict(
        settings=settings,
        afford_thresholds=[gate["afford_threshold"] for gate in result["all_gates"]],
        weight_change=[weight_change(result["standard"], gate) for gate in result["all_gates"][1:]],
        pool_sizes=result["pool_sizes"],
        rounds=result["rounds"],
        gates=gates,
        seconds=round(time.time() - started, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", action="store_true", help="only rewrite the doc from the saved documents")
    parser.add_argument("--budget", type=int, default=Loop.budget, help="bytes (default 10240)")
    parser.add_argument("--objective", default=Loop.objective, help="f1 (default) or utility_ratio")
    parser.add_argument("--no-drift-floor", action="store_true", help="search drift-free regimes too")
    args = parser.parse_args()
    if not args.tables:
        loop = Loop(budget=args.budget, objective=args.objective, bounds=() if args.no_drift_floor else Loop.bounds)
        document = run(loop)
        path = RESULTS_DIR / f"{args.objective}_{args.budget}{'_no_floor' if args.no_drift_floor else ''}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(document, indent=1, default=float) + "\n")
        print(f"{path}: {document['seconds']:.0f} s")
    write_doc(saved_documents())


def saved_documents() -> list:
    """The saved runs the doc shows (:data:`DOC_RUNS`, those that exist)."""
    paths = [RESULTS_DIR / f"{name}.json" for name in DOC_RUNS]
    return [json.loads(path.read_text()) for path in paths if path.exists()]


if __name__ == "__main__":
    main()
