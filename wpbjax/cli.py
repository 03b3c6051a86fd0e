"""``wpbjax`` command line: each subcommand maps its flags onto one call of the Python API
(:mod:`wpbjax.api`, :mod:`wpbjax.episodes`) and prints what it did.

    wpbjax generate --mode default --seed 0 --steps 200 --episodes 10 --out episodes.jsonl
    wpbjax sweep [--episodes FILE ...] [--budgets 1024,...] [--oracle exact|published_rule] [--out results.csv]
    wpbjax report results.csv --out report/
    wpbjax train --track unprivileged --out gate.npz
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import time

import numpy as np

from wpbjax.argtypes import int_list, name_list
from wpbjax.failures import OneLineParser, exit_promptly_on_interrupt, report_interrupt, run_command

# Modules that add subcommands: each has ``add_parser(commands)`` (commands: the argparse
# subparsers), which adds its parser and ``set_defaults(run=handler)``; errors as below.
SUBCOMMAND_MODULES: tuple[str, ...] = ("wpbjax.packages.cli",)


def _policy_spec(text: str) -> str:
    """``published`` or comma-separated policy names (checked against the registry later)."""
    if not any(part.strip() for part in text.split(",")):
        raise argparse.ArgumentTypeError("expected 'published' or comma-separated policy names, got an empty list")
    return text.strip()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < float("inf"):  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {value}")
    return value


def _add_generator_knobs(parser: argparse.ArgumentParser) -> None:
    from wpbjax.episodes.published_gen import DriftConfig

    d = DriftConfig()
    parser.add_argument("--api-pool", type=_positive_int, default=d.api_pool, help=f"endpoints (default {d.api_pool})")
    parser.add_argument("--drift-prob", type=_probability, default=d.drift_prob, help=f"per-step drift probability (default {d.drift_prob})")
    parser.add_argument("--max-params", type=int, default=d.max_params, help=f"max initial params per endpoint, >= 2 (default {d.max_params})")
    parser.add_argument("--burst-interval", type=int, default=d.burst_interval, help=f"steps between bursts (default {d.burst_interval})")
    parser.add_argument("--burst-len", type=int, default=d.burst_len, help=f"steps per burst (default {d.burst_len})")
    parser.add_argument("--burst-drift-prob", type=_probability, default=d.burst_drift_prob, help=f"drift probability inside a burst (default {d.burst_drift_prob})")
    parser.add_argument("--redundancy-prob", type=_probability, default=d.redundancy_prob, help=f"probability of repeating the previous endpoint (default {d.redundancy_prob})")


def _add_jax_knobs(parser: argparse.ArgumentParser) -> None:
    """``--engine`` and the knobs of the JAX generator's new regimes (docs/generators.md)."""
    from wpbjax.episodes.jax_gen import JaxGenConfig

    d = JaxGenConfig()
    parser.add_argument("--engine", choices=("python", "jax", "reference"), default="python",
                        help="episode generator: 'python', the published one (byte-identical; old name 'reference'), "
                             "or 'jax', on device with the new regimes")
    parser.add_argument("--horizon", type=_positive_int, default=d.horizon, help=f"delayed_relevance: steps within which a drift must be used (default {d.horizon})")
    parser.add_argument("--rollback-prob", type=_probability, default=d.rollback_prob, help=f"rollback: probability that a change reverts the last drift (default {d.rollback_prob})")
    parser.add_argument("--decoy-prob", type=_probability, default=d.decoy_prob, help=f"decoy: probability of a cosmetic change on a non-drift step (default {d.decoy_prob})")
    parser.add_argument("--docs-prob", type=_probability, default=d.docs_prob, help=f"docs_migration: probability of a documentation page (default {d.docs_prob})")
    parser.add_argument("--guide-prob", type=_probability, default=d.guide_prob, help=f"docs_migration: probability of a migration guide (default {d.guide_prob})")


