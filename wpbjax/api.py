"""The Python API: what ``import wpbjax as wj`` offers, and what the ``wpbjax`` CLI maps its flags onto.

    import wpbjax as wj
    episodes = wj.episodes.generate(modes=["default"], n_episodes=10)       # or wj.episodes.load("ep.jsonl")
    counts = wj.simulate("priority_greedy", episodes, [1024, 10240], track="privileged")  # {metric: [N, B]}
    table = wj.sweep(budgets=[1024, 10240], n_episodes=2)                   # the CLI sweep's rows
    wj.sweep_to_file("results.csv", budgets=[1024, 10240], n_episodes=2)    # + results.csv.meta.json
    wj.report("results.csv", "report/")

:func:`sweep` takes the CLI sweep's options as keyword arguments, with the same defaults.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Sequence

import numpy as np
import pandas as pd

from wpbjax.budgets import PAPER_BUDGETS
from wpbjax.episodes.source import DEFAULT_MODES, EpisodeSource
from wpbjax.sweep.plan import DEFAULT_MEMORY_CAP, DEFAULT_TRACKS, PUBLISHED_LINEUP

HEADLINE_BUDGET = 10240  # the report's leaderboard budget (wpbjax.report.tables.HEADLINE_BUDGET)


def episode_source(episodes=None, *, modes: Sequence[str] | str = DEFAULT_MODES, n_episodes: int = 10,
                   steps: int = 200, seed: int = 0, engine: str = "python", **knobs) -> EpisodeSource | None:
    """The :class:`EpisodeSource` a sweep's episode arguments describe: ``episodes`` as JSONL path(s)
    or an EpisodeSource, else generated (``modes`` × ``n_episodes`` by ``engine``). None when
    ``episodes`` is already encoded (in memory: nothing to record or rebuild)."""
    if isinstance(episodes, EpisodeSource):
        return episodes
    if isinstance(episodes, (str, os.PathLike)) or (isinstance(episodes, (list, tuple)) and episodes):
        return EpisodeSource.from_files(episodes)
    if episodes is None or (isinstance(episodes, (list, tuple)) and not episodes):
        return EpisodeSource.generated(modes, n_episodes, engine, steps=steps, seed=seed, **knobs)
    return None


def _encoded(episodes, source: EpisodeSource | None) -> tuple:
    """(EncodedEpisodes, [N] set index) of a sweep's episodes."""
    if source is not None:
        return source.load_sets()
    if not hasattr(episodes, "track_costs"):
        raise ValueError("episodes: expected JSONL path(s), an EpisodeSource or encoded episodes "
                         f"(wj.episodes.generate / load); got {type(episodes).__name__}")
    return episodes, None


def _check_sweep_args(budgets, policies, tracks, oracle, memory_cap, params) -> None:
    from wpbjax.sweep.plan import check_sweep

    check_sweep(budgets, policies, tracks, oracle, memory_cap, params)


def sweep(episodes=None, *, modes: Sequence[str] | str = DEFAULT_MODES, n_episodes: int = 10, steps: int = 200,
          seed: int = 0, engine: str = "python", budgets: Sequence[int] = PAPER_BUDGETS,
          policies: str | Sequence[str] = PUBLISHED_LINEUP, tracks: Sequence[str] = DEFAULT_TRACKS,
          oracle: str = "exact", memory_cap: int = DEFAULT_MEMORY_CAP, params: dict | None = None,
          quiet: bool = True, devices=None, **knobs) -> pd.DataFrame:
    """Every (episode, budget, track, policy) run as one results row, as ``wpbjax sweep`` writes them.

    ``episodes``: JSONL path(s), an :class:`EpisodeSource`, encoded episodes, or None to generate
    ``modes`` × ``n_episodes`` episodes of ``steps`` steps from ``seed`` with ``engine`` (``python``:
    the published generator; ``jax``) and generator ``knobs`` (``drift_prob=...``, docs/generators.md).
    ``policies``: ``"published"`` (the published line-up per track) or names; ``params``: param name
    -> values to sweep (their Cartesian product per policy; a ``param_NAME`` column each).
    ``oracle``: ``exact`` or ``published_rule``. ``memory_cap``: bytes one chunk of runs may use.
    """
    from wpbjax.sweep import make_plan, run_chunk
    from wpbjax.progress import Progress

    _check_sweep_args(budgets, policies, tracks, oracle, memory_cap, params)
    source = episode_source(episodes, modes=modes, n_episodes=n_episodes, steps=steps, seed=seed, engine=engine, **knobs)
    encoded, set_index = _encoded(episodes, source)
    plan = make_plan(encoded, budgets, policies, tracks, oracle, set_index, memory_cap, devices, params)
    with Progress(plan.total_runs, enabled=not quiet) as progress:
        return pd.concat([run_chunk(plan, chunk, progress) for chunk in plan.chunks()], ignore_index=True)


