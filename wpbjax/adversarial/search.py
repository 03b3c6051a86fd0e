"""The search: per (policy, budget), the regime that minimises the objective, then confirmed on fresh episodes.

Each generation asks every budget's search for ``population`` points of the unit cube
(:class:`wpbjax.adversarial.knobs.Space`), scores all budgets' regimes in one compiled call
(:func:`wpbjax.adversarial.evaluate.evaluate`: regimes x episodes, each regime at its budget) and tells
each search its regimes' mean objective. Two methods: ``cma_es`` (evosax's CMA-ES, started at the
cube's centre) and ``random`` (uniform points: the baseline CMA-ES must beat at equal evaluations).

Every generation scores the same ``episodes_per_regime`` episodes (seed ``seed``, indices 0..E-1:
common random numbers, so two regimes differ by their knobs, not by their draws). The best regime
found is then re-run on ``confirm_episodes`` fresh episodes (generator seed ``seed + 1``) and reported
with a 95% interval; the worst *named* regime (each mode at its default knobs, ``stripe_like`` at its
fitted knob set) is scored on the same fresh seeds.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.adversarial import evaluate as evaluate_lib, knobs as knobs_lib
from wpbjax.adversarial.knobs import KnobError, Space
from wpbjax.common.argument_errors import arg
from wpbjax.episodes.generators import jax_gen

METHODS = ("cma_es", "random")
Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclasses.dataclass(frozen=True)
class Search:
    """How one search runs (sizes and method); see docs/adversarial.md."""

    population: int = 64  # regimes per budget per generation
    generations: int = 20
    episodes_per_regime: int = 32  # search estimate: the same episodes' draws for every regime
    confirm_episodes: int = 128  # fresh episodes for the reported worst case (>= 128)
    method: str = "cma_es"  # or "random"
    seed: int = 0
    std_init: float = 0.3  # CMA-ES step size, in unit-cube coordinates

    def check(self) -> None:
        for name, low in (("population", 2), ("generations", 1), ("episodes_per_regime", 1), ("confirm_episodes", 128)):
            if getattr(self, name) < low:
                raise KnobError(f"{arg(name)}: must be >= {low}; got {getattr(self, name)}")
        if self.method not in METHODS:
            raise KnobError(f"{arg('search')}: expected one of {', '.join(METHODS)}; got {self.method!r}")
        if self.method == "cma_es":
            require_evosax()
        if not -(2**31) <= self.seed < 2**31 - 1:
            raise KnobError(f"{arg('seed')}: must fit in int32; got {self.seed}")


def require_evosax() -> None:
    """One line, not a traceback, when ``cma_es`` is asked for without evosax installed."""
    try:
        import evosax.algorithms  # noqa: F401
    except ImportError:
        raise KnobError(
            f"{arg('search')} cma_es needs evosax: pip install 'wpbjax[adversary]' (or use random)"
        ) from None


@functools.cache
def _cma_es(population: int, dim: int):
    """One evosax CMA-ES strategy per (population, dim), shared by every search of that shape: evosax
    compiles its init, ask and tell for each strategy object (the object is a static argument, hashed by
    identity), so one object per budget's search would compile each budget's anew."""
    from evosax.algorithms import CMA_ES

    return CMA_ES(population_size=population, solution=jnp.zeros(dim))


class _Searcher:
    """One budget's search state over generations (host loop; each ask/tell is a small jitted call)."""

    def __init__(self, config: Search, dim: int, key):
        self.method, self.population, self.dim = config.method, config.population, dim
        if config.method == "cma_es":
            self.strategy = _cma_es(config.population, dim)
            self.params = self.strategy.default_params.replace(std_init=config.std_init)
            key, start = jax.random.split(key)
            self.state = self.strategy.init(start, jnp.full(dim, 0.5), self.params)
        self.key = key

    def ask(self) -> np.ndarray:
        self.key, key = jax.random.split(self.key)
        if self.method == "random":
            return np.asarray(jax.random.uniform(key, (self.population, self.dim)))
        self._asked, self.state = self.strategy.ask(key, self.state, self.params)
        return np.clip(np.asarray(self._asked), 0.0, 1.0)

    def tell(self, fitness: np.ndarray) -> None:
        if self.method == "cma_es":
            # a point asked outside the cube is scored at its clipped image, plus its squared distance
            # to the cube: without it the search would see a flat landscape outside and drift there
            asked = np.asarray(self._asked)
            fitness = fitness + np.sum((asked - np.clip(asked, 0.0, 1.0)) ** 2, axis=1)
            self.key, key = jax.random.split(self.key)
            self.state, _ = self.strategy.tell(
                key, self._asked, jnp.asarray(fitness, jnp.float32), self.state, self.params
            )


def _ci95(values: np.ndarray) -> list:
    """[low, high] normal 95% interval of the mean of ``values`` [n]."""
    mean, half = float(values.mean()), Z95 * float(values.std(ddof=1)) / np.sqrt(len(values))
    return [mean - half, mean + half]


