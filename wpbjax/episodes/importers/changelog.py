"""A Markdown changelog as releases and entries, each entry with its breaking markers and level.

Pure functions over the file's text (:func:`parse_changelog`); :mod:`wpbjax.episodes.importers.changelog_episode`
turns the entries into an episode stream. What is read:

* **Releases**: a heading (any level) whose text starts with a version (``1.2.3``, ``v1.2.3``, ``[1.2.3]``,
  ``[1.2.3](compare-url)``; at least one dot), with an ISO date (``## 2024-01-02``: the date is the version)
  or is ``[Unreleased]``; the release date is the first ISO
  ``YYYY-MM-DD`` in the rest of the heading ("" if none). Its format (counted, :data:`FORMATS`):
  ``keep-a-changelog`` (``## [1.2.3] - 2024-01-02``, ``## [Unreleased]``), ``release-please``
  (``## 1.2.3 (2024-01-02)``, ``## [1.2.3](https://...compare/...) (2024-01-02)``), else ``plain``
  (``## 1.2.3 - 2024-01-02``, ``## v1.2.3 (2024-01-02)``, ``# 1.2.3``).
* **Sections**: every other heading; an indented heading inside a bullet (stripe-python's
  ``  ### ⚠️ Breaking changes`` under a release's one bullet) holds until that bullet closes.
* **Entries**: one per bullet (``*``, ``-``, ``+``, any indentation); lines that continue it (a line with no
  blank before it, or indented into it after a blank; fenced code included) are part of its content. A
  nested bullet is an entry of its own in the same release. Prose outside bullets is not an entry. An
  entry before the first release heading belongs to the first release.
* **Section of an entry**: the nearest heading, unless the entry is nested and that heading lies outside
  its parent bullet: then the parent bullet's text, trimmed (:func:`trim`).

Breaking markers (:data:`MARKERS`; case-insensitive; every one that fires is recorded, in table order):
see the table for each reason. Level: ``breaking`` (a marker), ``warning`` (a ``Deprecated`` section or the
deprecation words of :func:`wpbjax.episodes.importers.openapi_surface.deprecated_in_text`), else ``info``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

from wpbjax.episodes.importers.openapi_surface import deprecated_in_text
from wpbjax.episodes.jsonl import EpisodeFormatError

LEVELS = ("breaking", "warning", "info")
FORMATS = ("keep-a-changelog", "release-please", "plain")
UNRELEASED = "Unreleased"
SECTION_CHARS = 80  # a parent bullet's text as a section: its first line, at most this many characters

# name -> why it means a breaking change (docs/changelogs.md prints this table)
MARKERS = {
    "section-breaking": "a section heading that says Breaking (release-please's `⚠ BREAKING CHANGES`, "
    "`Breaking changes`): the project files the entry as breaking",
    "section-warning-sign": "a section heading marked ⚠ (stripe's `### ⚠️ Changed`): the project's sign for "
    "breaking changes",
    "section-incompatible": "a section heading that says incompatible (`Backwards incompatible changes`): "
    "the same claim in other words",
    "section-removed": "Keep a Changelog's `Removed` section: removing a public thing breaks every user of it",
    "bang": "`!` before the colon of a Conventional Commits type or scope (`feat!:`, `fix(api)!:`, "
    "`**scope!:**`): the spec's breaking flag",
    "text-breaking-change": "`BREAKING CHANGE:` / `BREAKING CHANGES:` in the text: the Conventional Commits "
    "footer, also written inline",
    "text-breaking-colon": "`BREAKING:` in the text: a common inline tag",
    "text-paren": "`(breaking change)` / `(breaking)` in the text: a vendor's inline tag",
    "text-bracket": "`[Breaking]` / `[Breaking change]` in the text: a vendor's inline tag",
    "leading-warning-sign": "the entry starts with ⚠ (`⚠️` or `⚠`, after a PR link or bold scope): "
    "stripe's per-entry sign for breaking changes",
}

_VERSION = r"v?\d+(?:\.\d+)+(?:-[0-9A-Za-z.]+)?(?:\+[0-9A-Za-z.]+)?"
_RELEASE = re.compile(
    r"^(?:(?:version|release)\s+)?(?:\[(?P<bracketed>" + _VERSION + r"|unreleased)\]|(?P<bare>" + _VERSION + r"))"
    r"(?P<link>\([^)\s]*\))?(?P<rest>.*)$",
    re.IGNORECASE,
)
_RELEASE_WORDS = re.compile(r"\b(?:yanked|released|unreleased)\b", re.IGNORECASE)
_DATED_RELEASE = re.compile(r"^\[?(\d{4}-\d{2}-\d{2})\]?(?![\w-])")
_UNRELEASED_BARE = re.compile(r"^unreleased\b", re.IGNORECASE)
_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_HEADING = re.compile(r"^(?P<indent>[ \t]*)(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^(?P<indent>[ \t]*)[*+-](?P<gap>[ \t]+|$)(?P<text>.*)$")
_RULE = re.compile(r"^[ \t]*([*_-])(?:[ \t]*\1){2,}[ \t]*$")  # a thematic break (***, - - -), not a bullet
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(?P<underline>=+|-+)[ \t]*$")  # under a paragraph line: a level 1 (=) or 2 (-) heading
# a short line that is all bold (``**Api**``, ``__Fixes__``): a label that heads what follows, as a heading does
_BOLD_LABEL = re.compile(r"^ {0,3}(?:\*\*(?P<star>[^*]{1,40})\*\*|__(?P<under>[^_]{1,40})__):?[ \t]*$")
BOLD_LABEL_LEVEL = 7  # below every ``#`` heading: ``### Fixed`` closes a bold label, a bold label closes the one before
_WARNING_SIGN = "\u26a0"  # ⚠, with or without the variation selector U+FE0F after it

_BANG = re.compile(r"^(?:\*\*)?[a-z][\w-]*(?:\([^)]*\))?!:", re.IGNORECASE)
_TEXT_MARKERS = (
    ("text-breaking-change", re.compile(r"(?<![\w-])breaking[ -]changes?\s*:", re.IGNORECASE)),
    ("text-breaking-colon", re.compile(r"(?<![\w-])breaking\s*:", re.IGNORECASE)),
    ("text-paren", re.compile(r"\(\s*breaking(?:[ -]changes?)?\s*\)", re.IGNORECASE)),
    ("text-bracket", re.compile(r"\[\s*breaking(?:[ -]changes?)?\s*\]", re.IGNORECASE)),
)
# what comes before an entry's first word: a PR / issue link, emphasis, a bracket
_LEAD = re.compile(r"^(?:\s+|\[#\d+\]\([^)]*\)|#\d+\b|\*\*[^*]+:\*\*|[*_\[])+")
_CONVENTIONAL = re.compile(r"^(?:\*\*[^*\n]+:\*\*|[a-z]+(?:\([^)\n]*\))?!?:\s)", re.IGNORECASE)
KEEP_A_CHANGELOG_SECTIONS = frozenset({"added", "changed", "deprecated", "removed", "fixed", "security"})
RELEASE_PLEASE_SECTIONS = frozenset(
    {
        "breaking changes",
        "features",
        "bug fixes",
        "performance improvements",
        "reverts",
        "documentation",
        "miscellaneous chores",
        "chores",
        "refactors",
        "code refactoring",
        "tests",
        "build system",
        "continuous integration",
        "styles",
        "dependencies",
    }
)
STYLES = ("keep-a-changelog sections", "release-please sections", "other sections", "conventional entries")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


class ChangelogError(EpisodeFormatError):
    """A file that is not a Markdown changelog (the message names the file, and the line where one helps)."""


class Release(NamedTuple):
    version: str  # "1.2.3" (no leading "v"), or "Unreleased"
    date: str  # ISO YYYY-MM-DD, "" if the heading has none
    line: int  # 1-based line of its heading
    format: str  # one of FORMATS


class Entry(NamedTuple):
    release: int  # index into Changelog.releases
    line: int  # 1-based line of its bullet
    depth: int  # 0 for a top-level bullet, 1 nested once, ...
    section: str  # the nearest heading or the parent bullet's text (module note); "" if none
    heading: str  # the nearest heading in force, "" if none (what section markers read)
    content: str  # the entry's text: its bullet line and continuation lines, dedented
    markers: tuple  # names of MARKERS that fired, in table order
    level: str  # "breaking" | "warning" | "info"


class Changelog(NamedTuple):
    releases: tuple  # Release, in file order (newest first in most changelogs)
    entries: tuple  # Entry, in file order
    formats: dict  # format -> release headings of that format
    styles: dict  # section headings by style and Conventional Commits entries (:func:`styles_of`)

    @property
    def marker_counts(self) -> dict:
        """marker -> entries it fired on (an entry with several counts once per marker)."""
        return dict(Counter(marker for entry in self.entries for marker in entry.markers))

    @property
    def level_counts(self) -> dict:
        counts = Counter(entry.level for entry in self.entries)
        return {level: counts.get(level, 0) for level in LEVELS}


def release_of_heading(text: str, level: int = 2) -> tuple | None:
    """(version, date, format) if a heading's text (of ``level``, 1 for ``#``) names a release, else None.
    A version followed by words is a release at levels 1-2 (``## 1.2.3 - March 3``); deeper, only with a
    date or no words but ``yanked`` / ``released`` (``### 2.0 migration notes`` is a section)."""
    text = text.strip()
    match = _RELEASE.match(text)
    dated = _DATED_RELEASE.match(text)
    if match is None and dated is not None:  # a release named by its date ("## 2024-01-02", "## [2024-01-02]")
        rest = text[dated.end() :]
        named = _RELEASE.match(rest.strip(" \t-–—:"))  # "[2024-01-02] Version 1.2.3": the date, then the version
        if named is not None and named.group("bare") and not named.group("rest").strip():
            return normalise_version(named.group("bare")), dated.group(1), "plain"
        if level > 2 and _RELEASE_WORDS.sub("", rest).strip(" \t[]()-–—/:,.*_"):
            return None
        return dated.group(1), dated.group(1), "plain"
    if match is None:
        if _UNRELEASED_BARE.match(text):
            return UNRELEASED, "", "keep-a-changelog"
        return None
    version = match.group("bracketed") or match.group("bare")
    rest = match.group("rest")
    if rest and rest[0].isalnum():  # "1.2.3a..." / "2.0migration": not a version followed by a date or nothing
        return None
    if version.lower() == UNRELEASED.lower():
        return UNRELEASED, "", "keep-a-changelog"
    date = _DATE.search(rest)
    if level > 2 and date is None and _RELEASE_WORDS.sub("", rest).strip(" \t[]()-–—/:,.*_"):
        return None
    if match.group("bracketed") and not match.group("link"):
        kind = "keep-a-changelog"
    elif not version.lower().startswith("v") and re.match(r"^\s*\(\d{4}-\d{2}-\d{2}\)", rest):
        kind = "release-please"
    else:
        kind = "plain"
    return normalise_version(version), date.group(1) if date else "", kind


def normalise_version(version: str) -> str:
    """``" v1.2.3 "`` -> ``"1.2.3"``: what two version strings are compared by."""
    version = str(version).strip()
    return version[1:] if version[:1] in "vV" and version[1:2].isdigit() else version


def trim(text: str, limit: int = SECTION_CHARS) -> str:
    """A bullet's text as a section name: its first line, links reduced to their text, emphasis and
    surrounding space removed, at most ``limit`` characters."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    first = _LINK.sub(r"\1", first).replace("**", "").replace("`", "")
    first = " ".join(first.split()).rstrip(":")
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."


def heading_markers(heading: str) -> list[str]:
    """The section markers a heading's text fires."""
    lower = heading.lower()
    out = []
    if "breaking" in lower:
        out.append("section-breaking")
    if _WARNING_SIGN in heading:
        out.append("section-warning-sign")
    if "incompatible" in lower:
        out.append("section-incompatible")
    if lower.replace(_WARNING_SIGN, "").replace("\ufe0f", "").strip(" :") == "removed":
        out.append("section-removed")
    return out


def text_markers(content: str) -> list[str]:
    """The markers an entry's own text fires."""
    plain = content.replace("**", "").replace("__", "")
    out = []
    if _BANG.match(content.strip()):
        out.append("bang")
    out.extend(name for name, pattern in _TEXT_MARKERS if pattern.search(plain))
    if _LEAD.sub("", content).startswith(_WARNING_SIGN):
        out.append("leading-warning-sign")
    return out


def entry_level(markers, heading: str, content: str) -> str:
    if markers:
        return "breaking"
    if "deprecat" in heading.lower() or deprecated_in_text(content):
        return "warning"
    return "info"


class _Bullet(NamedTuple):
    indent: int  # column of the marker
    content_indent: int  # column of its text: a line indented this far after a blank continues it
    entry: int  # index into the open entries list


class _Heading(NamedTuple):
    level: int
    text: str
    owner: int  # number of bullets open when it appeared (it is inside the innermost of them), 0 at top level


def _columns(indent: str) -> int:
    return len(indent.expandtabs(4))


def parse_changelog(text: str, where: str = "changelog") -> Changelog:
    """Releases and entries of a Markdown changelog's text (module note); ``where`` names the source in
    errors. A ChangelogError if no heading names a release."""
    releases: list[Release] = []
    raw: list[dict] = []  # entries as they are built: release (None before the first), lines, ...
    bullets: list[_Bullet] = []
    headings: list[_Heading] = []
    sections: list[str] = []  # every section heading's text
    fence, blank, fence_in_entry = None, False, False
    paragraph = None  # (line number, text) of the last paragraph line outside bullets
    for number, line in enumerate(text.splitlines(), 1):
        if fence is not None:  # inside fenced code: nothing is a heading or a bullet
            if fence_in_entry:
                raw[bullets[-1].entry]["lines"].append(line)
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
            continue
        if not line.strip():
            blank = True
            continue
        indent = _columns(line[: len(line) - len(line.lstrip())])
        opened = _FENCE.match(line)
        if opened:
            _close_for_text(bullets, indent, blank)
            fence, fence_in_entry = opened.group("fence"), bool(bullets)
            if fence_in_entry:
                raw[bullets[-1].entry]["lines"].append(line)
            blank = False
            continue
        heading = _heading_of(line, paragraph if paragraph and paragraph[0] == number - 1 else None)
        if heading is None and _BOLD_LABEL.match(line) and (blank or not bullets):
            _close_for_text(bullets, indent, blank)
            if not bullets:
                label = _BOLD_LABEL.match(line)
                heading = (label.group("star") or label.group("under")).strip(), BOLD_LABEL_LEVEL, number
        paragraph = None
        if heading:
            title, level, at = heading
            release = release_of_heading(title, level)
            if release is not None:
                releases.append(Release(release[0], release[1], at or number, release[2]))
                bullets.clear()
                headings.clear()
            else:
                while bullets and bullets[-1].content_indent > indent:
                    bullets.pop()
                owner = len(bullets)
                while headings and (
                    headings[-1].owner > owner or (headings[-1].owner == owner and headings[-1].level >= level)
                ):
                    headings.pop()
                headings.append(_Heading(level, title, owner))
                if releases:  # not the file's title ("# Changelog")
                    sections.append(title)
            blank = False
            continue
        bullet = _BULLET.match(line)
        if bullet and not _RULE.match(line):
            marker = _columns(bullet.group("indent"))
            while bullets and marker < bullets[-1].content_indent:
                bullets.pop()
            while headings and headings[-1].owner > len(bullets):  # a heading inside a bullet that closed
                headings.pop()
            gap = bullet.group("gap")
            body = bullet.group("text")
            content_indent = marker + 1 + (len(gap.expandtabs(4)) if gap else 1)
            parent = bullets[-1].entry if bullets else None
            nearest = headings[-1] if headings else None
            if parent is not None and (nearest is None or nearest.owner < len(bullets)):
                section = trim("\n".join(raw[parent]["lines"]))
            else:
                section = nearest.text if nearest else ""
            raw.append(
                {
                    "release": len(releases) - 1 if releases else None,
                    "line": number,
                    "depth": len(bullets),
                    "section": section,
                    "heading": nearest.text if nearest else "",
                    "headings": [item.text for item in headings],
                    "lines": [body],
                    "indent": content_indent,
                }
            )
            bullets.append(_Bullet(marker, content_indent, len(raw) - 1))
            blank = False
            continue
        _close_for_text(bullets, indent, blank)
        if bullets:
            raw[bullets[-1].entry]["lines"].append(line)
        else:  # a paragraph's line: a heading if the next line underlines it
            paragraph = (number, line.strip())
        blank = False
    if not releases:
        raise ChangelogError(
            f"{where}: no release heading (a heading such as '## [1.2.3] - 2024-01-02', '## 1.2.3 (2024-01-02)' "
            "or '## v1.2.3'); not a Markdown changelog"
        )
    entries = tuple(_entry(item) for item in raw)
    formats = Counter(release.format for release in releases)
    return Changelog(
        tuple(releases), entries, {kind: formats.get(kind, 0) for kind in FORMATS}, styles_of(sections, entries)
    )


def styles_of(sections, entries) -> dict:
    """Section headings by style (a Keep a Changelog name, a release-please name, other; ⚠ and case
    ignored) and the entries written as Conventional Commits (``feat(x)!: ...``, ``**scope:** ...``)."""
    counts = Counter()
    for title in sections:
        name = title.replace(_WARNING_SIGN, "").replace("\ufe0f", "").strip(" :").lower()
        if name in KEEP_A_CHANGELOG_SECTIONS:
            counts["keep-a-changelog sections"] += 1
        elif name in RELEASE_PLEASE_SECTIONS:
            counts["release-please sections"] += 1
        else:
            counts["other sections"] += 1
    counts["conventional entries"] = sum(1 for entry in entries if _CONVENTIONAL.match(entry.content))
    return {style: counts.get(style, 0) for style in STYLES}


def _heading_of(line: str, paragraph: tuple | None) -> tuple | None:
    """(text, level, line number) if ``line`` is a ``#`` heading, or the underline of ``paragraph`` (the
    line just before it, outside bullets: a setext heading); else None."""
    heading = _HEADING.match(line)
    if heading:
        return (heading.group("text") or "").strip(), len(heading.group("hashes")), None
    underline = _SETEXT.match(line)
    if underline and paragraph is not None:
        return paragraph[1], 1 if underline.group("underline")[0] == "=" else 2, paragraph[0]
    return None


def _close_for_text(bullets: list, indent: int, blank: bool) -> None:
    """A text line (or a fence) continues the innermost bullet (no blank before it: a lazy continuation)
    or, after a blank, the innermost bullet it is indented into; the bullets it is not inside close."""
    if not blank:
        return
    while bullets and indent < bullets[-1].content_indent:
        bullets.pop()


def _entry(item: dict) -> Entry:
    lines = item["lines"]
    rest = [line.expandtabs(4) for line in lines[1:]]
    cut = min(item["indent"], min((len(line) - len(line.lstrip()) for line in rest if line.strip()), default=0))
    content = "\n".join([lines[0].strip(), *(line[cut:].rstrip() for line in rest)]).strip()
    markers = [name for heading in item["headings"] for name in heading_markers(heading)]
    markers += text_markers(content)
    ordered = tuple(name for name in MARKERS if name in markers)
    deprecated_heading = next((heading for heading in item["headings"] if "deprecat" in heading.lower()), "")
    level = entry_level(ordered, deprecated_heading, content)
    release = 0 if item["release"] is None else item["release"]
    return Entry(release, item["line"], item["depth"], item["section"], item["heading"], content, ordered, level)


def read_changelog(path: str) -> Changelog:
    """The parsed changelog of a file (gzip-compressed or not); a ChangelogError naming the file (and
    line) if it cannot be read, is not UTF-8 or has no release heading."""
    import gzip

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise ChangelogError(f"{path}: cannot read ({err.strerror or err})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise ChangelogError(f"{path}: not a readable gzip file ({err})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ChangelogError(f"{path}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x})") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ChangelogError(f"{path}:{line}: a NUL byte; not a Markdown text file")
    return parse_changelog(text.removeprefix("\ufeff"), where=path)
