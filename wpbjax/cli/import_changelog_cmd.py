"""``wpbjax import-changelog``: a Markdown changelog to episodes, one step per entry
(:mod:`wpbjax.episodes.importers.changelog`, :mod:`wpbjax.episodes.importers.changelog_episode`; docs/changelogs.md).
Imports no JAX: it only reads Markdown and writes JSONL."""

from __future__ import annotations

import sys

from wpbjax.cli.argtypes import positive_int

COMMAND = "import-changelog"
USES_JAX = False


def add_parser(commands) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="a Markdown changelog (Keep a Changelog, release-please, plain) -> episodes, one step per entry; "
        "docs/changelogs.md",
    )
    parser.add_argument(
        "file", metavar="FILE", help="a CHANGELOG.md (gzip or not), or changelog:NAME for a shipped one"
    )
    parser.add_argument("--out", required=True, help="output JSONL file (.jsonl or .jsonl.gz)")
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=200,
        help="steps per episode window (default 200, as real:; a larger value than the entries: one episode)",
    )
    parser.add_argument(
        "--stride", type=positive_int, default=None, help="steps between window starts (default half a window)"
    )
    parser.add_argument("--quiet", action="store_true", help="no summary")
    parser.set_defaults(run=cmd_import_changelog)


def cmd_import_changelog(args) -> int:
    from wpbjax.episodes.importers import changelog_episode
    from wpbjax.episodes.jsonl import save_jsonl
    from wpbjax.files.atomic import check_writable, refuse_inputs

    name = args.file[len(changelog_episode.PREFIX) :] if changelog_episode.is_changelog(args.file) else args.file
    path = changelog_episode.changelog_path(name, args.file)
    check_writable(args.out)
    refuse_inputs(args.out, [path], "--out")
    changelog = changelog_episode.load_changelog(name)
    episodes = changelog_episode.episodes(name, steps=args.steps, stride=args.stride)
    save_jsonl(episodes, args.out)
    if not args.quiet:
        for line in summary(changelog):
            print(f"wpbjax {COMMAND}: {line}", file=sys.stderr)
        print(
            f"wpbjax {COMMAND}: wrote {len(episodes):,} episode{'s' if len(episodes) != 1 else ''} ({args.steps} steps, stride "
            f"{args.stride or max(args.steps // 2, 1)}) to {args.out}",
            file=sys.stderr,
        )
    return 0


def _counts(counts: dict) -> str:
    found = [f"{name} {count:,}" for name, count in counts.items() if count]
    return ", ".join(found) or "none"


def summary(changelog) -> list[str]:
    """What was read: formats, section styles, markers, releases, entries by level; one line each."""
    dates = sorted(release.date for release in changelog.releases if release.date)
    levels = changelog.level_counts
    breaking_releases = len({entry.release for entry in changelog.entries if entry.level == "breaking"})
    span = f", {dates[0]} .. {dates[-1]}" if dates else ", no dates"
    return [
        f"release headings: {_counts(changelog.formats)}",
        f"sections and entries: {_counts(changelog.styles)}",
        f"breaking markers: {_counts(dict(sorted(changelog.marker_counts.items())))}",
        f"{len(changelog.releases):,} releases{span}; {breaking_releases:,} with a breaking entry",
        f"{len(changelog.entries):,} entries: {levels['breaking']:,} breaking, {levels['warning']:,} warning, "
        f"{levels['info']:,} info",
    ]
