"""``wpbjax import-openapi``: an OpenAPI spec's version history to labelled lines
(:func:`wpbjax.episodes.importers.openapi_import.import_history`)."""

from __future__ import annotations

import argparse
import sys
import time

USES_JAX = False


def _processes(text: str) -> int:
    """``--processes``: 0 (one per core) or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes; got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 (one per core) or more; got {value}")
    return value


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "import-openapi",
        help="an OpenAPI spec's git history (or dated copies) -> one labelled line per changed "
        "(version, endpoint); docs/real_drift.md",
    )
    parser.add_argument(
        "source",
        metavar="SOURCE",
        help="a git repository (bare or not) or a directory of dated version subdirectories (YYYY-MM-DD...)",
    )
    parser.add_argument(
        "--spec",
        required=True,
        metavar="PATTERN[,PATTERN...]",
        help="where the spec lives, in order of preference (e.g. openapi/spec3.json,openapi/spec2.json):"
        " * and ? within a path segment, **/ any directories; .json/.yaml/.yml twins both read",
    )
    parser.add_argument("--out", required=True, help="output file (history.jsonl.gz), with OUT.meta.json beside it")
    parser.add_argument(
        "--origin",
        default=None,
        metavar="URL",
        help="where SOURCE came from, recorded in the sidecar (default: its git remote 'origin')",
    )
    parser.add_argument(
        "--processes", type=_processes, default=0, help="parsing processes (default 0: one per core; 1: no pool)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    parser.set_defaults(run=cmd_import_openapi)


def cmd_import_openapi(args) -> int:
    from wpbjax.episodes.importers.openapi_history import refuse_output_inside
    from wpbjax.episodes.importers.openapi_import import import_history, write_history
    from wpbjax.files.atomic import check_writable

    started = time.perf_counter()
    check_writable(args.out)  # before minutes of parsing
    refuse_output_inside(args.out, args.source)
    lines, meta = import_history(args.source, args.spec, processes=args.processes, progress=not args.quiet)
    if args.origin:
        meta["origin"] = args.origin
    meta = write_history(args.out, lines, meta)
    if not args.quiet:
        for line in summary(meta):
            print(f"wpbjax import-openapi: {line}", file=sys.stderr)
        print(
            f"wpbjax import-openapi: wrote {meta['rows']:,} lines to {args.out} in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return 0


def summary(meta: dict) -> list[str]:
    """What was read, skipped and labelled, one line each."""
    counts = meta["counts"]
    first, last = meta["commits"]["first_date"][:10], meta["commits"]["last_date"][:10]
    out = [
        (
            f"{counts['readable']:,} of {counts['versions']:,} versions read ({counts['surface_versions']:,} change "
            f"the surface), {first} .. {last}; "
            f"{counts['endpoints_first']} -> {counts['endpoints_last']} endpoints ({counts['endpoints_ever']} ever)"
        )
    ]
    if counts["unreadable"]:
        (first, first_date), (last, last_date) = counts["unreadable_commits"]
        out.append(
            f"{counts['unreadable']:,} versions unreadable (their spec files' contents are absent), skipped: "
            f"{first_date[:10]} .. {last_date[:10]}, commits {first[:12]} .. {last[:12]}"
        )
    for reason in ("missing", "invalid"):
        if counts[f"read_from_twin_{reason}"]:
            out.append(
                f"{counts[f'read_from_twin_{reason}']:,} versions read from a twin in another format (a file "
                f"{'absent' if reason == 'missing' else 'not valid JSON/YAML'})"
            )
    if counts["fragment_unreadable"]:
        out.append(f"{counts['fragment_unreadable']:,} versions refer to a fragment file that could not be read")
    surface = counts["surface"]
    if any(surface.values()):
        out.append(
            f"schemas: {surface.get('cycles_cut', 0):,} cycles cut, {surface.get('unresolved_refs', 0):,} "
            f"unresolved $refs skipped, {surface.get('depth_cut', 0):,} subtrees below the depth limit"
        )
    levels = counts["levels"]
    out.append(
        f"{counts['lines']:,} changed (version, endpoint) lines: "
        + ", ".join(f"{levels.get(level, 0):,} {level}" for level in ("breaking", "warning", "info", "none"))
        + f"; {counts['glitch_changes']:,} changes are glitches (undone within "
        f"{meta['importer']['glitch_window']} version)"
    )
    return out
