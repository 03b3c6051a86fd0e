"""``wpbjax drift-agreement``: an OpenAPI history's breaking labels against a changelog's, per release
(:func:`wpbjax.episodes.importers.agreement.agreement`; docs/changelogs.md). Imports no JAX."""

from __future__ import annotations

import json

COMMAND = "drift-agreement"
USES_JAX = False
SHOWN_DISAGREEMENTS = 20  # in the text report; --json has every one


def add_parser(commands) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="how far a history's breaking labels agree with a changelog's, per release; docs/changelogs.md",
    )
    parser.add_argument("history", metavar="HISTORY", help="a history file (wpbjax import-openapi) or real:NAME")
    parser.add_argument(
        "--changelog", required=True, metavar="FILE", help="a Markdown changelog, or changelog:NAME for a shipped one"
    )
    parser.add_argument(
        "--match",
        default=None,
        metavar="version|date:DAYS",
        help="pair history versions with releases by equal version strings (info.version) or by the nearest "
        "release date within DAYS (default: version when any version string matches, else date:7)",
    )
    parser.add_argument("--json", action="store_true", help="the full result as JSON on stdout")
    parser.set_defaults(run=cmd_drift_agreement)


def cmd_drift_agreement(args) -> int:
    from wpbjax.episodes.importers import changelog_episode
    from wpbjax.episodes.importers.agreement import agreement, parse_match, read_history_lines, read_sidecar_versions

    match = parse_match(args.match)  # a bad --match before any file is read
    name = (
        args.changelog[len(changelog_episode.PREFIX) :]
        if changelog_episode.is_changelog(args.changelog)
        else args.changelog
    )
    changelog_episode.changelog_path(name, args.changelog)
    lines, sidecar_versions = read_history_lines(args.history), read_sidecar_versions(args.history)
    result = agreement(changelog_episode.load_changelog(name), lines, match, sidecar_versions)
    if args.json:
        print(json.dumps(dict(result.to_dict(), history=args.history, changelog=args.changelog), indent=1))
    else:
        print("\n".join(report(result, args.history, args.changelog)))
    return 0


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def report(result, history: str, changelog: str) -> list[str]:
    """The result as text lines."""
    how = " (default: no release version equals an api_version)" if result.match_default else ""
    if result.match_default and result.match == "version":
        how = " (default: some release versions equal api_versions)"
    out = [
        f"{history} against {changelog}, matched by {result.match}{how}",
        f"{result.scored:,} of {result.releases:,} releases scored ({result.unmatched_releases:,} unmatched releases "
        f"within the history's dates, {result.outside_releases:,} outside them); "
        f"{result.history_versions - result.unmatched_versions:,} of {result.history_versions:,} history versions "
        "matched",
        f"precision {_number(result.precision)}  recall {_number(result.recall)}  F1 {_number(result.f1)}  "
        f"base rate {_number(result.base_rate)} (changelog breaking / scored)",
        f"tp {result.tp}  fp {result.fp} (history only)  fn {result.fn} (changelog only)  tn {result.tn}",
    ]
    if result.disagreements:
        out.append(f"disagreements ({len(result.disagreements)}, newest first):")
    for row in result.disagreements[:SHOWN_DISAGREEMENTS]:
        side = "changelog only" if row.changelog_breaking else "history only"
        out.append(
            f"  {row.version} ({row.date or 'no date'}): {side}; spec versions {_versions(row.history_versions)}"
        )
        for text in row.changelog_entries:
            out.append(f"    changelog: {text}")
        if row.n_changelog_entries > len(row.changelog_entries):
            out.append(
                f"    changelog: ... {row.n_changelog_entries - len(row.changelog_entries)} more breaking entries"
            )
        for text in row.history_lines:
            out.append(f"    history: {text}")
        if row.n_history_lines > len(row.history_lines):
            out.append(f"    history: ... {row.n_history_lines - len(row.history_lines)} more breaking lines")
    if len(result.disagreements) > SHOWN_DISAGREEMENTS:
        out.append(f"  ... {len(result.disagreements) - SHOWN_DISAGREEMENTS} more (--json lists them all)")
    return out


def _versions(numbers) -> str:
    shown = ", ".join(map(str, numbers[:5]))
    return shown + (f", ... ({len(numbers)})" if len(numbers) > 5 else "")
