"""``wpbjax`` command line: each subcommand maps its flags onto one call of the Python API
(:mod:`wpbjax.api`, :mod:`wpbjax.episodes`) and prints what it did.

    wpbjax generate --mode default --seed 0 --steps 200 --episodes 10 --out episodes.jsonl
    wpbjax sweep [--episodes FILE ...] [--budgets 1024,...] [--oracle exact|published_rule] [--out results.csv]
    wpbjax report results.csv --out report/
    wpbjax train --track unprivileged --out gate.npz
    wpbjax adversary --policies last_kb --budgets 10240 --out adv.json
"""

from __future__ import annotations

import os
import sys

from wpbjax.cli import (
    adversary_cmd,
    bench_cmd,
    drift_agreement_cmd,
    generate_cmd,
    import_changelog_cmd,
    import_openapi_cmd,
    import_writ_cmd,
    packages_cmd,
    report_cmd,
    sweep_cmd,
    train_cmd,
)
from wpbjax.cli.failures import OneLineParser, exit_promptly_on_interrupt, report_interrupt, run_command

# One module per subcommand family, each with ``add_parser(commands)`` (commands: the argparse
# subparsers), which adds its parser and ``set_defaults(run=handler)``; in ``wpbjax --help`` order.
SUBCOMMANDS = {
    "generate": generate_cmd,
    "import-writ": import_writ_cmd,
    "import-openapi": import_openapi_cmd,
    "import-changelog": import_changelog_cmd,
    "drift-agreement": drift_agreement_cmd,
    "sweep": sweep_cmd,
    "bench": bench_cmd,
    "report": report_cmd,
    "train": train_cmd,
    "adversary": adversary_cmd,
    "packages": packages_cmd,
}

# The commands whose outputs stay the same bit for bit with XLA:CPU's loops compiled whole, which run faster
# (wpbjax.runtime.devices.use_every_core; docs/performance.md, "Loops compiled whole"). Not train (nor packages,
# which trains writers): its weights would round differently from the library's in-process training.
WHOLE_LOOP_COMMANDS = frozenset({"sweep", "bench", "adversary"})


def build_parser(command: str | None = None):
    """The ``wpbjax`` parser: every subcommand module's parser under one, or only ``command``'s (a
    command builds its own parser only: the others' import what their defaults need, JAX included)."""
    parser = OneLineParser(prog="wpbjax", description="Memory write policies under byte budgets, in JAX.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module in SUBCOMMANDS.items():
        if command is None or name == command:
            module.add_parser(commands)
    return parser


def _command(argv) -> str | None:
    """The subcommand ``argv`` names, if it names one (else None: the whole parser reports it)."""
    return argv[0] if argv and argv[0] in SUBCOMMANDS else None


def main(argv=None) -> int:
    """Run one command; a failure ends in one line on stderr (status 2 for bad input, 130 for
    Ctrl-C, "wpbjax COMMAND: interrupted"; see :mod:`wpbjax.cli.failures`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command(argv)).parse_args(argv)
    if getattr(SUBCOMMANDS[args.command], "USES_JAX", True):
        from wpbjax.runtime.devices import use_every_core

        use_every_core(whole_loops=args.command in WHOLE_LOOP_COMMANDS)
    return run_command(_prog_of(args), lambda: args.run(args))


def _prog_of(args) -> str:
    """The command an error line names: ``wpbjax sweep``, ``wpbjax packages score`` (with its subcommand)."""
    words = ["wpbjax", args.command]
    if getattr(args, "packages_command", None):
        words.append(args.packages_command)
    return " ".join(words)


def _prog() -> str:
    """:func:`_prog_of` before the arguments are parsed (for the interrupted line)."""
    argv = sys.argv[1:]
    command = _command(argv)
    if command == "packages" and len(argv) > 1 and not argv[1].startswith("-"):
        return f"wpbjax packages {argv[1]}"
    return f"wpbjax {command}" if command else "wpbjax"


def run() -> None:
    """The console entry point: :func:`main`, then exit at once. Finalising the interpreter after a
    sweep (XLA's clients and executables, thousands of module objects) is a noticeable share of a small
    grid's time (docs/performance.md); by then every output file is closed and JAX's exit hook only clears
    its caches."""
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