def _generator_knobs(args) -> dict:
    """The generator settings among the parsed arguments (``seed``, ``steps``, ``drift_prob``, ...)."""
    from wpbjax.episodes.jax_gen import JaxGenConfig

    return {field.name: getattr(args, field.name) for field in dataclasses.fields(JaxGenConfig)
            if field.name != "mode" and hasattr(args, field.name)}


def cmd_import_writ(args) -> int:
    from wpbjax.episodes.jsonl import save_jsonl
    from wpbjax.episodes.writ import import_writ

    episodes = import_writ(args.paths)
    save_jsonl(episodes, args.out)
    if not args.quiet:
        print(f"wrote {len(episodes)} WRIT episodes to {args.out}", file=sys.stderr)
    return 0


def cmd_generate(args) -> int:
    from wpbjax.episodes import write_generated

    from wpbjax.arguments import check_generator_size

    check_generator_size(args)
    count = write_generated(args.out, args.mode, args.episodes, engine=args.engine, **_generator_knobs(args))
    if not args.quiet:
        print(f"wrote {count} episodes ({args.mode}, seed {args.seed}, {args.steps} steps) to {args.out}",
              file=sys.stderr)
    return 0


def _param_spec(text: str) -> tuple[str, list[float]]:
    """``NAME=start:stop:count`` or ``NAME=v1,v2,...`` (``wpbjax sweep --param``)."""
    from wpbjax.sweep import parse_param_values

    name, sep, values = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=start:stop:count or NAME=v1,v2,..., got {text!r}")
    try:
        return name.strip(), parse_param_values(values)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{name.strip()}: {err}") from None


def _memory(text: str) -> int:
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    number, unit = text.rstrip("KMGkmgBb"), text[len(text.rstrip("KMGkmgBb")):].upper().rstrip("B")
    try:
        value = int(float(number) * units[unit])
    except (ValueError, KeyError, OverflowError):  # OverflowError: "inf"
        raise argparse.ArgumentTypeError(f"expected a size like 2G, 512M or 1000000, got {text!r}") from None
    if value < 64 << 10:
        raise argparse.ArgumentTypeError(f"expected at least 64K, got {text!r}")
    return value


def enable_compilation_cache() -> None:
    from wpbjax.devices import enable_compilation_cache

    enable_compilation_cache()


def cmd_sweep(args) -> int:
    started = time.perf_counter()
    enable_compilation_cache()
    from wpbjax.api import sweep_to_file
    from wpbjax.arguments import check_generator_size, drop_repeats
    from wpbjax.distributed import initialize as initialize_distributed

    drop_repeats(args)  # repeated budgets, policies, files ... would give duplicate rows
    check_generator_size(args)
    params = dict(args.param or [])
    if len(params) < len(args.param or []):
        raise ValueError("--param: each param may be given once")
    cluster = initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    args.quiet = args.quiet or not (cluster is None or cluster.writes)  # only process 0 writes (and reports)
    knobs = {key: value for key, value in _generator_knobs(args).items() if key not in ("seed", "steps")}
    done = sweep_to_file(args.out, args.episodes, modes=args.modes, n_episodes=args.n_episodes, steps=args.steps,
                         seed=args.seed, engine=args.engine, budgets=args.budgets, policies=args.policies,
                         tracks=args.tracks, oracle=args.oracle, memory_cap=args.memory_cap, params=params,
                         quiet=args.quiet, resume=args.resume, cluster=cluster, **knobs)
    if done is None:  # a process other than 0: its share went to process 0
        return 0
    if not args.quiet:
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print("Mean F1 by policy and budget (bytes)" + (", over all param grid points:" if params else ":"))
            print(done.leaderboard.to_string(float_format=lambda v: f"{v:.3f}"))
        print(f"wrote {done.rows:,} rows to {args.out} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


def cmd_bench(args) -> int:
    import json

    enable_compilation_cache() if args.cache else None
    from wpbjax.arguments import ENCODED_BYTES_PER_STEP, refuse_past_memory
    from wpbjax.bench import run_bench

    refuse_past_memory(f"--episodes {args.episodes:,} x --steps {args.steps:,}", args.episodes * args.steps * ENCODED_BYTES_PER_STEP)

    report = run_bench(n_episodes=args.episodes, n_steps=args.steps, policies=args.policies, budgets=args.budgets,
                       repeats=args.repeats)
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{report['episodes']:,} episodes x {report['steps']} steps x {len(report['budgets'])} budgets = "
          f"{report['runs']:,} runs on {report['devices']} {report['platform']} device(s) ({report['device_kind']})")
    print(f"{'policy':<20} {'compile s':>10} {'run s':>9} {'episode-steps/s':>17}")
    for row in report["policies"]:
        print(f"{row['policy']:<20} {row['compile_s']:>10.2f} {row['run_s']:>9.3f} {row['episode_steps_per_s']:>17,.0f}")
    rates = sorted(row["episode_steps_per_s"] for row in report["policies"])
    print(f"median {np.median(rates):,.0f} episode-steps/s; slowest {rates[0]:,.0f}")
    return 0


