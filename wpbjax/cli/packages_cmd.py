"""``wpbjax packages ...``: thin commands over wpbjax.packages (docs/packages.md).

    wpbjax packages sweep --distribution memaudit_small --seeds 500 --budgets 1,2,4,8,16 --out pk.csv
    wpbjax packages sweep --packages DIR [DIR ...] --budgets 4,8 --methods opt,oracle_gvt,greedy
    wpbjax packages generate --distribution memaudit_small --seeds 3 --out DIR

``add_parser(commands)`` registers the ``packages`` command on the main parser; further
subcommands (``packages train``/``score``) register through :data:`EXTRA_SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from wpbjax.cli.argtypes import count_list, name_list

PROG_SWEEP = "wpbjax packages sweep"

# Hooks for other modules' subcommands: callables taking the packages sub-parsers object.
EXTRA_SUBCOMMANDS: list = []


def _count(text: str, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


def _positive(text: str) -> int:
    return _count(text, 1)


def _add_shape_args(parser: argparse.ArgumentParser) -> None:
    from wpbjax.packages.catalog import DISTRIBUTIONS

    parser.add_argument(
        "--distribution",
        choices=DISTRIBUTIONS,
        default="memaudit_small",
        help="generated packages (default memaudit_small, the artifact's base sweep)",
    )
    parser.add_argument("--seeds", type=_positive, default=500, help="number of seeds (default 500)")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--normal-count", type=_count, default=3, help="facts per package (default 3)")
    parser.add_argument("--update-count", type=_count, default=2, help="updates per package (default 2)")


def add_parser(commands) -> argparse.ArgumentParser:
    """Register ``packages`` (with its own subcommands) on the main CLI's sub-parsers."""
    from wpbjax.packages.catalog import METHODS, PAPER_METHODS

    packages = commands.add_parser(
        "packages", help="MEMAUDIT representation choice: exact OPT, writers, sweeps (docs/packages.md)"
    )
    sub = packages.add_subparsers(dest="packages_command", required=True)

    sweep = sub.add_parser("sweep", help="rows per (distribution, seed, budget, method) scored against certified OPT")
    _add_shape_args(sweep)
    sweep.add_argument(
        "--packages",
        nargs="+",
        metavar="DIR",
        help="package directories in the artifact's export layout (instead of --distribution)",
    )
    sweep.add_argument("--budgets", type=count_list, default=[1, 2, 4, 8, 16], help="budgets (default 1,2,4,8,16)")
    sweep.add_argument(
        "--methods",
        type=name_list,
        default=list(PAPER_METHODS),
        help=f"comma-separated (default the paper's eight; all: {','.join(METHODS)})",
    )
    sweep.add_argument("--h", choices=("min", "log1p", "linear"), default="min", help="concave h (default min)")
    sweep.add_argument(
        "--verify",
        choices=("none", "milp"),
        default="none",
        help="cross-check every OPT against the MILP (HiGHS); fails on any disagreement",
    )
    sweep.add_argument("--out", default=None, help="rows file, .csv or .parquet (default: none)")
    sweep.add_argument("--quiet", action="store_true", help="no progress line or summary table")
    sweep.set_defaults(run=cmd_sweep)

    generate = sub.add_parser("generate", help="write generated packages in the artifact's export layout")
    _add_shape_args(generate)
    generate.add_argument("--out", required=True, help="directory; one sub-directory per package")
    generate.add_argument("--quiet", action="store_true")
    generate.set_defaults(run=cmd_generate)
    from wpbjax.cli.packages_learned_cmd import add_parsers as add_train_and_score  # packages train / score

    for hook in (add_train_and_score, *EXTRA_SUBCOMMANDS):
        hook(sub)
    return packages


def _progress(enabled: bool):
    if not enabled:
        return None

    def show(done: int, total: int, elapsed: float) -> None:
        print(
            f"\rpackages: {done}/{total} seeds, {elapsed:.1f} s",
            end="" if done < total else "\n",
            file=sys.stderr,
            flush=True,
        )

    return show