def minimise(score, dim: int, n_groups: int, config: Search, progress=None, label: str = "") -> list:
    """``n_groups`` independent searches of [0, 1]^dim, run side by side: each generation asks every
    group for ``config.population`` points and scores them all in one call, ``score(points [G * R, D])
    -> [G, R]`` (lower is worse for the policy: the search minimises). Per group: {"unit": [D] best
    point, "objective": its score, "trace": [generations] best score so far}."""
    keys = jax.random.split(jax.random.key(config.seed), n_groups)
    searchers = [_Searcher(config, dim, keys[g]) for g in range(n_groups)]
    best = [(np.inf, None) for _ in range(n_groups)]
    traces = [[] for _ in range(n_groups)]
    for generation in range(config.generations):
        points = np.concatenate([searcher.ask() for searcher in searchers]).astype(np.float32)  # [G * R, D]
        means = np.asarray(score(points), np.float64).reshape(n_groups, config.population)
        for g, searcher in enumerate(searchers):
            searcher.tell(means[g])
            index = int(np.argmin(means[g]))
            if means[g, index] < best[g][0]:
                best[g] = (float(means[g, index]), points[g * config.population + index])
            traces[g].append(best[g][0])
        if progress is not None:
            low = ", ".join(f"{value:.3f}" for value, _ in best)
            progress.advance(points.shape[0] * config.episodes_per_regime, f"{label} gen {generation + 1}: {low}")
    return [dict(unit=unit, objective=value, trace=trace) for (value, unit), trace in zip(best, traces)]


def search_space(
    policy,
    space: Space,
    budgets,
    track: str,
    objective: str,
    config: Search,
    progress=None,
    top_k: int = 0,
    params: dict | None = None,
) -> list:
    """Per budget (in order): {"unit": [D] best point, "objective": its search estimate, "trace": [G]
    best estimate so far after each generation}. ``progress``: an object with ``advance(runs, label)``;
    ``top_k``: K of the ``read_accuracy`` objective (0 for the others); ``params``: the policy's param
    overrides (traced: policies that differ only by them share one compiled program)."""
    budgets = np.asarray(budgets, np.int64)
    groups = tuple(evaluate_lib.group(config.population, space.steps, b, objective, search=True) for b in budgets)
    shape = jax_gen.Shape(space.mode, space.steps, space.api_pool, space.max_params)
    setup = evaluate_lib.Setup(shape, track, groups, top_k)
    seeds = jax_gen.episode_seeds(config.seed, 0, config.episodes_per_regime)
    regime_budgets = np.repeat(budgets, config.population).astype(np.int32)
    work = regime_budgets.size * config.episodes_per_regime * space.steps * config.generations  # one call a generation

    def score(points):
        knobs = space.to_knobs(jnp.asarray(points))
        counts = evaluate_lib.evaluate(policy, setup, knobs, regime_budgets, seeds, params, work=work)
        return evaluate_lib.objective_values(counts, objective).mean(axis=1)

    return minimise(score, space.dim, len(budgets), config, progress, space.mode)


def score_regimes(
    policy,
    regimes: list,
    budgets,
    track: str,
    objective: str,
    steps: int,
    shape: tuple,
    config: Search,
    top_k: int = 0,
    params: dict | None = None,
):
    """[len(regimes)] of (mean, ci95) of each regime (a knob dict with "mode") at its budget on the
    confirmation episodes (generator seed ``config.seed + 1``, indices 0..confirm_episodes-1).
    ``shape``: (api_pool, max_params); ``top_k``, ``params``: as :func:`search_space`. Regimes of one mode
    share one compiled call."""
    seeds = jax_gen.episode_seeds(config.seed + 1, 0, config.confirm_episodes)
    out = [None] * len(regimes)
    by_mode: dict = {}
    for index, regime in enumerate(regimes):
        by_mode.setdefault(regime["mode"], []).append(index)
    for indices in by_mode.values():
        configs = [knobs_lib.regime_config(regimes[i], steps, *shape, config.seed + 1) for i in indices]
        stacked = jax.tree_util.tree_map(lambda *leaves: jnp.asarray(np.stack(leaves)), *[c.knobs() for c in configs])
        budget = np.asarray([budgets[i] for i in indices], np.int32)
        groups = (evaluate_lib.group(len(indices), steps, int(budget.max()), objective, search=False),)
        setup = evaluate_lib.Setup(configs[0].shape, track, groups, top_k)
        counts = evaluate_lib.evaluate(policy, setup, stacked, budget, seeds, params)
        values = evaluate_lib.objective_values(counts, objective)
        for row, i in enumerate(indices):
            out[i] = (float(values[row].mean()), _ci95(values[row]))
    return out


def named_regimes() -> list:
    """The eight named regimes: every published and new JAX mode at its default knobs, in the
    search's shape (``stripe_like`` is left out: its fitted knob set has a shape of its own)."""
    return [{"mode": mode} for mode in jax_gen.JAX_MODES if mode not in jax_gen.FITTED_MODES]
