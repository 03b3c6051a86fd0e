"""How far an OpenAPI history's breaking labels agree with a changelog's, release by release.

The changelog is the reference: a release is *changelog-breaking* when one of its entries is breaking
(:mod:`wpbjax.episodes.importers.changelog`), *history-breaking* when a breaking line lies among the history
versions matched to it. tp = both, fp = history only, fn = changelog only, tn = neither; precision =
tp / (tp + fp) (of the releases the history calls breaking, the share the changelog calls breaking too),
recall = tp / (tp + fn), F1 their harmonic mean, base rate = (tp + fn) / scored (the changelog's breaking
share: what a labeller that always says "breaking" gets as precision). A ratio with a zero denominator
is None.

Matching history versions to releases. The history's versions are the commits its sidecar
(``PATH.meta.json``, key ``versions``) lists: every readable commit, ``[commit, date, api_version, version index
or null]``, null for a commit that changed nothing in the surface (so a release whose spec commits changed
nothing is scored, a true negative where its changelog says nothing breaking, rather than left unmatched);
without that key, one per distinct ``version`` of the lines, its date the lines' ``date``:

* ``version``: a history version goes to the release whose version string equals its ``api_version``
  (the spec's ``info.version``; a leading "v" and surrounding space ignored);
* ``date:DAYS``: to the release with the nearest date within ±DAYS days (calendar days between the
  release date and the history version's UTC date), a tie to the later release; releases with no date
  take none;
* default: ``version`` when some release version equals some ``api_version``, else ``date:7``.

Only releases matched by at least one history version are scored. Of the rest, those dated within the
history's dates (its first and last commit, widened by DAYS for ``date:DAYS``) are *unmatched*; the others
(and undated ones) lie *outside* the history and are left out.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
from typing import NamedTuple

from wpbjax.episodes.importers.changelog import Changelog, normalise_version
from wpbjax.episodes.jsonl import EpisodeFormatError

DEFAULT_DAYS = 7
SHOWN_ENTRIES, SHOWN_LINES, SHOWN_CHARS = 2, 3, 100  # a disagreement shows this much of each side


class HistoryError(EpisodeFormatError):
    """A history file that cannot be read as an imported OpenAPI history (the message names file and line)."""


class HistoryVersion(NamedTuple):
    version: int | None  # the spec version index; None: a commit that changed nothing in the surface
    date: str  # ISO date (YYYY-MM-DD, UTC) of the version
    api_version: str  # normalised info.version, "" when absent
    breaking_lines: tuple  # "ENDPOINT: kind, kind" of each breaking line


class ReleaseScore(NamedTuple):
    version: str
    date: str
    changelog_breaking: bool
    history_breaking: bool
    history_versions: tuple  # matched spec version indices
    changelog_entries: tuple  # the release's breaking entries (text, first SHOWN_ENTRIES, truncated)
    history_lines: tuple  # the matched breaking lines (first SHOWN_LINES)
    n_changelog_entries: int  # breaking entries of the release
    n_history_lines: int  # breaking lines of the matched versions


class Agreement(NamedTuple):
    match: str  # "version" or "date:DAYS"
    match_default: bool  # the match was chosen by the default rule
    releases: int  # of the changelog
    scored: int  # releases matched by a history version
    unmatched_releases: int
    history_versions: int
    unmatched_versions: int  # history versions matched to no release
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None
    recall: float | None
    f1: float | None
    base_rate: float | None
    disagreements: tuple  # ReleaseScore of each release where the two differ, newest first
    outside_releases: int = 0  # releases neither scored nor dated within the history's dates (left out)

    def to_dict(self) -> dict:
        out = self._asdict()
        out["disagreements"] = [row._asdict() for row in self.disagreements]
        return out


def parse_match(text: str | None) -> tuple | None:
    """``"version"`` -> ("version", None); ``"date:7"`` -> ("date", 7); None -> None (the default rule)."""
    if text is None:
        return None
    text = text.strip()
    if text == "version":
        return "version", None
    kind, _, days = text.partition(":")
    if kind == "date" and days.isdigit():
        return "date", int(days)
    raise ValueError(f"--match: expected version or date:DAYS (DAYS a whole number >= 0), got {text!r}")


def read_history_lines(spec: str) -> list[dict]:
    """The lines of a history file or of ``real:NAME``, checked for what agreement reads; a HistoryError
    naming the file (and line) otherwise."""
    from wpbjax.episodes.importers import real_drift

    path = real_drift.parse_spec(spec)["path"] if real_drift.is_real(spec) else real_drift.history_path(spec)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise HistoryError(f"{path}: not a readable history file ({err})") from None
    lines = []
    for number, row in enumerate(text.splitlines(), 1):
        if not row.strip():
            continue
        try:
            line = json.loads(row)
        except ValueError as err:
            raise HistoryError(f"{path}:{number}: not a JSON line ({err})") from None
        problem = _line_problem(line)
        if problem:
            raise HistoryError(f"{path}:{number}: {problem}; not an imported OpenAPI history (wpbjax import-openapi)")
        lines.append(line)
    if not lines:
        raise HistoryError(f"{path}: no history lines")
    return lines


def _line_problem(line) -> str | None:
    if not isinstance(line, dict):
        return "a line must be a JSON object"
    if isinstance(line.get("version"), bool) or not isinstance(line.get("version"), int):
        return "'version' must be an integer"
    if not isinstance(line.get("date"), str) or _date(line["date"]) is None:
        return "'date' must be an ISO date"
    if not isinstance(line.get("breaking"), bool):
        return "'breaking' must be true or false"
    if not isinstance(line.get("changes", []), list) or not isinstance(line.get("endpoint", ""), str):
        return "'changes' must be a list and 'endpoint' a string"
    return None


def _date(text: str) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(text[:10])
    except (TypeError, ValueError):
        return None


def read_sidecar_versions(spec: str) -> list | None:
    """The ``versions`` of a history's sidecar (``PATH.meta.json``): every readable commit as ``[commit, date,
    api_version, version index or null]``; None when the sidecar or the key is absent (older histories); a
    HistoryError naming the sidecar when it is not JSON or the key is malformed."""
    from wpbjax.episodes.importers import real_drift

    path = real_drift.parse_spec(spec)["path"] if real_drift.is_real(spec) else real_drift.history_path(spec)
    path += ".meta.json"
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            meta = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise HistoryError(f"{path}: not a readable history sidecar ({err})") from None
    versions = meta.get("versions") if isinstance(meta, dict) else None
    if versions is None:
        return None
    for number, item in enumerate(versions if isinstance(versions, list) else [None]):
        if not (
            isinstance(item, list)
            and len(item) == 4
            and isinstance(item[1], str)
            and _date(item[1]) is not None
            and (item[3] is None or (isinstance(item[3], int) and not isinstance(item[3], bool)))
        ):
            raise HistoryError(
                f"{path}: 'versions' entry {number} is not [commit, ISO date, api_version, version index or null]"
            )
    return versions


def history_versions(lines, sidecar_versions=None) -> list[HistoryVersion]:
    """One HistoryVersion per commit of ``sidecar_versions`` (:func:`read_sidecar_versions`; its version index
    None for a commit that changed nothing), else per distinct ``version`` of the lines, in version order."""
    grouped: dict = {}
    for line in lines:
        grouped.setdefault(line["version"], []).append(line)
    if sidecar_versions is not None:
        return [
            HistoryVersion(
                index,
                date[:10],
                normalise_version(api or ""),
                tuple(_describe(line) for line in grouped.get(index, []) if line["breaking"]),
            )
            for _, date, api, index in sidecar_versions
        ]
    out = []
    for version in sorted(grouped):
        group = grouped[version]
        api = next((line.get("api_version") for line in group if line.get("api_version")), "") or ""
        breaking = tuple(_describe(line) for line in group if line["breaking"])
        out.append(HistoryVersion(version, group[0]["date"][:10], normalise_version(api), breaking))
    return out


def _describe(line: dict) -> str:
    """``ENDPOINT: kind, kind`` of a breaking line: its breaking changes' kinds (changes without a ``level``,
    the older format: every change that is not a glitch)."""
    changes = [change for change in line.get("changes", []) if isinstance(change, dict) and not change.get("glitch")]
    if any("level" in change for change in changes):
        changes = [change for change in changes if change.get("level") == "breaking"]
    kinds = [change.get("kind", "?") for change in changes]
    return f"{line.get('endpoint', '?')}: {', '.join(dict.fromkeys(kinds)) or 'breaking'}"


def match_by_version(changelog: Changelog, versions) -> dict:
    """{position in ``versions``: release index} by equal version strings."""
    by_name = {}
    for index, release in enumerate(changelog.releases):
        by_name.setdefault(normalise_version(release.version), index)
    return {
        position: by_name[item.api_version] for position, item in enumerate(versions) if item.api_version in by_name
    }


def match_by_date(changelog: Changelog, versions, days: int) -> dict:
    """{position in ``versions``: release index}: the nearest dated release within ±``days``, a tie to the later."""
    from wpbjax.episodes.importers.changelog_episode import chronological

    rank = {release: position for position, release in enumerate(chronological(changelog))}
    dated = [(_date(release.date), rank[index], index) for index, release in enumerate(changelog.releases)]
    dated = [item for item in dated if item[0] is not None]
    out = {}
    for at, item in enumerate(versions):
        when = _date(item.date)
        candidates = [
            (abs((release_date - when).days), -release_date.toordinal(), -position, index)
            for release_date, position, index in dated
            if abs((release_date - when).days) <= days
        ]
        if candidates:
            out[at] = min(candidates)[3]
    return out


def default_match(changelog: Changelog, versions) -> tuple:
    """("version", None) when some release version equals some api_version, else ("date", DEFAULT_DAYS)."""
    return ("version", None) if match_by_version(changelog, versions) else ("date", DEFAULT_DAYS)


def ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def scores(tp: int, fp: int, fn: int, tn: int) -> dict:
    """precision, recall, f1, base_rate of a confusion matrix (None where a denominator is 0)."""
    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    f1 = ratio(2 * tp, 2 * tp + fp + fn)  # = 2PR / (P + R), defined whenever either side has a positive
    return {"precision": precision, "recall": recall, "f1": f1, "base_rate": ratio(tp + fn, tp + fp + fn + tn)}


def agreement(changelog: Changelog, lines, match: str | tuple | None = None, sidecar_versions=None) -> Agreement:
    """The release-by-release agreement of a history's lines with a changelog (module note); ``match``:
    ``"version"``, ``"date:DAYS"``, a parsed tuple, or None for the default rule; ``sidecar_versions``: the
    sidecar's every readable commit (:func:`read_sidecar_versions`), None to use the lines' versions."""
    versions = history_versions(lines, sidecar_versions)
    chosen = parse_match(match) if isinstance(match, str) or match is None else tuple(match)
    default = chosen is None
    kind, days = default_match(changelog, versions) if default else chosen
    matched = match_by_version(changelog, versions) if kind == "version" else match_by_date(changelog, versions, days)
    by_release: dict = {}
    for position, item in enumerate(versions):
        if position in matched:
            by_release.setdefault(matched[position], []).append(item)
    breaking_entries: dict = {}
    for entry in changelog.entries:
        if entry.level == "breaking":
            breaking_entries.setdefault(entry.release, []).append(entry.content)
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    disagreements = []
    for index in sorted(by_release):  # file order: newest first in most changelogs
        release, group = changelog.releases[index], by_release[index]
        entries = breaking_entries.get(index, [])
        history_lines = [text for item in group for text in item.breaking_lines]
        ours, theirs = bool(entries), bool(history_lines)
        counts[("t" if ours == theirs else "f") + ("p" if theirs else "n")] += 1
        if ours != theirs:
            disagreements.append(
                ReleaseScore(
                    release.version,
                    release.date,
                    ours,
                    theirs,
                    tuple(item.version for item in group if item.version is not None),
                    tuple(_short(text) for text in entries[:SHOWN_ENTRIES]),
                    tuple(history_lines[:SHOWN_LINES]),
                    len(entries),
                    len(history_lines),
                )
            )
    dates = [_date(item.date) for item in versions]
    slack = datetime.timedelta(days=days or 0)
    inside = [
        index
        for index, release in enumerate(changelog.releases)
        if index not in by_release
        and _date(release.date) is not None
        and min(dates) - slack <= _date(release.date) <= max(dates) + slack
    ]
    return Agreement(
        match="version" if kind == "version" else f"date:{days}",
        match_default=default,
        releases=len(changelog.releases),
        scored=len(by_release),
        unmatched_releases=len(inside),
        history_versions=len(versions),
        unmatched_versions=len(versions) - len(matched),
        **counts,
        **scores(**counts),
        disagreements=tuple(disagreements),
        outside_releases=len(changelog.releases) - len(by_release) - len(inside),
    )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