@dataclasses.dataclass(frozen=True)
class SweepFile:
    """What :func:`sweep_to_file` wrote: the results file, its row count, its sidecar (the run
    metadata) and the leaderboard (mean F1 by track, policy and budget)."""

    path: str
    rows: int
    meta: dict
    leaderboard: pd.DataFrame


def sweep_to_file(out: str | os.PathLike, episodes=None, *, modes: Sequence[str] | str = DEFAULT_MODES,
                  n_episodes: int = 10, steps: int = 200, seed: int = 0, engine: str = "python",
                  budgets: Sequence[int] = PAPER_BUDGETS, policies: str | Sequence[str] = PUBLISHED_LINEUP,
                  tracks: Sequence[str] = DEFAULT_TRACKS, oracle: str = "exact", memory_cap: int = DEFAULT_MEMORY_CAP,
                  params: dict | None = None, quiet: bool = True, devices=None, command: Sequence[str] | None = None,
                  resume: bool = False, cluster=None, **knobs) -> SweepFile | None:
    """:func:`sweep` streamed to ``out`` (.csv or .parquet) chunk by chunk, with its sidecar
    ``out.meta.json``, exactly as ``wpbjax sweep --out`` writes them: every argument and input is
    checked first (and a table that would not fit the free disk space refused), and table and
    sidecar are renamed into place only when complete (an existing ``out`` is left byte-identical
    by a sweep that fails). ``command``: recorded in the sidecar. ``resume``: finish an interrupted
    sweep of the same arguments from the chunks already in ``out``'s temporary file
    (:mod:`wpbjax.resume`). ``cluster``: this process's place among several
    (:func:`wpbjax.distributed.initialize`); process 0 writes the file, the others run their share of
    every chunk and return None."""
    from wpbjax import devices as devices_lib
    from wpbjax.output_size import check_disk_space
    from wpbjax.results_io import check_output
    from wpbjax.sweep import make_plan
    from wpbjax.sweep.blocks import Blocks, streams

    _check_sweep_args(budgets, policies, tracks, oracle, memory_cap, params)
    source = episode_source(episodes, modes=modes, n_episodes=n_episodes, steps=steps, seed=seed, engine=engine, **knobs)
    writes = cluster is None or cluster.writes
    if writes:
        check_output(out, inputs=source.files if source is not None else ())
    plan_arguments = dict(budgets=budgets, policies=policies, tracks=tracks, oracle=oracle, devices=devices,
                          params=params, cluster=cluster)
    if streams(source, memory_cap):  # generated a block at a time (wpbjax.sweep.blocks)
        blocks = Blocks(source, plan_arguments, memory_cap)
        plan, n_swept = blocks.plan, blocks.n_total
    else:
        encoded, set_index = _encoded(episodes, source)  # (the episode files' own errors first)
        plan = make_plan(encoded, set_index=set_index, memory_cap=memory_cap, **plan_arguments)
        blocks, n_swept = None, encoded.n_episodes
    arguments = dict(episodes=list(source.files) if source is not None and source.files else None, modes=modes,
                     n_episodes=n_episodes, steps=steps, seed=seed, engine=engine, budgets=budgets, policies=policies,
                     tracks=tracks, oracle=oracle, memory_cap=memory_cap, params=params, **knobs)
    if writes:
        check_disk_space(out, plan.total_runs, len(params or {}))  # one row per run
    if not quiet:
        print(f"wpbjax sweep: {n_swept:,} episodes x {len(plan.budgets)} budgets, tracks "
              f"{','.join(plan.lineup)}, oracle {plan.oracle}, {plan.total_runs:,} runs on "
              f"{devices_lib.describe(plan.devices)}" + (f" in each of {cluster.num_processes} processes" if cluster else "")
              + (f", episodes made {blocks.block_episodes:,} at a time" if blocks else ""), file=sys.stderr)
    return _stream_to_file(out, plan, blocks, source, arguments, params, command, resume, quiet)


