"""``wpbjax import-writ``: WRIT scenario files to episodes (:func:`wpbjax.episodes.importers.writ.import_writ`).
Imports no JAX: it only reads JSON and writes JSONL."""

from __future__ import annotations

import os
import sys

COMMAND = "import-writ"
USES_JAX = False


def add_parser(commands) -> None:
    writ = commands.add_parser(COMMAND, help="WRIT scenario files -> episodes (one per scenario; docs/integrity.md)")
    writ.add_argument("paths", nargs="+", metavar="PATH", help="WRIT scenario .json files or directories of them")
    writ.add_argument("--out", required=True, help="output JSONL file")
    writ.add_argument("--quiet", action="store_true")
    writ.set_defaults(run=cmd_import_writ)


def _read_files(paths) -> list[str]:
    """The files an import of ``paths`` reads (a directory: its ``*.json`` files)."""
    return [
        os.path.join(path, name)
        for path in paths
        if os.path.isdir(path)
        for name in os.listdir(path)
        if name.endswith(".json")
    ] + [path for path in paths if not os.path.isdir(path)]


def cmd_import_writ(args) -> int:
    from wpbjax.episodes.importers.writ import import_writ_mapped
    from wpbjax.episodes.jsonl import save_jsonl
    from wpbjax.files.atomic import check_writable, refuse_inputs

    check_writable(args.out)
    refuse_inputs(args.out, _read_files(args.paths), "--out")
    mapped = import_writ_mapped(args.paths)
    save_jsonl([episode for episode, _ in mapped], args.out)
    if not args.quiet:
        print(f"wrote {len(mapped)} WRIT episodes to {args.out}", file=sys.stderr)
        print(summary(mapped), file=sys.stderr)
    return 0


def summary(mapped: list) -> str:
    """How the scenarios' probes were mapped (wpbjax.episodes.importers.writ_probes): the count by rule, then each
    scenario without a probe and why."""
    rules: dict = {}
    for _, mapping in mapped:
        if mapping.probes:
            rules[mapping.rule] = rules.get(mapping.rule, 0) + 1
    lines = [
        f"probes for {sum(rules.values())} of {len(mapped)} scenarios ("
        + ", ".join(f"{rule}: {count}" for rule, count in sorted(rules.items()))
        + ")"
    ]
    lines += [
        f"  no probe: {episode['labels']['episode_id']}: {mapping.reason}"
        for episode, mapping in mapped
        if not mapping.probes
    ]
    return "\n".join(lines)