def cmd_report(args) -> int:
    enable_compilation_cache()  # the regret curve compiles a traced rollout per policy
    from wpbjax.api import report

    if args.meta is not None and not os.path.exists(args.meta):
        raise ValueError(f"--meta {args.meta}: no such file")
    written = report(args.results, args.out, meta=args.meta, budget=args.budget, curve_budget=args.curve_budget)
    if not args.quiet:
        print(f"wrote {len(written)} files to {args.out}", file=sys.stderr)
    return 0


def cmd_train(args) -> int:
    from wpbjax.api import train_gate
    from wpbjax.learn.train import stderr_log

    result = train_gate(args.track, out=args.out, log=None if args.quiet else stderr_log, seed=args.seed,
                        steps=args.steps, batch=args.batch, pool_per_mode=args.pool_per_mode, hidden=args.hidden,
                        learning_rate=args.learning_rate, log_every=args.log_every,
                        calibration_per_mode=args.calibration_per_mode, fidelity_weight=args.fidelity_weight,
                        coverage_weight=args.coverage_weight)
    history = result["history"]
    if not args.quiet:
        print(f"wrote {args.track} gate to {args.out} in {result['seconds']:.0f} s (final soft loss "
              f"{history[-1]['soft_loss']:.4f}, exact loss {history[-1]['exact_loss']:.4f}); "
              f"sweep it with --policies learned_gate:{args.out}", file=sys.stderr)
    return 0


def _add_train_parser(commands) -> None:
    from wpbjax.learn.config import TrainConfig

    d = TrainConfig()
    train = commands.add_parser("train", help="train a budget-conditioned write gate (wpbjax.learn); see docs/learning.md")
    train.add_argument("--track", choices=("unprivileged", "privileged"), default=d.track, help=f"default {d.track}")
    train.add_argument("--seed", type=int, default=d.seed, help=f"init, batches, budgets and training episodes (default {d.seed})")
    train.add_argument("--out", default="gate.npz", help="checkpoint file (default gate.npz)")
    train.add_argument("--steps", type=_positive_int, default=d.steps, help=f"optimisation steps (default {d.steps})")
    train.add_argument("--batch", type=_positive_int, default=d.batch, help=f"episodes per step (default {d.batch})")
    train.add_argument("--pool-per-mode", type=_positive_int, default=d.pool_per_mode, help=f"training episodes per mode (default {d.pool_per_mode})")
    train.add_argument("--calibration-per-mode", type=_positive_int, default=d.calibration_per_mode, help=f"held-back episodes per mode that calibrate the afford threshold (default {d.calibration_per_mode})")
    train.add_argument("--hidden", type=_positive_int, default=d.hidden, help=f"MLP width (default {d.hidden})")
    train.add_argument("--learning-rate", type=_positive_float, default=d.learning_rate, help=f"peak adam rate (default {d.learning_rate})")
    train.add_argument("--fidelity-weight", type=float, default=d.fidelity_weight,
                       help=f"weight of 1 - soft update fidelity in the loss (default {d.fidelity_weight}; docs/integrity.md)")
    train.add_argument("--coverage-weight", type=float, default=d.coverage_weight,
                       help=f"weight of 1 - soft history coverage in the loss (default {d.coverage_weight})")
    train.add_argument("--log-every", type=_positive_int, default=d.log_every, help=f"progress line every k steps (default {d.log_every})")
    train.add_argument("--quiet", action="store_true", help="no progress lines")
    train.set_defaults(run=cmd_train)


