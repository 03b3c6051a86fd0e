"""``wpbjax sweep``: episodes × budgets × tracks × policies to a results table (:func:`wpbjax.api.sweep`)."""

from __future__ import annotations

import sys
import time

from wpbjax.cli.argtypes import (
    int_list,
    memory_size,
    name_list,
    param_spec,
    policy_spec,
    positive_float,
    positive_int,
    probability,
)
from wpbjax.cli.generator_flags import (
    add_generator_knobs,
    add_jax_knobs,
    add_knob_set,
    apply_knob_set,
    generator_knobs,
)
from wpbjax.cli.output import note_printer


def add_parser(commands) -> None:
    from wpbjax.common.budgets import PAPER_BUDGETS
    from wpbjax.episodes.source import DEFAULT_MODES

    sweep = commands.add_parser("sweep", help="run policies over episodes x budgets x tracks; write a results table")
    sweep.add_argument(
        "--episodes",
        nargs="+",
        metavar="FILE",
        help="JSONL episode files, or real:stripe[:STEPS[:STRIDE]][:train|:test] for real API drift windows, changelog:NAME[:STEPS[:STRIDE]] for a changelog's entries (default: generate the paper's sets)",
    )
    sweep.add_argument(
        "--modes",
        type=name_list,
        default=list(DEFAULT_MODES),
        help=f"generated modes (default {','.join(DEFAULT_MODES)})",
    )
    sweep.add_argument("--n-episodes", type=positive_int, default=10, help="generated episodes per mode (default 10)")
    sweep.add_argument("--steps", type=positive_int, default=200, help="steps per generated episode (default 200)")
    sweep.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    sweep.add_argument(
        "--budgets",
        type=int_list,
        default=list(PAPER_BUDGETS),
        help="byte budgets (default: the paper's 11, 1024..1048576)",
    )
    sweep.add_argument(
        "--policies",
        type=policy_spec,
        default="published",
        help="'published' (the published line-up per track; with --journal-budgets the tier line-up) or "
        "comma-separated names",
    )
    sweep.add_argument(
        "--tracks",
        type=name_list,
        default=["unprivileged", "privileged"],
        help="default unprivileged,privileged (also: feedback, oracle; docs/policies.md)",
    )
    sweep.add_argument(
        "--oracle",
        choices=("exact", "published_rule"),
        default="exact",
        help="knapsack oracle (default exact; 'published_rule' reproduces the published numbers)",
    )
    sweep.add_argument("--out", default="results.csv", help="results file, .csv or .parquet (default results.csv)")
    sweep.add_argument(
        "--memory-cap", type=memory_size, default="2G", help="device memory one chunk of runs may use (default 2G)"
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress or leaderboard")
    sweep.add_argument(
        "--param",
        type=param_spec,
        action="append",
        metavar="NAME=SPEC",
        help="sweep a policy param: NAME=start:stop:count (inclusive) or NAME=v1,v2,...; repeatable "
        "(Cartesian product); adds a param_NAME column (see docs/policies.md)",
    )
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted sweep of the same arguments from the chunks already in --out's "
        "temporary file (.csv only); without one, run from the start",
    )
    sweep.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        default=None,
        help="several processes (hosts): process 0's address, where jax.distributed coordinates "
        "(default $JAX_COORDINATOR_ADDRESS; srun / mpirun tasks are detected); see docs/performance.md",
    )
    sweep.add_argument(
        "--num-processes", type=positive_int, default=None, help="processes in the sweep (default $JAX_NUM_PROCESSES)"
    )
    sweep.add_argument(
        "--process-id", type=int, default=None, help="this process, 0..N-1; 0 writes --out (default $JAX_PROCESS_ID)"
    )
    reads = sweep.add_argument_group("reads (docs/reads.md)")
    reads.add_argument(
        "--top-k",
        type=int_list,
        default=[5],
        help="records the retriever returns per probe; a list gives one row per K (default 5)",
    )
    reads.add_argument(
        "--probes",
        choices=("labels", "generate", "none"),
        default="labels",
        help="probes: the episodes' 'probes' labels (default), those else generated ones, or none",
    )
    reads.add_argument("--probe-rate", type=float, default=0.1, help="generated probes per step (default 0.1)")
    reads.add_argument(
        "--multi-fact-rate",
        type=float,
        default=0.4,
        help="share of generated probes asking 2-3 facts (default 0.4: WRIT's mix, docs/reads.md; 0: one fact each)",
    )
    reads.add_argument(
        "--history-rate",
        type=float,
        default=0.1,
        help="share of generated current probes asking every version (default 0.1)",
    )
    reads.add_argument(
        "--retriever",
        type=param_spec,
        action="append",
        metavar="NAME=VALUE",
        help="a retriever weight: w_rel, w_rec, w_imp (default 1 each) or decay (default 0.99); repeatable",
    )
    tiers = sweep.add_argument_group("tiers (docs/tiers.md)")
    tiers.add_argument(
        "--journal-budgets",
        type=byte_list,
        default=None,
        help="tiered runs: journal byte budgets, crossed with --budgets (which then size the "
        "checkpoint); --policies are tier policies (default journal_and_checkpoint,"
        "checkpoint_only,journal_only); adds the journal_budget_bytes and tier columns",
    )
    tiers.add_argument(
        "--crash-rate",
        type=probability,
        default=0.0,
        help="tiered runs: per-step crash probability (default 0; docs/tiers.md)",
    )
    tiers.add_argument(
        "--calls-per-step",
        type=positive_float,
        default=float("inf"),
        help="tiered runs: a compute budget, model calls a token bucket gains per step (default: no budget; "
        "a checkpoint add takes 3; docs/tiers.md)",
    )
    tiers.add_argument(
        "--call-burst",
        type=positive_float,
        default=None,
        help="tiered runs: calls the bucket holds (default max(--calls-per-step, 3))",
    )
    add_generator_knobs(sweep)
    add_jax_knobs(sweep)
    add_knob_set(sweep)
    sweep.set_defaults(run=cmd_sweep)