def _stream_to_file(out, plan, blocks, source, arguments: dict, params, command, resume: bool,
                    quiet: bool) -> SweepFile | None:
    """Run ``plan`` (or each of ``blocks``' plans) into ``out`` (from the resume point, when
    resuming) and commit table and sidecar."""
    from wpbjax import resume as resume_lib, segments
    from wpbjax.progress import Progress
    from wpbjax.report.metadata import sweep_metadata
    from wpbjax.results_io import ResultsWriter, read_sidecar, sidecar_path
    from wpbjax.scoring import leaderboard_from_sums
    from wpbjax.sweep import write_chunks

    checkpoint, identity = _resume_point(out, arguments, plan, resume, quiet)
    # (a block's plan, its chunks to run) in order
    work = blocks.plans(checkpoint.chunks) if blocks else [(plan, plan.chunks()[checkpoint.chunks:])]
    if plan.cluster is not None and not plan.cluster.writes:  # its share of every chunk goes to process 0
        for block_plan, chunks in work:
            write_chunks(block_plan, None, chunks=chunks)
        return None

    def record(sums) -> None:
        """After a chunk's bytes are in the temporary file: the resume manifest says so."""
        if writer.format == "csv":  # a cut parquet file has no footer: it cannot be continued
            resume_lib.record(out, identity, resume_lib.Checkpoint(checkpoint.chunks + writer.chunks, writer.rows,
                                                                   writer.size, sums))

    with ResultsWriter(out, append_at=checkpoint.size if checkpoint.chunks else None) as writer:
        writer.rows = checkpoint.rows
        with Progress(plan.total_runs, enabled=not quiet) as progress:
            if checkpoint.rows:
                progress.advance(checkpoint.rows, "on disk")
            if progress.enabled:
                segments.listen_to_steps(progress.steps)  # long episodes: progress within calls
            try:
                sums = checkpoint.sums
                for block_plan, chunks in work:
                    sums = write_chunks(block_plan, writer, progress, chunks=chunks, sums=sums, after_write=record)
                    del block_plan, chunks  # the block's episodes go before the next block is made
            finally:
                segments.stop_listening(progress.steps)
        writer.commit(sweep_metadata(plan, source, arguments, params=params, command=command))
        resume_lib.finish(out)
    return SweepFile(os.fspath(out), writer.rows, read_sidecar(sidecar_path(out)), leaderboard_from_sums([sums]))


def _resume_point(out, arguments: dict, plan, resume: bool, quiet: bool) -> tuple:
    """(checkpoint, identity): where this sweep starts (chunks, rows and bytes already on disk when
    ``resume`` finds an interrupted run of the same arguments) and the run's identity. With several
    processes, process 0 decides and tells the others how many chunks to skip."""
    from wpbjax import resume as resume_lib

    identity = checkpoint = None
    cluster = plan.cluster
    if cluster is None or cluster.writes:
        identity = resume_lib.run_identity(arguments, len(plan.devices))
        checkpoint = resume_lib.start(os.fspath(out), identity, resume)
        if checkpoint is not None and not quiet:
            print(f"wpbjax sweep: resuming {out} after {checkpoint.chunks} chunks ({checkpoint.rows:,} rows) "
                  f"on disk", file=sys.stderr)
    checkpoint = checkpoint or resume_lib.Checkpoint()
    if cluster is not None and resume:
        checkpoint.chunks = cluster.broadcast(checkpoint.chunks)
    return checkpoint, identity


