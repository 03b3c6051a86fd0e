"""Episodes from a Markdown changelog (:mod:`wpbjax.episodes.importers.changelog`): one step per entry.

The entries in time order are one stream (releases oldest first — a changelog whose first dated release is
newer than its last is read bottom up, release by release; entries within a release in file order), ``t``
the entry's position. An episode is a window of ``steps`` consecutive steps, ``stride`` apart (default half
a window), the last ending at the stream's end (:func:`wpbjax.episodes.importers.real_drift.window_starts`), as for
real drift; its id is ``"NAME:STEPS:START"``. A step:

* observation ``{"section", "content", "last_updated", "release"}`` (the spec's Documentation observation:
  the entry's section, its text, its release's date or "", its release's version);
* metadata ``{"mode": "changelog", "priority", "source", "release", "date"}``; ``priority`` by level
  (breaking 1.0, warning 0.5, info 0.25: the changelog's own claim, which a client reading it could see);
* labels: ``critical_steps`` = breaking entries; ``utility_by_step`` =
  :data:`~wpbjax.episodes.importers.drift_labels.LEVEL_UTILITY` of the entry's level; ``total_drift_events`` = the
  breaking entries; ``max_utility`` their sum; ``facts`` = the entry's section as a fact whose value is
  its release's index (0 the oldest), to persist (a newer release's entry in a section supersedes it).

A *changelog spec* names a set for sweeps: ``changelog:NAME[:STEPS[:STRIDE]]``, NAME a shipped changelog
(:data:`SHIPPED`) or a Markdown file's path.
"""

from __future__ import annotations

import functools
import hashlib
import os

from wpbjax.episodes.importers.changelog import Changelog, ChangelogError, read_changelog
from wpbjax.episodes.importers.drift_labels import LEVEL_UTILITY
from wpbjax.episodes.importers.real_drift import window_episode, window_starts

DATA_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "changelog"
)
SHIPPED = {"stripe-python": "stripe-python.CHANGELOG.md.gz", "openai-python": "openai-python.CHANGELOG.md.gz"}
PREFIX = "changelog:"
MODE = "changelog"
DEFAULT_STEPS = 200  # as real drift's windows: 200 steps, stride 100


def is_changelog(spec) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def parse_spec(spec: str) -> dict:
    """``changelog:NAME[:STEPS[:STRIDE]]`` -> {name, path, steps, stride}."""
    parts = spec[len(PREFIX) :].split(":")
    numbers = []
    while len(parts) > 1 and len(numbers) < 2 and parts[-1].isdigit():
        numbers.insert(0, int(parts.pop()))
    name = ":".join(parts)
    steps, stride = (numbers + [None, None])[:2]
    return {"name": name, "path": changelog_path(name, spec), "steps": steps, "stride": stride}


def changelog_path(name: str, where: str | None = None) -> str:
    """The file of a shipped changelog (``stripe-python``) or a path to one; a ChangelogError naming what exists."""
    if name in SHIPPED:
        return os.path.join(DATA_DIR, SHIPPED[name])
    if os.path.isfile(name):
        return name
    raise ChangelogError(
        f"{where or name}: no shipped changelog {name!r} (shipped: {', '.join(SHIPPED)}) and no such Markdown file"
    )


def label_of(name: str) -> str:
    """The name episode ids start with: a shipped name, else the file's name up to its first dot."""
    return name if name in SHIPPED else os.path.basename(name).split(".")[0]


@functools.lru_cache(maxsize=4)
def _parsed(path: str, mtime: float) -> Changelog:
    return read_changelog(path)


def load_changelog(name_or_path: str) -> Changelog:
    """The parsed changelog of a shipped name or a path (cached per file and modification time)."""
    path = changelog_path(name_or_path)
    return _parsed(path, os.path.getmtime(path))


def chronological(changelog: Changelog) -> list[int]:
    """Release indices oldest first: file order reversed when the first dated release is newer than the last."""
    dated = [release.date for release in changelog.releases if release.date]
    order = list(range(len(changelog.releases)))
    return order[::-1] if dated and dated[0] > dated[-1] else order


def stream(changelog: Changelog, name: str) -> list[tuple]:
    """[(step dict, breaking, utility, fact)] of every entry in time order, ``t`` its position."""
    rank = {release: position for position, release in enumerate(chronological(changelog))}
    entries = sorted(changelog.entries, key=lambda entry: (rank[entry.release], entry.line))
    out = []
    for t, entry in enumerate(entries):
        release = changelog.releases[entry.release]
        step = {
            "t": t,
            "observation": {
                "section": entry.section,
                "content": entry.content,
                "last_updated": release.date,
                "release": release.version,
            },
            "metadata": {
                "mode": MODE,
                "priority": LEVEL_UTILITY[entry.level],
                "source": name,
                "release": release.version,
                "date": release.date,
            },
        }
        fact = [entry.section, rank[entry.release], True]
        out.append((step, entry.level == "breaking", LEVEL_UTILITY[entry.level], fact))
    return out


def episodes(name: str, steps: int = DEFAULT_STEPS, stride: int | None = None) -> list[dict]:
    """The windows of a changelog (shipped name or path) as dict episodes (module note)."""
    label = label_of(name)
    return _windows(_stream(changelog_path(name), label), label, steps, stride, name)


def episodes_of(changelog: Changelog, label: str, steps: int = DEFAULT_STEPS, stride: int | None = None) -> list[dict]:
    """The windows of a parsed changelog as dict episodes, ids ``"LABEL:STEPS:START"``."""
    return _windows(stream(changelog, label), label, steps, stride, label)


def _windows(steps_all, label: str, steps: int, stride: int | None, where: str) -> list[dict]:
    if steps < 1 or (stride is not None and stride < 1):
        raise ValueError(f"steps and stride must be >= 1; got {steps}, {stride}")
    if not steps_all:
        raise ChangelogError(f"{where}: the changelog has release headings but no entries (bullets)")
    stride = stride or max(steps // 2, 1)
    return [
        window_episode(steps_all[start : start + steps], f"{label}:{steps}:{start}", MODE)
        for start in window_starts(len(steps_all), steps, stride)
    ]


@functools.lru_cache(maxsize=4)
def _stream_cached(path: str, mtime: float, label: str) -> tuple:
    return tuple(stream(_parsed(path, mtime), label))


def _stream(path: str, label: str) -> tuple:
    return _stream_cached(path, os.path.getmtime(path), label)


def load_spec(spec: str) -> list[dict]:
    """The dict episodes a changelog spec names."""
    options = parse_spec(spec)
    name = options["name"] if options["name"] in SHIPPED else options["path"]
    return episodes(name, steps=options["steps"] or DEFAULT_STEPS, stride=options["stride"])


def spec_sha256(spec: str) -> str:
    """SHA-256 of the changelog file a spec reads (what a sweep's sidecar records)."""
    with open(parse_spec(spec)["path"], "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()