def build_parser() -> argparse.ArgumentParser:
    from wpbjax.episodes.jax_gen import NEW_MODES
    from wpbjax.episodes.published_gen import MODES
    from wpbjax.budgets import PAPER_BUDGETS
    from wpbjax.episodes.source import DEFAULT_MODES

    parser = OneLineParser(prog="wpbjax", description="Memory write policies under byte budgets, in JAX.")
    commands = parser.add_subparsers(dest="command", required=True)

    generate = commands.add_parser("generate", help="write episodes with the published generator (byte-identical)")
    generate.add_argument("--mode", choices=MODES + NEW_MODES, default="default")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--steps", type=_positive_int, default=200)
    generate.add_argument("--episodes", type=_positive_int, default=10, help="episodes in the set (default 10)")
    generate.add_argument("--out", required=True, help="output JSONL file")
    generate.add_argument("--quiet", action="store_true")
    _add_generator_knobs(generate)
    _add_jax_knobs(generate)
    generate.set_defaults(run=cmd_generate)

    writ = commands.add_parser("import-writ", help="WRIT scenario files -> episodes (one per scenario; docs/integrity.md)")
    writ.add_argument("paths", nargs="+", metavar="PATH", help="WRIT scenario .json files or directories of them")
    writ.add_argument("--out", required=True, help="output JSONL file")
    writ.add_argument("--quiet", action="store_true")
    writ.set_defaults(run=cmd_import_writ)

    sweep = commands.add_parser("sweep", help="run policies over episodes x budgets x tracks; write a results table")
    sweep.add_argument("--episodes", nargs="+", metavar="FILE", help="JSONL episode files (default: generate the paper's sets)")
    sweep.add_argument("--modes", type=name_list, default=list(DEFAULT_MODES), help=f"generated modes (default {','.join(DEFAULT_MODES)})")
    sweep.add_argument("--n-episodes", type=_positive_int, default=10, help="generated episodes per mode (default 10)")
    sweep.add_argument("--steps", type=_positive_int, default=200, help="steps per generated episode (default 200)")
    sweep.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    sweep.add_argument("--budgets", type=int_list, default=list(PAPER_BUDGETS), help="byte budgets (default: the paper's 11, 1024..1048576)")
    sweep.add_argument("--policies", type=_policy_spec, default="published",
                       help="'published' (the published line-up per track; old name 'reference') or comma-separated names")
    sweep.add_argument("--tracks", type=name_list, default=["unprivileged", "privileged"], help="default unprivileged,privileged (also: feedback, oracle; docs/policies.md)")
    sweep.add_argument("--oracle", choices=("exact", "published_rule", "reference"), default="exact",
                       help="knapsack oracle (default exact; 'published_rule', old name 'reference', reproduces the published numbers)")
    sweep.add_argument("--out", default="results.csv", help="results file, .csv or .parquet (default results.csv)")
    sweep.add_argument("--memory-cap", type=_memory, default="2G", help="device memory one chunk of runs may use (default 2G)")
    sweep.add_argument("--quiet", action="store_true", help="no progress or leaderboard")
    sweep.add_argument("--param", type=_param_spec, action="append", metavar="NAME=SPEC",
                       help="sweep a policy param: NAME=start:stop:count (inclusive) or NAME=v1,v2,...; repeatable "
                            "(Cartesian product); adds a param_NAME column (see docs/policies.md)")
    sweep.add_argument("--resume", action="store_true",
                       help="finish an interrupted sweep of the same arguments from the chunks already in --out's "
                            "temporary file (.csv only); without one, run from the start")
    sweep.add_argument("--coordinator", metavar="HOST:PORT", default=None,
                       help="several processes (hosts): process 0's address, where jax.distributed coordinates "
                            "(default $JAX_COORDINATOR_ADDRESS; srun / mpirun tasks are detected); see README")
    sweep.add_argument("--num-processes", type=_positive_int, default=None, help="processes in the sweep (default $JAX_NUM_PROCESSES)")
    sweep.add_argument("--process-id", type=int, default=None, help="this process, 0..N-1; 0 writes --out (default $JAX_PROCESS_ID)")
    _add_generator_knobs(sweep)
    _add_jax_knobs(sweep)
    sweep.set_defaults(run=cmd_sweep)
    bench = commands.add_parser("bench", help="compile time and steady-state throughput per policy")
    bench.add_argument("--episodes", type=_positive_int, default=10000, help="episodes in the batch (default 10000)")
    bench.add_argument("--steps", type=_positive_int, default=200, help="steps per episode (default 200)")
    bench.add_argument("--policies", type=name_list, default=None, help="comma-separated names (default: the reference line-up)")
    bench.add_argument("--budgets", type=int_list, default=[1024, 10240, 102400], help="budgets per episode (default 1024,10240,102400)")
    bench.add_argument("--repeats", type=_positive_int, default=3, help="timed repeats after warm-up; best counts (default 3)")
    bench.add_argument("--cache", action="store_true", help="use the persistent compilation cache (compile_s then measures loading)")
    bench.add_argument("--json", action="store_true", help='print {"devices", "platform", "policies": [{"policy", "compile_s", "run_s", "episode_steps_per_s"}]}')
    bench.set_defaults(run=cmd_bench)

    report = commands.add_parser("report", help="tables, leaderboard and figures from a results file")
    report.add_argument("results", help="results file from wpbjax sweep (.csv or .parquet)")
    report.add_argument("--out", required=True, help="directory for the report's files (created if needed)")
    report.add_argument("--meta", default=None, help="run metadata (default RESULTS.meta.json, written by sweep)")
    report.add_argument("--budget", type=_positive_int, default=10240, help="budget of the leaderboard and diagnostics (default 10240; nearest run budget if absent)")
    report.add_argument("--curve-budget", type=_positive_int, default=None, help="budget of regret_curve.png (default: --budget)")
    report.add_argument("--quiet", action="store_true")
    report.set_defaults(run=cmd_report)
    _add_train_parser(commands)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).add_parser(commands)
    return parser


def main(argv=None) -> int:
    """Run one command; a failure ends in one line on stderr (status 2 for bad input, 130 for
    Ctrl-C; see :mod:`wpbjax.failures`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from wpbjax.devices import use_every_core

    use_every_core()
    return run_command(f"wpbjax {args.command}", lambda: args.run(args))


def _prog() -> str:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    return f"wpbjax {command}" if command in ("generate", "sweep", "bench", "report", "train", "packages") else "wpbjax"


def run() -> None:
    """The console entry point: :func:`main`, then exit at once. Finalising the interpreter after a
    sweep (XLA's clients and executables, thousands of module objects) takes ~0.3 s, a tenth of the
    paper grid; by then every output file is closed and JAX's exit hook only clears its caches."""
    exit_promptly_on_interrupt(_prog)
    try:
        code = main()
    except KeyboardInterrupt:  # before a command started (importing JAX, parsing)
        code = report_interrupt(_prog())
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe (wpbjax ... | head)
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
