"""The Python API: what ``import wpbjax as wj`` offers, and what the ``wpbjax`` CLI maps its flags onto.

    import wpbjax as wj
    episodes = wj.episodes.generate(modes=["default"], n_episodes=10)       # or wj.episodes.load("ep.jsonl")
    counts = wj.simulate("priority_greedy", episodes, [1024, 10240], track="privileged")  # {metric: [N, B]}
    grid = wj.Grid(budgets=[1024, 10240])
    table = wj.sweep(wj.Generate(n_episodes=2), grid=grid)                  # the CLI sweep's rows
    board = wj.leaderboard(table)                                           # mean F1 by (track, policy) x budget
    wj.sweep(wj.Generate(n_episodes=2), grid=grid, out="results.csv")       # + results.csv.meta.json
    wj.report("results.csv", "report/")

:func:`sweep` takes the CLI sweep's options as typed configs (:mod:`wpbjax.sweeps.config`: ``Generate``,
``Grid``, ``Reads``, ``Tiers``, ``Run``), with the CLI's defaults.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from wpbjax.episodes.source import EpisodeSource
from wpbjax.sweeps.config import Generate, Grid, Reads, Run, Tiers, options as sweep_options

HEADLINE_BUDGET = 10240  # the report's leaderboard budget (wpbjax.reports.tables.HEADLINE_BUDGET)


def episode_source(episodes=None, generate: Generate = Generate()) -> EpisodeSource | None:
    """The :class:`EpisodeSource` of a sweep's ``episodes``: JSONL path(s) or an EpisodeSource as given; None
    or a :class:`Generate` config: generated (``modes`` × ``n_episodes`` by ``engine``; ``generate`` when
    ``episodes`` is None). None when ``episodes`` is already encoded (in memory: nothing to record or rebuild)."""
    if isinstance(episodes, EpisodeSource):
        return episodes
    if isinstance(episodes, Generate):
        generate, episodes = episodes, None
    if isinstance(episodes, (str, os.PathLike)) or (isinstance(episodes, (list, tuple)) and episodes):
        return EpisodeSource.from_files(episodes)
    if episodes is None or (isinstance(episodes, (list, tuple)) and not episodes):
        return EpisodeSource.generated(
            generate.modes,
            generate.n_episodes,
            generate.engine,
            steps=generate.steps,
            seed=generate.seed,
            **generate.knobs,
        )
    return None


def _encoded(episodes, source: EpisodeSource | None) -> tuple:
    """(EncodedEpisodes, [N] set index) of a sweep's episodes."""
    if source is not None:
        return source.load_sets()
    if not hasattr(episodes, "track_costs"):
        raise ValueError(
            "episodes: expected JSONL path(s), an EpisodeSource, a wj.Generate config or encoded episodes "
            f"(wj.episodes.generate / load); got {type(episodes).__name__}"
        )
    return episodes, None


def sweep(
    episodes=None,
    *,
    grid: Grid = Grid(),
    reads: Reads = Reads(),
    tiers: Tiers | None = None,
    run: Run = Run(),
    out: str | os.PathLike | None = None,
    resume: bool = False,
) -> pd.DataFrame | SweepFile | None:
    """Every (episode, budget, track, policy, param point, K) run as one results row, as ``wpbjax sweep`` writes them.

    ``episodes``: JSONL path(s) (``real:stripe``, ``changelog:NAME`` too), an :class:`EpisodeSource`, encoded
    episodes (:func:`wpbjax.episodes.generate`), a :class:`Generate` config, or None (``Generate()``: the
    paper's four modes, 10 episodes each). ``grid`` (:class:`Grid`): budgets, policies, tracks, param grid,
    oracle. ``reads`` (:class:`Reads`): probes and retriever. ``tiers`` (:class:`Tiers`): tiered runs instead
    (docs/tiers.md). ``run`` (:class:`Run`): devices, memory per chunk, processes, progress, notes.

    Without ``out``: the table (a ``pandas.DataFrame``). With ``out`` (.csv or .parquet): the table streamed
    there chunk by chunk with its sidecar ``out.meta.json``, exactly as ``wpbjax sweep --out`` writes them,
    and a :class:`SweepFile` returned (None on a process other than 0 of ``run.cluster``): every argument and
    input is checked first (an ``out`` naming an input, or a table past the free disk space, is refused),
    table and sidecar are renamed into place only when complete, and a second live sweep into the same
    ``out`` is refused (naming the first's pid; :mod:`wpbjax.files.output_lock`). ``resume``: finish an
    interrupted sweep of the same arguments from the chunks already in ``out``'s temporary file
    (:mod:`wpbjax.files.resume`)."""
    from wpbjax.common.argument_errors import ArgumentError, arg

    generate = episodes if isinstance(episodes, Generate) else Generate()
    if out is None:
        if resume or run.cluster is not None:
            name = "resume" if resume else "cluster"
            raise ArgumentError(f"{arg(name)}: only a sweep into a file takes it (give {arg('out')})")
        return _sweep_table(episodes, generate, grid, reads, tiers, run)
    return _sweep_file(out, episodes, generate, grid, reads, tiers, run, resume)