def drop_repeats(args, prog: str) -> None:
    """Repeated budgets, methods or package directories (the same after resolving links) would give
    duplicate rows: keep each once, warn once (the Python API refuses them; the main sweep's rule)."""
    from wpbjax.cli.arguments import stderr_warning, unique_values  # (imports JAX: only when a command runs)

    warn = stderr_warning(prog)
    args.budgets = unique_values(list(args.budgets), "--budgets", warn)
    args.methods = unique_values(list(args.methods), "--methods", warn)
    if args.packages:
        args.packages = unique_values(list(args.packages), "--packages", warn, key=os.path.realpath)


def check_sweep_size(args, n_methods: int, memory: int | None = None) -> int:
    """Refuse, before any work, a sweep whose table could not be held in memory or written to
    ``--out``'s disk (as ``wpbjax sweep`` does); returns its row count."""
    from wpbjax.cli.arguments import refuse_past_memory
    from wpbjax.files.output_size import check_disk_space
    from wpbjax.packages.sweeps import ROW_BYTES, ROW_MEMORY_BYTES

    n_packages = len(args.packages) if args.packages else args.seeds
    rows = n_packages * len(args.budgets) * n_methods
    what = f"--packages: {n_packages:,} packages" if args.packages else f"--seeds {n_packages:,}"
    smaller = "fewer seeds or packages, budgets or methods"
    refuse_past_memory(
        f"{what} x {len(args.budgets)} budgets x {n_methods} methods: the sweep's {rows:,} rows",
        rows * ROW_MEMORY_BYTES,
        memory,
        advice=f"sweep {smaller}",
    )
    if args.out:
        check_disk_space(args.out, rows, row_bytes=ROW_BYTES, smaller=smaller)
    return rows


def cmd_sweep(args) -> int:
    from wpbjax.files.results_io import check_output, write_table
    from wpbjax.packages import sweeps
    from wpbjax.packages.io import package_files
    from wpbjax.packages.opt import OptNotCertified
    from wpbjax.runtime.devices import enable_compilation_cache

    started = time.perf_counter()
    drop_repeats(args, PROG_SWEEP)
    methods = sweeps.check_methods(args.methods)
    if args.out:  # before any work: a writable place, and none of the files read
        check_output(args.out, inputs=package_files(args.packages or []), command="command")
    check_sweep_size(args, len(methods))
    enable_compilation_cache()
    verify = None if args.verify == "none" else args.verify
    try:
        if args.packages:
            from wpbjax.packages.io import read_packages

            pset = read_packages(args.packages)
            table = sweeps.run(pset, args.budgets, methods, args.h, "packages", verify)
        else:
            seeds = range(args.seed_start, args.seed_start + args.seeds)
            table = sweeps.run_distribution(
                args.distribution,
                seeds,
                args.budgets,
                methods,
                args.h,
                args.normal_count,
                args.update_count,
                verify,
                progress=_progress(not args.quiet),
            )
    except OptNotCertified as err:
        print(f"{PROG_SWEEP}: error: OPT not certified: {err}", file=sys.stderr)
        return 1
    if args.out:
        write_table(table, args.out, {"command": PROG_SWEEP})
    if not args.quiet:
        print(sweeps.ratio_table(table))
        certified = table[table.method == methods[0]]["opt_certified_by"].value_counts().to_dict()
        print(
            f"OPT certified by: {certified}; {len(table)} rows in {time.perf_counter() - started:.2f} s"
            + (f" -> {args.out}" if args.out else "")
        )
    return 0


def cmd_generate(args) -> int:
    from wpbjax.packages.distributions import generate
    from wpbjax.packages.io import write_packages

    seeds = range(args.seed_start, args.seed_start + args.seeds)
    pset = generate(args.distribution, seeds, args.normal_count, args.update_count)
    paths = write_packages(pset, args.out, args.distribution)
    if not args.quiet:
        print(f"wrote {len(paths)} packages to {os.fspath(args.out)}")
    return 0
