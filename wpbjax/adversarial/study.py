"""The adversary's whole study: for every policy, every mode's search, the worst regime per budget
confirmed on fresh episodes, beside the policy's worst named regime (the content of ``adv.json``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from wpbjax.adversarial import evaluate as evaluate_lib, knobs as knobs_lib, search as search_lib
from wpbjax.adversarial.knobs import KnobError
from wpbjax.adversarial.search import Search
from wpbjax.common.argument_errors import arg
from wpbjax.common.budgets import check_budgets
from wpbjax.common.tracks import check_any_track

MAX_RUNS_PER_CALL = 1 << 22  # regimes x episodes of one generation: past this a call's arrays fill memory


@dataclasses.dataclass(frozen=True)
class Shape:
    """The shape-setting knobs, fixed for a whole study: one compiled program per (policy, mode)."""

    steps: int = 200
    api_pool: int = 8
    max_params: int = 6


def read_k(objective: str, top_k: int | None) -> int:
    """K of the ``read_accuracy`` objective's retriever (default :data:`evaluate.DEFAULT_TOP_K`); 0 for the
    objectives that do not read. One-line :class:`KnobError` for a bad objective, a K below 1, or a K given
    with an objective that does not read."""
    if objective not in evaluate_lib.OBJECTIVES:
        raise KnobError(f"{arg('objective')}: expected one of {', '.join(evaluate_lib.OBJECTIVES)}; got {objective!r}")
    if objective != "read_accuracy":
        if top_k is not None:
            raise KnobError(f"{arg('top_k')}: only {arg('objective')} read_accuracy reads; got {objective}")
        return 0
    k = evaluate_lib.DEFAULT_TOP_K if top_k is None else top_k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise KnobError(f"{arg('top_k')}: expected a whole number >= 1; got {k!r}")
    return int(k)


def check(policies, budgets, track, objective, modes, config: Search, shape: Shape) -> list:
    """The policies as :class:`wpbjax.policies.Policy` objects, every argument checked (one-line errors)."""
    from wpbjax.policies import make

    if objective not in evaluate_lib.OBJECTIVES:
        raise KnobError(f"{arg('objective')}: expected one of {', '.join(evaluate_lib.OBJECTIVES)}; got {objective!r}")
    try:
        check_any_track(track)
        check_budgets(budgets)
    except ValueError as error:
        raise KnobError(f"{arg('track')} / {arg('budgets')}: {error}") from None
    if not policies:
        raise KnobError(f"{arg('policies')}: give at least one policy")
    if not modes:
        raise KnobError(f"{arg('modes')}: give at least one mode")
    config.check()
    runs = len(budgets) * config.population * config.episodes_per_regime
    if runs > MAX_RUNS_PER_CALL:
        raise KnobError(
            f"{arg('population')} x {arg('episodes_per_regime')} x budgets = {runs:,} runs per call; "
            f"at most {MAX_RUNS_PER_CALL:,}"
        )
    out = []
    for name in policies:
        try:
            policy = make(name)
        except (KeyError, ValueError) as error:
            raise KnobError(f"{arg('policies')}: {error}") from None
        evaluate_lib.check_policy(policy, track)
        out.append(policy)
    return out


def run_study(
    policies,
    budgets,
    track: str = "unprivileged",
    objective: str = "utility_ratio",
    modes=None,
    bounds: dict | None = None,
    config: Search | None = None,
    shape: Shape | None = None,
    progress=None,
    top_k: int | None = None,
) -> dict:
    """The ``adv.json`` document (docs/adversarial.md): per (policy, budget) the worst regime over
    ``modes`` (default: every JAX mode), confirmed, beside the worst named regime. ``progress``:
    ``progress(total_runs)`` -> a context manager with ``advance(runs, label)``, opened once every
    argument has been checked. ``top_k``: K of the ``read_accuracy`` objective (default 5; refused with
    another objective)."""
    import contextlib

    from wpbjax.episodes.generators.jax_gen import JAX_MODES

    config, shape = config or Search(), shape or Shape()

    k = read_k(objective, top_k)
    modes = list(JAX_MODES if modes is None else modes)
    budgets = [int(b) for b in budgets]
    spaces = [knobs_lib.space(mode, shape.steps, shape.api_pool, shape.max_params, bounds) for mode in modes]
    used = {name for space in spaces for name in space.names}
    unused = sorted(set(bounds or {}) - used)
    if unused:
        raise KnobError(f"{arg('bounds')}: {', '.join(unused)} changes none of the modes {', '.join(modes)}")
    policy_objects = check(policies, budgets, track, objective, modes, config, shape)
    named = search_lib.named_regimes()
    total = len(policy_objects) * len(spaces) * config.generations * len(budgets) * config.population
    with progress(total * config.episodes_per_regime) if progress else contextlib.nullcontext() as bar:
        results = [
            result
            for policy in policy_objects
            for result in _study_policy(policy, spaces, named, budgets, track, objective, config, shape, bar, k)
        ]
    settings = dict(
        policies=[policy.name for policy in policy_objects],
        budgets=budgets,
        track=track,
        modes=modes,
        bounds={space.mode: {name: [low, high] for name, low, high in space.bounds} for space in spaces},
        **dataclasses.asdict(shape),
        **dataclasses.asdict(config),
        **({"top_k": k} if k else {}),
    )
    return dict(objective=objective, settings=settings, results=results)


def _study_policy(
    policy, spaces, named, budgets, track, objective, config: Search, shape: Shape, progress, top_k: int = 0
) -> list:
    """One policy's results (one per budget): every mode's search, the worst confirmed, the named regimes scored."""
    results = []
    found = [
        search_lib.search_space(policy, space, budgets, track, objective, config, progress, top_k) for space in spaces
    ]
    worst = []
    for b in range(len(budgets)):
        index = int(np.argmin([per_mode[b]["objective"] for per_mode in found]))
        worst.append((spaces[index].regime(found[index][b]["unit"]), found[index][b]))
    traces = [np.minimum.reduce([per_mode[b]["trace"] for per_mode in found]).tolist() for b in range(len(budgets))]
    regimes = [regime for regime, _ in worst] + [dict(regime) for regime in named for _ in budgets]
    regime_budgets = budgets + [budget for _ in named for budget in budgets]
    shape_pair = (shape.api_pool, shape.max_params)
    scored = search_lib.score_regimes(
        policy, regimes, regime_budgets, track, objective, shape.steps, shape_pair, config, top_k
    )
    for b, budget in enumerate(budgets):
        mean, ci95 = scored[b]
        by_mode = {named[k]["mode"]: scored[len(budgets) * (1 + k) + b][0] for k in range(len(named))}
        worst_mode = min(by_mode, key=by_mode.get)
        results.append(
            dict(
                policy=policy.name,
                budget=budget,
                track=track,
                regime=worst[b][0],
                objective=worst[b][1]["objective"],
                confirmed=dict(mean=mean, ci95=ci95, episodes=config.confirm_episodes, seed=config.seed + 1),
                worst_named=dict(mode=worst_mode, objective=by_mode[worst_mode]),
                named=by_mode,
                trace=traces[b],
            )
        )
    return results