def simulate(policy, episodes, budgets: Sequence[int], track: str = "unprivileged", params: dict | None = None,
             oracle: str = "exact") -> dict[str, np.ndarray]:
    """Run one policy on every (episode, budget) and score it: metric name -> [N, B] array (the
    results table's metric columns: f1, precision, recall, regret, bytes_used, tp, fp, fn, tn, ...).

    ``policy``: a registered name or a :class:`wpbjax.policies.Policy`; ``episodes``: encoded episodes
    (:func:`wpbjax.episodes.generate` / :func:`wpbjax.episodes.load`); ``budgets``: [B] bytes;
    ``track``: the metadata the policy sees and pays for (and whether it may read utility);
    ``params``: the policy's param overrides; ``oracle``: the regret's oracle mode."""
    from wpbjax import devices as devices_lib, simulate as simulate_lib
    from wpbjax.budgets import check_budgets
    from wpbjax.oracle import oracle_batch
    from wpbjax.policies import Policy, make
    from wpbjax.scoring import score_runs
    from wpbjax.tracks import cost_track, sees_utility

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
        counts = simulate_lib.simulate(policy, batch, budgets, params=params)
        host = {field: np.asarray(value) for field, value in vars(counts).items()}
    else:  # hindsight policies plan from the exact float64 utilities
        run_inputs = policy.plan(episodes.track_costs(cost_track(track)), episodes.utility64,
                                 episodes.arrays.length, budgets)
        grid = {name: np.asarray([value]) for name, value in (params or {}).items()} or None
        counts = simulate_lib.simulate_grid(policy, batch, budgets, params=grid, run_inputs=run_inputs)
        host = {field: np.asarray(value)[0] for field, value in vars(counts).items()}
    oracle_utility = oracle_batch(episodes.track_costs(cost_track(track)), episodes.utility64,
                                  episodes.arrays.length, budgets, oracle)
    return score_runs(episodes, every, budgets, host, oracle_utility)


def _checked_batch(episodes, track: str):
    """``episodes``' EpisodeBatch for ``track`` on the host, its fields checked (shape and dtype) with chex."""
    import chex

    if not hasattr(episodes, "host_batch"):
        raise ValueError("episodes: expected encoded episodes (wj.episodes.generate / load); "
                         f"got {type(episodes).__name__}")
    batch = episodes.host_batch(track)
    n, t = batch.valid.shape
    expected = {"valid": ((n, t), bool), "step_t": ((n, t), np.int32), "write_cost": ((n, t), np.int32),
                "priority": ((n, t), np.float32), "utility": ((n, t), np.float32), "critical": ((n, t), bool),
                "length": ((n,), np.int32), "t_last": ((n,), np.int32)}
    for field, (shape, dtype) in expected.items():
        value = getattr(batch, field)
        try:
            chex.assert_shape(value, shape, custom_message=f"episodes.{field}")
            chex.assert_type(value, dtype, custom_message=f"episodes.{field}")
        except AssertionError as err:
            raise ValueError(f"simulate: episodes.{field}: {err}") from None
    return batch


def report(results, out_dir: str | os.PathLike, meta: dict | str | os.PathLike | None = None,
           budget: int = HEADLINE_BUDGET, curve_budget: int | None = None, episodes=None) -> list[str]:
    """Write the report (leaderboard, tables, figures; docs/reports.md) of ``results`` — a results
    file (its sidecar ``RESULTS.meta.json`` is read when present) or a DataFrame — into ``out_dir``.
    ``meta``: run metadata (a dict or a sidecar path); ``episodes``: the run's encoded episodes, for
    the per-step regret curve when there is no metadata to rebuild them from. Returns the paths written."""
    from wpbjax.report import load_results, write_report
    from wpbjax.report.checks import check_table
    from wpbjax.results_io import read_sidecar, sidecar_path

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
    return write_report(results, out_dir, meta=meta, encoded=episodes, budget=budget, curve_budget=curve_budget)


def train_gate(track: str = "unprivileged", out: str | os.PathLike | None = None, log=None, **config) -> dict:
    """Train a budget-conditioned write gate (docs/learning.md); ``config``: :class:`wpbjax.learn.config.TrainConfig`
    fields (seed, steps, batch, ...). With ``out``, the checkpoint is written there (sweep it as
    ``policies=["learned_gate:OUT"]``). Returns the training result (weights, history, seconds, ...)."""
    from wpbjax.learn.config import TrainConfig

    known = {field.name for field in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(f"train_gate: unknown option {', '.join(unknown)}; expected some of {', '.join(sorted(known))}")
    settings = TrainConfig(track=track, **config)
    if out is not None:
        open(out, "ab").close()  # fail early (and clearly) if the path cannot be written
    from wpbjax.learn.gate import save_gate
    from wpbjax.learn.train import train_gate as train

    result = train(settings, log=log)
    if out is not None:
        history = result["history"]
        save_gate(out, result["weights"], settings.track,
                  {"config": dataclasses.asdict(settings), "history": history, "train_seconds": result["seconds"],
                   "afford_threshold": result["afford_threshold"], "calibration": result["calibration"]})
    return result
