"""``wpbjax report``: tables, leaderboard and figures of a results file (:func:`wpbjax.api.report`)."""

from __future__ import annotations

import os
import sys

from wpbjax.cli.argtypes import positive_int
from wpbjax.cli.output import note_printer


def add_parser(commands) -> None:
    report = commands.add_parser("report", help="tables, leaderboard and figures from a results file")
    report.add_argument("results", help="results file from wpbjax sweep (.csv or .parquet)")
    report.add_argument("--out", required=True, help="directory for the report's files (created if needed)")
    report.add_argument("--meta", default=None, help="run metadata (default RESULTS.meta.json, written by sweep)")
    report.add_argument(
        "--budget",
        type=positive_int,
        default=10240,
        help="budget of the leaderboard and diagnostics (default 10240; nearest run budget if absent)",
    )
    report.add_argument(
        "--curve-budget", type=positive_int, default=None, help="budget of regret_curve.png (default: --budget)"
    )
    report.add_argument("--quiet", action="store_true")
    report.set_defaults(run=cmd_report)


def cmd_report(args) -> int:
    from wpbjax.runtime.devices import enable_compilation_cache  # (JAX loads once a command runs)

    enable_compilation_cache()  # the regret curve compiles a traced rollout per policy
    from wpbjax.api import report

    if args.meta is not None and not os.path.exists(args.meta):
        raise ValueError(f"--meta {args.meta}: no such file")
    written = report(
        args.results,
        args.out,
        meta=args.meta,
        budget=args.budget,
        curve_budget=args.curve_budget,
        log=note_printer("wpbjax report"),
    )  # (skipped files: said even with --quiet)
    if not args.quiet:
        print(f"wrote {len(written)} files to {args.out}", file=sys.stderr)
    return 0