def _check_grid(grid: Grid, tiers: Tiers | None, run: Run) -> None:
    from wpbjax.sweeps.plan import check_sweep

    check_sweep(grid.budgets, grid.policies, grid.tracks, grid.oracle, run.memory_cap, grid.params, tiers)


def _plan_arguments(grid: Grid, read_config, tiers: Tiers | None, run: Run) -> dict:
    """:func:`wpbjax.sweeps.make_plan`'s keyword arguments from a sweep's configs."""
    return dict(
        budgets=grid.budgets,
        policies=grid.policies,
        tracks=grid.tracks,
        oracle=grid.oracle,
        devices=run.devices,
        params=grid.params,
        cluster=run.cluster,
        reads=read_config,
        tiers=tiers,
    )


def _sweep_table(episodes, generate: Generate, grid: Grid, reads: Reads, tiers: Tiers | None, run: Run) -> pd.DataFrame:
    """:func:`sweep`'s rows in memory."""
    from wpbjax.runtime.progress import Progress
    from wpbjax.sweeps import make_plan, run_chunk

    _check_grid(grid, tiers, run)
    read_config = read_plan(reads)
    source = episode_source(episodes, generate)
    encoded, set_index = _encoded(episodes, source)
    plan = make_plan(
        encoded, set_index=set_index, memory_cap=run.memory_cap, **_plan_arguments(grid, read_config, tiers, run)
    )
    with Progress(plan.total_runs, enabled=not run.quiet) as progress:
        return pd.concat([run_chunk(plan, chunk, progress) for chunk in plan.chunks()], ignore_index=True)


def run_python_policy(
    policy,
    episodes=None,
    *,
    grid: Grid = Grid(tracks=("unprivileged",)),
    reads: Reads = Reads(),
    tiers: Tiers | None = None,
    run: Run = Run(),
    workers: int | None = None,
) -> pd.DataFrame:
    """A Python policy's results rows (docs/policies.md, "Python and model-based policies"): ``policy`` -- a
    class with ``select(step, store)`` (a fresh instance per run), a function ``(step, store) -> actions``,
    ``"MODULE:NAME"``, or a list of these (one sweep: their replays share one compiled program) -- is driven
    on the host (``workers`` processes) over ``episodes`` (as :func:`sweep`, or a list of dict episodes) at
    ``grid``'s budgets on each of its tracks (a :class:`wpbjax.host.run.HostPolicy` names its own), and its
    logged actions are replayed by the engine, so every column is :func:`sweep`'s (``grid.policies`` is
    the policy itself). ``tiers``: tiered runs (docs/tiers.md): the policy's store is the checkpoint, with a
    journal beside it (docs/policies.md, "Python policies in tiered runs")."""
    from wpbjax.host.run import HostRun, prepare_all, prepare_episodes

    host_episodes, encoded, swept = prepare_episodes(episodes)
    policies = list(policy) if isinstance(policy, (list, tuple)) else [policy]
    names = prepare_all(
        policies,
        host_episodes,
        encoded,
        grid.budgets,
        list(grid.tracks),
        HostRun(workers=workers, quiet=run.quiet),
        tiers=tiers,
    )
    return sweep(swept, grid=dataclasses.replace(grid, policies=names), reads=reads, tiers=tiers, run=run)


def score_steps(fn, episodes=None, cache=None, track: str = "unprivileged", batch: int | None = None):
    """``fn(step) -> float`` for every step of ``episodes`` (as :func:`sweep`'s, or dict episodes), once,
    through the ``cache`` file (resumable): a :class:`wpbjax.host.scores.Scores` whose ``register(name)``
    names the scored policies a :func:`sweep` runs (docs/policies.md, "Python and model-based policies")."""
    from wpbjax.host.scores import score_steps as score

    return score(fn, episodes, cache=cache, track=track, batch=batch)


