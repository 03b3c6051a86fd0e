"""What a sweep is asked, as typed values with defaults (gymnax's ``EnvParams`` style).

``wj.sweep(episodes, grid=Grid(...), reads=Reads(...), tiers=Tiers(...), run=Run(...), out=..., resume=...)``:
each config holds one question's settings, and the CLI maps its flags onto them (``wpbjax sweep``):

- :class:`Generate` -- the episodes made when none are given (``episodes=Generate(...)`` or None);
- :class:`Grid` -- what runs: budgets x tracks x policies x param grid, and the oracle the regret uses;
- :class:`Reads` -- the probes and the retriever (one row per K; docs/reads.md);
- :class:`Tiers` -- tiered runs instead (a journal beside the checkpoint; docs/tiers.md);
- :class:`Run` -- how it runs: devices, memory per chunk, processes, progress and notes (the rows never
  depend on it, except that ``memory_cap`` and the device count set the chunking a resume checks).

The values are checked where they are used (the plan, the episode source), so an error names the field
(``budgets``, ``top_k``, ...) as the CLI names its flag.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from wpbjax.common.budgets import PAPER_BUDGETS
from wpbjax.episodes.source import DEFAULT_MODES

PUBLISHED_LINEUP = "published"  # the published harness's policies per track
DEFAULT_TRACKS = ("unprivileged", "privileged")
DEFAULT_MEMORY_CAP = 2 << 30  # bytes of device memory one chunk may use; safe on a 24 GiB machine


@dataclasses.dataclass(frozen=True)
class Generate:
    """Episodes made by a generator: ``n_episodes`` of each of ``modes``, ``steps`` steps each, from ``seed``.

    ``engine``: ``python`` (the published generator, draw for draw) or ``jax`` (on device, with more regimes);
    ``knobs``: generator settings (``drift_prob``, ``api_pool``, ...; docs/generators.md)."""

    modes: Sequence[str] | str = DEFAULT_MODES
    n_episodes: int = 10
    steps: int = 200
    seed: int = 0
    engine: str = "python"
    knobs: Mapping[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Grid:
    """What runs: every (episode, budget, track, policy, param grid point).

    ``budgets``: [B] bytes (the checkpoint's, in a tiered sweep); ``policies``: ``"published"`` (the published
    line-up per track; in a tiered sweep the tier line-up) or names; ``tracks``: the metadata a policy sees;
    ``params``: param name -> values, each policy run over the Cartesian product of the swept params it has (a
    ``param_NAME`` column each); ``oracle``: ``exact`` or ``published_rule`` (the published numbers)."""

    budgets: Sequence[int] = PAPER_BUDGETS
    policies: str | Sequence[str] = PUBLISHED_LINEUP
    tracks: Sequence[str] = DEFAULT_TRACKS
    params: Mapping[str, Sequence[float]] | None = None
    oracle: str = "exact"


@dataclasses.dataclass(frozen=True)
class Reads:
    """What is read back (docs/reads.md). ``probes``: ``labels`` (the episodes' ``probes`` labels), ``generate``
    (those, else ``probe_rate`` probes per step drawn by the default generator) or ``none``; of generated
    probes, ``multi_fact_rate`` ask for 2-3 facts and ``history_rate`` for a fact's history (the generator's
    defaults, :class:`wpbjax.episodes.probes.ProbeConfig`: WRIT's mix of probes); ``top_k``:
    records the retriever returns per probe (one row per K); ``retriever``: its weights (``w_rel``,
    ``w_rec``, ``w_imp``, ``decay``)."""

    top_k: Sequence[int] = (5,)
    probes: str = "labels"
    probe_rate: float = 0.1
    multi_fact_rate: float = 0.4
    history_rate: float = 0.1
    retriever: Mapping[str, float] | None = None


@dataclasses.dataclass(frozen=True)
class Tiers:
    """Tiered runs (docs/tiers.md): a journal beside the checkpoint, each with its own byte budget.

    ``journal_budgets``: [J] bytes, crossed with ``Grid.budgets`` (which size the checkpoint; 0: no such
    tier); ``crash_rate``: per-step crash probability (draws from ``crash_seed``); ``costs``: model-call
    weights (``extraction``, ``embedding``, ``dedupe``, byte-equivalents); ``calls_per_step``,
    ``call_burst``: an optional compute budget, a token bucket on model calls (none by default)."""

    journal_budgets: Sequence[int] = (0,)
    crash_rate: float = 0.0
    crash_seed: int = 0
    costs: Mapping[str, float] | None = None
    calls_per_step: float = float("inf")
    call_burst: float | None = None


@dataclasses.dataclass(frozen=True)
class Run:
    """How a sweep runs; the rows do not depend on it.

    ``devices``: JAX devices (default: the local ones); ``memory_cap``: bytes of device memory one chunk of
    runs may use; ``cluster``: this process's place among several
    (:func:`wpbjax.runtime.distributed.initialize`; process 0 writes); ``quiet``: no progress bar;
    ``log``: receives the sweep's notes, one line each; ``command``: recorded in the sidecar."""

    devices: Sequence | None = None
    memory_cap: int = DEFAULT_MEMORY_CAP
    cluster: object = None
    quiet: bool = True
    log: Callable[[str], None] | None = None
    command: Sequence[str] | None = None


def options(generate: Generate, grid: Grid, reads: Reads, run: Run, tiers: Tiers | None = None) -> dict:
    """A sweep's row-shaping settings as one flat dict: the sidecar's ``arguments`` and a resume's
    identity (the keys are the CLI's flag names, as they have always been recorded)."""
    recorded = dict(
        modes=generate.modes,
        n_episodes=generate.n_episodes,
        steps=generate.steps,
        seed=generate.seed,
        engine=generate.engine,
        budgets=grid.budgets,
        policies=grid.policies,
        tracks=grid.tracks,
        oracle=grid.oracle,
        memory_cap=run.memory_cap,
        params=grid.params,
        top_k=list(reads.top_k),
        probes=reads.probes,
        probe_rate=reads.probe_rate,
        multi_fact_rate=reads.multi_fact_rate,
        history_rate=reads.history_rate,
        retriever=reads.retriever,
        **generate.knobs,
    )
    if tiers is not None:  # (no compute budget: None, as JSON has no infinity)
        recorded["tiers"] = dataclasses.asdict(tiers)
        if recorded["tiers"]["calls_per_step"] == float("inf"):
            recorded["tiers"]["calls_per_step"] = None
    return recorded