def byte_list(text: str) -> list[int]:
    """Comma-separated byte budgets, 0 allowed (a tier left out)."""
    return int_list(text, 0, 2**31 - 1)


def leaderboard_title(params: dict, tiered: bool) -> str:
    """The line above the leaderboard ``wpbjax sweep`` prints."""
    if tiered:
        return "Mean history coverage by policy, journal budget (bytes), grid point and checkpoint budget (bytes):"
    if params:
        return "Mean F1 by policy, grid point of the swept params and budget (bytes), a row per grid point:"
    return "Mean F1 by policy and budget (bytes):"


def sweep_configs(args, retriever: dict) -> dict:
    """The :func:`wpbjax.api.sweep` configs ``wpbjax sweep``'s flags give: episodes, grid, reads, tiers."""
    from wpbjax.sweeps.config import Generate, Grid, Reads, Tiers

    knobs = {key: value for key, value in generator_knobs(args).items() if key not in ("seed", "steps")}
    generate = Generate(
        modes=args.modes, n_episodes=args.n_episodes, steps=args.steps, seed=args.seed, engine=args.engine, knobs=knobs
    )
    tiers = None
    if args.journal_budgets is not None:
        tiers = Tiers(
            journal_budgets=args.journal_budgets,
            crash_rate=args.crash_rate,
            calls_per_step=args.calls_per_step,
            call_burst=args.call_burst,
        )
    return dict(
        episodes=args.episodes or generate,
        grid=Grid(
            budgets=args.budgets,
            policies=args.policies,
            tracks=args.tracks,
            params=dict(args.param or []),
            oracle=args.oracle,
        ),
        reads=Reads(
            top_k=args.top_k,
            probes=args.probes,
            probe_rate=args.probe_rate,
            multi_fact_rate=args.multi_fact_rate,
            history_rate=args.history_rate,
            retriever=retriever or None,
        ),
        tiers=tiers,
    )


def cmd_sweep(args) -> int:
    from wpbjax.common.argument_errors import ArgumentError, arg

    started = time.perf_counter()
    from wpbjax.runtime.devices import enable_compilation_cache  # (JAX loads once a command runs)

    enable_compilation_cache()
    from wpbjax.api import sweep
    from wpbjax.files.results_io import use_jemalloc
    from wpbjax.sweeps.config import Run

    use_jemalloc()
    from wpbjax.cli.arguments import check_generator_size, drop_repeats
    from wpbjax.runtime.distributed import initialize as initialize_distributed

    apply_knob_set(args)
    drop_repeats(args)  # repeated budgets, policies, files ... would give duplicate rows
    check_generator_size(args)
    params = dict(args.param or [])
    if len(params) < len(args.param or []):
        raise ValueError("--param: each param may be given once")
    retriever = {}
    for name, values in args.retriever or []:
        if len(values) != 1 or name in retriever:
            raise ArgumentError(f"{arg('retriever')} {name}: give each weight once, with one value")
        retriever[name] = float(values[0])
    tier_only = {"crash_rate": args.crash_rate != 0, "calls_per_step": args.calls_per_step != float("inf"),
                 "call_burst": args.call_burst is not None}  # fmt: skip
    unused = [name for name, given in tier_only.items() if given]  # refused, not silently ignored
    if unused and args.journal_budgets is None:
        raise ArgumentError(f"{arg(unused[0])}: only tiered runs take it (give {arg('journal_budgets')})")
    cluster = initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    args.quiet = args.quiet or not (cluster is None or cluster.writes)  # only process 0 writes (and reports)
    run = Run(
        memory_cap=args.memory_cap,
        cluster=cluster,
        quiet=args.quiet,
        log=None if args.quiet else note_printer("wpbjax sweep"),
    )
    configs = sweep_configs(args, retriever)
    if any(name.startswith("py:") for name in args.policies.split(",")):  # Python policies run on the host first
        from wpbjax.host.run import prepare_named

        prepare_named(args.policies, configs["episodes"], configs["grid"], args.quiet, configs["tiers"])
    done = sweep(**configs, run=run, out=args.out, resume=args.resume)
    if done is None:  # a process other than 0: its share went to process 0
        return 0
    if not args.quiet:
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(leaderboard_title(params, tiered=args.journal_budgets is not None))
            print(done.leaderboard.to_string(float_format=lambda v: f"{v:.3f}"))
        print(f"wrote {done.rows:,} rows to {args.out} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0