def read_plan(reads: Reads = Reads()):
    """The :class:`wpbjax.scoring.reads.ReadPlan` of a sweep's :class:`Reads`, checked."""
    from wpbjax.episodes.probes import ProbeConfig
    from wpbjax.scoring.reads import ReadPlan, Retriever

    weights = dict(reads.retriever or {})
    unknown = sorted(set(weights) - {"w_rel", "w_rec", "w_imp", "decay"})
    if unknown:
        raise ValueError(f"retriever: unknown weight(s) {', '.join(unknown)}; known: w_rel, w_rec, w_imp, decay")
    return ReadPlan(
        retriever=Retriever(top_k=tuple(reads.top_k), **weights),
        probes=reads.probes,
        probe_config=ProbeConfig(
            rate=reads.probe_rate, multi_fact_rate=reads.multi_fact_rate, history_rate=reads.history_rate
        ),
    )


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Mean F1 by (track, policy) × budget of a results table (:func:`sweep`'s rows), rows in the table's order."""
    from wpbjax.scoring.rows import leaderboard as mean_f1_board

    return mean_f1_board(table)


@dataclasses.dataclass(frozen=True)
class SweepFile:
    """What :func:`sweep` wrote into ``out``: the results file, its row count, its sidecar (the run
    metadata) and the leaderboard (mean F1 by track, policy and budget)."""

    path: str
    rows: int
    meta: dict
    leaderboard: pd.DataFrame


def _sweep_file(
    out, episodes, generate: Generate, grid: Grid, reads: Reads, tiers: Tiers | None, run: Run, resume: bool
) -> SweepFile | None:
    """:func:`sweep` into ``out``: checked, locked, streamed, committed."""
    from wpbjax.files.output_lock import output_lock
    from wpbjax.files.results_io import check_output

    _check_grid(grid, tiers, run)
    read_config = read_plan(reads)
    source = episode_source(episodes, generate)
    writes = run.cluster is None or run.cluster.writes
    if writes:
        check_output(out, inputs=source.files if source is not None else ())
    checked_reads = dataclasses.replace(reads, top_k=read_config.retriever.top_k)
    options = sweep_options(generate, grid, checked_reads, run, tiers)
    # one live run per output: a second is refused, naming the first's pid
    with output_lock(out) if writes else contextlib.nullcontext():
        return _planned_file(out, source, episodes, writes, options, grid, read_config, tiers, run, resume)


def _planned_file(
    out, source, episodes, writes: bool, options: dict, grid: Grid, read_config, tiers, run: Run, resume: bool
) -> SweepFile | None:
    """:func:`_sweep_file` once its arguments are checked (and, writing, its output locked)."""
    from wpbjax.files.output_size import check_disk_space
    from wpbjax.runtime import devices as devices_lib
    from wpbjax.sweeps import make_plan
    from wpbjax.sweeps.blocks import Blocks, streams

    memory_cap, params, cluster = run.memory_cap, grid.params, run.cluster
    plan_arguments = _plan_arguments(grid, read_config, tiers, run)
    if streams(source, memory_cap):  # generated a block at a time (wpbjax.sweeps.blocks)
        blocks = Blocks(source, plan_arguments, memory_cap)
        plan, n_swept = blocks.plan, blocks.n_total
    else:
        encoded, set_index = _encoded(episodes, source)  # (the episode files' own errors first)
        plan = make_plan(encoded, set_index=set_index, memory_cap=memory_cap, **plan_arguments)
        blocks, n_swept = None, encoded.n_episodes
    arguments = dict(episodes=list(source.files) if source is not None and source.files else None, **options)
    if writes:
        check_disk_space(out, plan.total_runs, len(params or {}))  # one row per run
    if run.log is not None:
        run.log(
            f"{n_swept:,} episodes x {len(plan.budgets)} budgets"
            + (f" x {len(plan.tiers.journal_budgets)} journal budgets" if plan.tiers is not None else "")
            + ", tracks "
            f"{','.join(plan.lineup)}, oracle {plan.oracle}, {plan.total_runs:,} runs on "
            f"{devices_lib.describe(plan.layout.devices)}"
            + (f" in each of {cluster.num_processes} processes" if cluster else "")
            + (f", episodes made {blocks.block_episodes:,} at a time" if blocks else "")
        )
    return _stream_to_file(out, plan, blocks, source, arguments, params, run.command, resume, run.quiet, run.log)


def _stream_to_file(
    out, plan, blocks, source, arguments: dict, params, command, resume: bool, quiet: bool, log
) -> SweepFile | None:
    """Run ``plan`` (or each of ``blocks``' plans) into ``out`` (from the resume point, when
    resuming) and commit table and sidecar."""
    from wpbjax.core import segments
    from wpbjax.files import resume as resume_lib
    from wpbjax.files.atomic import destination
    from wpbjax.files.results_io import ResultsWriter, read_sidecar, sidecar_path
    from wpbjax.reports.metadata import sweep_metadata
    from wpbjax.runtime.progress import Progress
    from wpbjax.scoring.rows import leaderboard_from_sums
    from wpbjax.sweeps import write_chunks

    target = destination(out)  # a symbolic link is written through: its temporary files beside its target
    resume_point, identity = _resume_point(target, arguments, plan, resume, log)
    # (a block's plan, its chunks to run) in order
    work = blocks.plans(resume_point.chunks) if blocks else [(plan, plan.chunks()[resume_point.chunks :])]
    if plan.layout.cluster is not None and not plan.layout.cluster.writes:  # its share of every chunk goes to process 0
        for block_plan, chunks in work:
            write_chunks(block_plan, None, chunks=chunks)
        return None
    on_disk = resume_lib.ResumePoint(
        resume_point.chunks,
        resume_point.rows,
        resume_point.size,
        resume_point.sums,
        resume_point.ends,
        resume_point.checksums,
    )

    def record(sums) -> None:
        """After a chunk's bytes are in the temporary file: the resume manifest says so (with their checksum)."""
        if writer.format == "csv":  # a cut parquet file has no footer: it cannot be continued
            on_disk.add_chunk(writer.temporary, writer.rows, writer.size, sums)
            resume_lib.record(target, identity, on_disk)

    with ResultsWriter(out, append_at=resume_point.size if resume_point.chunks else None) as writer:
        writer.rows = resume_point.rows
        try:
            with Progress(plan.total_runs, enabled=not quiet) as progress:
                if resume_point.rows:
                    progress.advance(resume_point.rows, "on disk")
                if progress.enabled:
                    segments.listen_to_steps(progress.steps)  # long episodes: progress within calls
                try:
                    sums = resume_point.sums
                    for block_plan, chunks in work:
                        sums = write_chunks(block_plan, writer, progress, chunks=chunks, sums=sums, after_write=record)
                        del block_plan, chunks  # the block's episodes go before the next block is made
                finally:
                    segments.stop_listening(progress.steps)
            writer.commit(sweep_metadata(plan, source, arguments, params=params, command=command))
        finally:
            # done, or failed / interrupted: the manifest goes first, then (leaving the writer) the temporary
            # table it describes, so that no manifest outlives its table (a run killed outright leaves both)
            resume_lib.finish(target)
    return SweepFile(os.fspath(out), writer.rows, read_sidecar(sidecar_path(out)), leaderboard_from_sums([sums]))


def _resume_point(out, arguments: dict, plan, resume: bool, log) -> tuple:
    """(resume_point, identity): where this sweep starts (chunks, rows and bytes already on disk when
    ``resume`` finds an interrupted run of the same arguments) and the run's identity. With several
    processes, process 0 decides and tells the others how many chunks to skip."""
    from wpbjax.files import resume as resume_lib

    identity = resume_point = None
    cluster = plan.layout.cluster
    if cluster is None or cluster.writes:
        from wpbjax.episodes.source import episode_file_sha256  # a real: spec's history, else the file

        hashes = [episode_file_sha256(path) for path in (arguments.get("episodes") or [])]
        identity = resume_lib.run_identity(arguments, len(plan.layout.devices), hashes)
        resume_point = resume_lib.start(os.fspath(out), identity, resume)
        if resume_point is not None and log is not None:
            log(f"resuming {out} after {resume_point.chunks} chunks ({resume_point.rows:,} rows) on disk")
    resume_point = resume_point or resume_lib.ResumePoint()
    if cluster is not None and resume:
        resume_point.chunks = cluster.broadcast(resume_point.chunks)
    return resume_point, identity


def simulate(
    policy,
    episodes,
    budgets: Sequence[int],
    track: str = "unprivileged",
    params: dict | None = None,
    oracle: str = "exact",
) -> dict[str, np.ndarray]:
    """Run one policy on every (episode, budget) and score it: metric name -> [N, B] array (the
    results table's metric columns: f1, precision, recall, regret, bytes_used, tp, fp, fn, tn, ...).

    ``policy``: a registered name or a :class:`wpbjax.policies.Policy`; ``episodes``: encoded episodes
    (:func:`wpbjax.episodes.generate` / :func:`wpbjax.episodes.load`); ``budgets``: [B] bytes;
    ``track``: the metadata the policy sees and pays for (and whether it may read utility);
    ``params``: the policy's param overrides; ``oracle``: the regret's oracle mode."""
    from wpbjax.common.budgets import check_budgets
    from wpbjax.common.tracks import cost_track, sees_utility
    from wpbjax.core import rollout as rollout_lib
    from wpbjax.policies import Policy, make
    from wpbjax.runtime import devices as devices_lib
    from wpbjax.scoring.oracle import oracle_batch
    from wpbjax.scoring.rows import score_runs

    policy = make(policy) if isinstance(policy, str) else policy
    if not isinstance(policy, Policy):
        raise ValueError(f"policy: expected a policy name or a wpbjax.policies.Policy; got {type(policy).__name__}")
    if track not in policy.tracks:
        raise ValueError(f"track: policy {policy.name!r} runs on tracks {', '.join(policy.tracks)}; got {track!r}")
    budgets = check_budgets(budgets)
    batch = _checked_batch(episodes, cost_track(track))
    if not sees_utility(track):  # policies on these tracks cannot read the hidden utility
        batch = dataclasses.replace(batch, utility=np.zeros_like(batch.utility))
    batch = devices_lib.place(batch, devices_lib.local_devices()[:1])
    every = np.arange(episodes.n_episodes)
    if policy.plan is None:
        counts = rollout_lib.batch_counts(policy, batch, budgets, params=params)
        host = {field: np.asarray(value) for field, value in vars(counts).items() if value is not None}
    else:  # hindsight policies plan from the exact float64 utilities
        run_inputs = policy.plan(
            episodes.track_costs(cost_track(track)), episodes.utility64, episodes.arrays.length, budgets
        )
        grid = {name: np.asarray([value]) for name, value in (params or {}).items()} or None
        counts = rollout_lib.grid_counts(policy, batch, budgets, params=grid, run_inputs=run_inputs)
        host = {field: np.asarray(value)[0] for field, value in vars(counts).items() if value is not None}
    oracle_utility = oracle_batch(
        episodes.track_costs(cost_track(track)), episodes.utility64, episodes.arrays.length, budgets, oracle
    )
    return score_runs(episodes, every, budgets, host, oracle_utility)


def _checked_batch(episodes, track: str):
    """``episodes``' EpisodeBatch for ``track`` on the host, its fields checked (shape and dtype) with chex."""
    import chex

    if not hasattr(episodes, "host_batch"):
        raise ValueError(
            f"episodes: expected encoded episodes (wj.episodes.generate / load); got {type(episodes).__name__}"
        )
    batch = episodes.host_batch(track)
    n, t = batch.valid.shape
    expected = {
        "valid": ((n, t), bool),
        "step_t": ((n, t), np.int32),
        "write_cost": ((n, t), np.int32),
        "priority": ((n, t), np.float32),
        "utility": ((n, t), np.float32),
        "critical": ((n, t), bool),
        "length": ((n,), np.int32),
        "t_last": ((n,), np.int32),
    }
    for field, (shape, dtype) in expected.items():
        value = getattr(batch, field)
        try:
            chex.assert_shape(value, shape, custom_message=f"episodes.{field}")
            chex.assert_type(value, dtype, custom_message=f"episodes.{field}")
        except AssertionError as err:
            raise ValueError(f"simulate: episodes.{field}: {err}") from None
    return batch


def report(
    results,
    out_dir: str | os.PathLike,
    meta: dict | str | os.PathLike | None = None,
    budget: int = HEADLINE_BUDGET,
    curve_budget: int | None = None,
    episodes=None,
    log: Callable[[str], None] | None = None,
) -> list[str]:
    """Write the report (leaderboard, tables, figures; docs/reports.md) of ``results`` — a results
    file (its sidecar ``RESULTS.meta.json`` is read when present) or a DataFrame — into ``out_dir``.
    ``meta``: run metadata (a dict or a sidecar path); ``episodes``: the run's encoded episodes, for
    the per-step regret curve when there is no metadata to rebuild them from. ``log``: receives a line
    for each file skipped and why (default: a warning). Returns the paths written."""
    from wpbjax.files.results_io import read_sidecar, sidecar_path
    from wpbjax.reports import load_results, write_report
    from wpbjax.reports.checks import check_table

    path = None
    if isinstance(results, (str, os.PathLike)):
        path = os.fspath(results)
        if meta is None and os.path.exists(sidecar_path(path)):
            meta = sidecar_path(path)
        results = load_results(path)
    elif not isinstance(results, pd.DataFrame):
        raise ValueError(f"results: expected a results file or a DataFrame; got {type(results).__name__}")
    meta_path = os.fspath(meta) if isinstance(meta, (str, os.PathLike)) else None
    if meta_path is not None:
        if not os.path.exists(meta_path):
            raise ValueError(f"{meta_path}: no such run-metadata file")
        meta = read_sidecar(meta_path)
    if path is not None:  # complete, and the table its sidecar describes
        check_table(path, results, meta, meta_path)
    for source in (path, meta_path):  # the report replaces its directory as a whole
        if source is not None and _inside(source, out_dir):
            raise ValueError(
                f"{os.fspath(out_dir)}: holds {source}, an input of this report (a report replaces "
                f"its whole directory); choose another directory"
            )
    return write_report(
        results, out_dir, meta=meta, encoded=episodes, budget=budget, curve_budget=curve_budget, log=log
    )


def _inside(path, directory) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (links followed)."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(os.path.join(directory, ""))


def train_gate(track: str = "unprivileged", out: str | os.PathLike | None = None, log=None, **config) -> dict:
    """Train a budget-conditioned write gate (docs/learning.md); ``config``: :class:`wpbjax.learn.config.TrainConfig`
    fields (seed, steps, batch, ...). With ``out``, the checkpoint is written there (sweep it as
    ``policies=["learned_gate:OUT"]``). Returns the training result (weights, history, seconds, ...)."""
    from wpbjax.learn.config import TrainConfig

    known = {field.name for field in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(
            f"train_gate: unknown option {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
        )
    settings = TrainConfig(track=track, **config)
    if out is not None:  # fail early (and clearly) if the path cannot be written; touch nothing yet
        from wpbjax.files.atomic import check_writable

        check_writable(out)
    from wpbjax.learn.gate import save_gate
    from wpbjax.learn.train import train_gate as train

    result = train(settings, log=log)
    if out is not None:
        history = result["history"]
        save_gate(
            out,
            result["weights"],
            settings.track,
            {
                "config": dataclasses.asdict(settings),
                "history": history,
                "train_seconds": result["seconds"],
                "afford_threshold": result["afford_threshold"],
                "calibration": result["calibration"],
            },
        )
    return result


def adversary(
    policies: Sequence[str],
    budgets: Sequence[int],
    track: str = "unprivileged",
    objective: str = "utility_ratio",
    out: str | os.PathLike | None = None,
    modes: Sequence[str] | None = None,
    bounds: dict | None = None,
    population: int = 64,
    generations: int = 20,
    episodes_per_regime: int = 32,
    confirm_episodes: int = 128,
    steps: int = 200,
    api_pool: int = 8,
    max_params: int = 6,
    search: str = "cma_es",
    seed: int = 0,
    progress: bool = False,
    top_k: int | None = None,
) -> dict:
    """Each policy's worst regime per budget, found by searching the JAX generator's knobs (docs/adversarial.md).

    ``modes``: the modes searched (default: every JAX mode; each is one search, the worst kept);
    ``bounds``: knob -> (low, high) replacing the default search bounds (wpbjax.adversarial.knobs.KNOBS);
    ``search``: ``cma_es`` (evosax) or ``random``; ``top_k``: K of the ``read_accuracy`` objective's
    retriever (default 5; only with that objective). Returns the ``adv.json`` document
    (``{"objective", "settings", "results": [...]}``), written atomically to ``out`` when given."""
    import json

    from wpbjax.adversarial.search import Search
    from wpbjax.adversarial.study import Shape, run_study
    from wpbjax.files.atomic import check_writable, write_text
    from wpbjax.runtime.progress import Progress

    config = Search(population, generations, episodes_per_regime, confirm_episodes, search, seed)
    if out is not None:
        check_writable(out)
    bar = (lambda total: Progress(total, enabled=True)) if progress else None
    document = run_study(
        policies, budgets, track, objective, modes, bounds, config, Shape(steps, api_pool, max_params), bar, top_k
    )
    if out is not None:
        write_text(out, json.dumps(document, indent=1) + "\n")
    return document
