"""Markdown changelogs (wpbjax/episodes/importers/changelog.py, changelog_episode.py, changelog_shipped.py): each format
and marker on a hand-made changelog with the exact breaking set, the episode stream and its labels, the shipped
changelogs against their sidecars (and rebuilt byte for byte where the mirrors are), sweeps of
``changelog:`` specs, and the import command's bad-input exits."""

from __future__ import annotations

import gzip
import hashlib
import json
import os

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.importers import changelog_episode, changelog_shipped
from wpbjax.episodes.importers.changelog import (
    MARKERS,
    ChangelogError,
    parse_changelog,
    read_changelog,
    release_of_heading,
)
from wpbjax.episodes.jsonl import load_jsonl
from wpbjax.episodes.source import EpisodeSource, episode_file_sha256
from wpbjax.episodes.validate import validate_episode

KEEP_A_CHANGELOG = """# Changelog

All notable changes to this project are documented here.

## [Unreleased]
### Added
- Add `new` option

## [1.1.0] - 2024-02-01
### Added
- Add `foo` endpoint
### Deprecated
- The `bar` parameter is deprecated
- Old `baz` flag
### Removed
- Remove `qux` endpoint
  (it was unused)
### Fixed
- Fix a crash

## [1.0.0] - 2024-01-02
### Changed
- Change the default timeout
### Security
- Patch a header injection

[Unreleased]: https://example.com/compare/v1.1.0...HEAD
[1.1.0]: https://example.com/compare/v1.0.0...v1.1.0
"""

RELEASE_PLEASE = """# Changelog

## [2.0.0](https://github.com/o/r/compare/v1.9.0...v2.0.0) (2024-03-05)


### ⚠ BREAKING CHANGES

* **api:** drop the `legacy` client

### Features

* **api:** add streaming ([#12](https://github.com/o/r/issues/12)) ([abc1234](https://github.com/o/r/commit/abc1234))
* feat!: rename `Client.send` to `Client.post`

### Bug Fixes

* fix(api)!: reject empty ids
* fix: handle timeouts

## 1.9.0 (2024-02-01)

### Features

* add retries
"""

VENDOR = """Intro prose before any heading
* Entry before any heading

## v3.1.0 (2024-05-01)
* Make `x` required (breaking change)
* [Breaking] Drop Python 3.8
* BREAKING: rename `a`
* BREAKING CHANGE: remove `b`
* ⚠️ Change `c` to optional
* ⚠ Remove `d`
* [#99](https://example.com/pull/99) ⚠️ Remove `e`
* Add `f`
  * ⚠️ Remove nested `g`
    - nested deeper `h`
  * Add nested `i`
+ This is not a breaking change
- Non-breaking: tweak

## 3.0.0 - 2024-04-01
* Initial release
"""

# stripe-python's shapes: headings indented inside a release's one bullet, fenced code, ⚠️ sections
INDENTED = """## 2.0.0 - 2024-06-01
* [#5](https://example.com/pull/5) Big release

  This release pins API version 2024-06-01.

  ### ⚠️ Breaking changes

  * Remove `old`
  * Rename `a` to `b`
    ```python
    # not a heading
    - not a bullet
    ```

  ### Additions
  * Add `new`
* Top-level after
### ⚠️ Changed
- Dropped Python 3.7
### Deprecated
- Deprecate `save`
"""


def breaking(changelog) -> dict:
    """{content: markers} of the breaking entries."""
    return {entry.content: entry.markers for entry in changelog.entries if entry.level == "breaking"}


def test_keep_a_changelog():
    changelog = parse_changelog(KEEP_A_CHANGELOG)
    assert [(r.version, r.date, r.format) for r in changelog.releases] == [
        ("Unreleased", "", "keep-a-changelog"),
        ("1.1.0", "2024-02-01", "keep-a-changelog"),
        ("1.0.0", "2024-01-02", "keep-a-changelog"),
    ]
    # Removed counts as breaking: removing a public thing breaks its users; the link definitions are not entries
    assert breaking(changelog) == {"Remove `qux` endpoint\n(it was unused)": ("section-removed",)}
    levels = {entry.content: entry.level for entry in changelog.entries}
    assert levels["The `bar` parameter is deprecated"] == levels["Old `baz` flag"] == "warning"  # the section
    assert levels["Fix a crash"] == levels["Add `new` option"] == "info"
    assert len(changelog.entries) == 8 and changelog.entries[0].release == 0
    assert changelog.styles["keep-a-changelog sections"] == 7 and changelog.formats["keep-a-changelog"] == 3


def test_release_please():
    changelog = parse_changelog(RELEASE_PLEASE)
    assert [(r.version, r.date, r.format) for r in changelog.releases] == [
        ("2.0.0", "2024-03-05", "release-please"),
        ("1.9.0", "2024-02-01", "release-please"),
    ]
    assert breaking(changelog) == {
        "**api:** drop the `legacy` client": ("section-breaking", "section-warning-sign"),
        "feat!: rename `Client.send` to `Client.post`": ("bang",),
        "fix(api)!: reject empty ids": ("bang",),
    }
    sections = {entry.content: entry.section for entry in changelog.entries}
    assert sections["fix: handle timeouts"] == "Bug Fixes" and sections["add retries"] == "Features"
    assert changelog.styles == {
        "keep-a-changelog sections": 0,
        "release-please sections": 4,
        "other sections": 0,
        "conventional entries": 5,  # the two **api:** entries, feat!, fix(api)!, fix:
    }


def test_vendor_markers_nesting_and_an_entry_before_any_heading():
    changelog = parse_changelog(VENDOR)
    assert [(r.version, r.date, r.format) for r in changelog.releases] == [
        ("3.1.0", "2024-05-01", "plain"),
        ("3.0.0", "2024-04-01", "plain"),
    ]
    assert breaking(changelog) == {
        "Make `x` required (breaking change)": ("text-paren",),
        "[Breaking] Drop Python 3.8": ("text-bracket",),
        "BREAKING: rename `a`": ("text-breaking-colon",),
        "BREAKING CHANGE: remove `b`": ("text-breaking-change",),
        "⚠️ Change `c` to optional": ("leading-warning-sign",),
        "⚠ Remove `d`": ("leading-warning-sign",),  # without the variation selector
        "[#99](https://example.com/pull/99) ⚠️ Remove `e`": ("leading-warning-sign",),  # after the PR link
        "⚠️ Remove nested `g`": ("leading-warning-sign",),
    }
    by_content = {entry.content: entry for entry in changelog.entries}
    first = by_content["Entry before any heading"]
    assert first.release == 0 and first.line == 2  # the first release's; the prose before it is no entry
    assert len(changelog.entries) == 15
    nested, deeper = by_content["⚠️ Remove nested `g`"], by_content["nested deeper `h`"]
    assert (nested.depth, nested.section, nested.release) == (1, "Add f", 0)
    assert (deeper.depth, deeper.section, deeper.level) == (2, "⚠️ Remove nested g", "info")  # not inherited
    assert by_content["Non-breaking: tweak"].level == by_content["This is not a breaking change"].level == "info"


def test_indented_headings_fences_and_warning_sign_sections():
    changelog = parse_changelog(INDENTED)
    rows = [(entry.content.splitlines()[0], entry.section, entry.level, entry.markers) for entry in changelog.entries]
    assert rows == [
        ("[#5](https://example.com/pull/5) Big release", "", "info", ()),
        ("Remove `old`", "⚠️ Breaking changes", "breaking", ("section-breaking", "section-warning-sign")),
        ("Rename `a` to `b`", "⚠️ Breaking changes", "breaking", ("section-breaking", "section-warning-sign")),
        ("Add `new`", "Additions", "info", ()),
        ("Top-level after", "", "info", ()),  # the headings inside #5 closed with it
        ("Dropped Python 3.7", "⚠️ Changed", "breaking", ("section-warning-sign",)),
        ("Deprecate `save`", "Deprecated", "warning", ()),
    ]
    big, rename = changelog.entries[0], changelog.entries[2]
    assert big.content.splitlines()[1:] == ["This release pins API version 2024-06-01."]
    assert rename.content.splitlines()[1:] == ["```python", "# not a heading", "- not a bullet", "```"]


def test_release_headings():
    assert release_of_heading("[1.2.3] - 2024-01-02") == ("1.2.3", "2024-01-02", "keep-a-changelog")
    assert release_of_heading("[Unreleased]") == ("Unreleased", "", "keep-a-changelog")
    assert release_of_heading("1.2.3 (2024-01-02)") == ("1.2.3", "2024-01-02", "release-please")
    assert release_of_heading("[1.2.3](https://x/compare/a...b) (2024-01-02)") == (
        "1.2.3",
        "2024-01-02",
        "release-please",
    )
    assert release_of_heading("v1.2.3 (2024-01-02)") == ("1.2.3", "2024-01-02", "plain")
    assert release_of_heading("1.2.3 - 2024-01-02") == ("1.2.3", "2024-01-02", "plain")
    assert release_of_heading("1.2.3", level=1) == ("1.2.3", "", "plain")
    assert release_of_heading("2.0.0-rc.1 - 2024-01-02") == ("2.0.0-rc.1", "2024-01-02", "plain")
    assert (
        release_of_heading("2024-01-02") == release_of_heading("[2024-01-02]") == ("2024-01-02", "2024-01-02", "plain")
    )
    assert release_of_heading("Features") is None and release_of_heading("2FA support") is None
    assert release_of_heading("2.0 migration notes", level=3) is None  # deeper than ## and words, no date
    with pytest.raises(ChangelogError, match="no release heading"):
        parse_changelog("# Notes\n\n* a bullet\n", where="notes.md")


# underlined (setext) release headings that name the date first, products as short bold labels: the shape of
# a generated "changes" file (twilio-oai's CHANGES.md); "Notes" underlined with = is a section (no release)
SETEXT = """project changelog
=================

[2024-03-05] Version 1.2.0
--------------------------
**Api**
- Remove `carrier` from the lookup response **(breaking change)**
- Add `risk` to the lookup response

**Library - Fix**
- Retry on 503

[2024-02-20] Version 1.1.1
--------------------------
Notes
=====
- Minor updates
"""


def test_setext_headings_dated_versions_and_bold_labels():
    changelog = parse_changelog(SETEXT)
    assert [release[:3] for release in changelog.releases] == [("1.2.0", "2024-03-05", 4), ("1.1.1", "2024-02-20", 13)]
    rows = [(entry.release, entry.section, entry.level) for entry in changelog.entries]
    assert rows == [
        (0, "Api", "breaking"),
        (0, "Api", "info"),
        (0, "Library - Fix", "info"),  # a bold label closes the one before it
        (1, "Notes", "info"),
    ]
    assert changelog.entries[0].markers == ("text-paren",)
    assert release_of_heading("[2024-03-05] Version 1.2.0") == ("1.2.0", "2024-03-05", "plain")
    # a long bold sentence is prose, not a label
    long_bold = "## 1.0.0\n**Warning: the change in this release likely affects you, read this**\n- entry\n"
    assert parse_changelog(long_bold).entries[0].section == ""


def test_stream_is_chronological_with_labels():
    changelog = parse_changelog(KEEP_A_CHANGELOG)
    (episode,) = changelog_episode.episodes_of(changelog, "kac")
    validate_episode(episode, "kac")
    steps = episode["steps"]
    # releases oldest first (1.0.0, 1.1.0, Unreleased), entries in file order within each
    assert [step["observation"]["release"] for step in steps] == ["1.0.0"] * 2 + ["1.1.0"] * 5 + ["Unreleased"]
    assert steps[5]["observation"] == {
        "section": "Removed",
        "content": "Remove `qux` endpoint\n(it was unused)",
        "last_updated": "2024-02-01",
        "release": "1.1.0",
    }
    assert steps[5]["metadata"] == {
        "mode": "changelog",
        "priority": 1.0,
        "source": "kac",
        "release": "1.1.0",
        "date": "2024-02-01",
    }
    labels = episode["labels"]
    assert labels["critical_steps"] == [5] and labels["total_drift_events"] == 1
    # info 0.25 x 5 (default, patch, foo, crash, new option) + warning 0.5 x 2 + breaking 1.0
    assert labels["utility_by_step"]["3"] == 0.5 and labels["max_utility"] == pytest.approx(5 * 0.25 + 2 * 0.5 + 1.0)
    assert labels["facts"]["5"] == [["Removed", 1, True]] and labels["facts"]["7"] == [["Added", 2, True]]
    assert labels["episode_id"] == "kac:200:0"


def test_windows_like_real_drift(tmp_path):
    path = tmp_path / "vendor.md"
    path.write_text(VENDOR, encoding="utf-8")
    episodes = changelog_episode.load_spec(
        f"changelog:{path}:6:4"
    )  # 15 entries: starts 0, 4, 8, then 9 (the last window ends at the end)
    assert [episode["labels"]["episode_id"] for episode in episodes] == [f"vendor:6:{s}" for s in (0, 4, 8, 9)]
    assert changelog_episode.parse_spec(f"changelog:{path}:6") == {
        "name": os.fspath(path),
        "path": os.fspath(path),
        "steps": 6,
        "stride": None,
    }
    with pytest.raises(ChangelogError, match="no shipped changelog 'nope'"):
        changelog_episode.parse_spec("changelog:nope")


@pytest.mark.parametrize("name", sorted(changelog_episode.SHIPPED))
def test_shipped_changelog_matches_its_sidecar(name):
    path = changelog_episode.changelog_path(name)
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path + ".meta.json", encoding="utf-8") as handle:
        meta = json.load(handle)
    assert meta["sha256"] == hashlib.sha256(data).hexdigest() == episode_file_sha256(f"changelog:{name}")
    assert meta["counts"] == changelog_shipped.counts(gzip.decompress(data).decode("utf-8"))
    assert data[4:8] == b"\0\0\0\0"  # gzip mtime 0
    with open(os.path.join(changelog_episode.DATA_DIR, f"{name}.NOTICE"), encoding="utf-8") as handle:
        notice = handle.read()
    assert meta["commit"] in notice and notice.endswith(meta["licence_text"])
    assert meta["licence"] in ("MIT", "Apache-2.0") and meta["source"].startswith("https://github.com/")


def test_shipped_counts():
    """Figures of the shipped files, read by the parser (docs/changelogs.md quotes them)."""
    stripe, openai = (changelog_episode.load_changelog(name) for name in ("stripe-python", "openai-python"))
    assert (len(stripe.releases), len(stripe.entries), stripe.level_counts["breaking"]) == (356, 1922, 219)
    assert (len(openai.releases), len(openai.entries), openai.level_counts["breaking"]) == (341, 947, 3)
    assert stripe.formats["plain"] == 356 and openai.formats["release-please"] == 341


MIRRORS = {
    "stripe-python": "/work/.mirror/stripe+stripe-python/repo",
    "openai-python": "/work/.mirror/openai+openai-python/repo",
}


@pytest.mark.parametrize("name", sorted(MIRRORS))
def test_shipped_changelog_rebuilds_byte_for_byte(name, tmp_path):
    if not os.path.isdir(MIRRORS[name]):
        pytest.skip(f"no clone of {name} here")
    written = changelog_shipped.rebuild(name, MIRRORS[name], os.fspath(tmp_path))
    assert len(written) == 3
    for path in written:
        with (
            open(path, "rb") as new,
            open(os.path.join(changelog_episode.DATA_DIR, os.path.basename(path)), "rb") as old,
        ):
            assert new.read() == old.read(), path


def test_shipped_windows_validate_encode_and_record():
    episodes = changelog_episode.load_spec("changelog:stripe-python")
    assert len(episodes) == 19  # 1,922 entries: starts 0, 100, ..., 1700, then 1722
    for episode in episodes:
        validate_episode(episode, episode["labels"]["episode_id"])
        labels = episode["labels"]
        top = [step["t"] for step in episode["steps"] if step["metadata"]["priority"] == 1.0]
        assert labels["critical_steps"] == top and labels["total_drift_events"] == len(top)
    stream = changelog_episode.stream(changelog_episode.load_changelog("stripe-python"), "stripe-python")
    assert sum(breaking for _, breaking, _, _ in stream) == 219
    tiling = [episode for episode in episodes if episode["steps"][0]["t"] % 200 == 0]  # 0, 200, ..., 1600
    assert sum(len(episode["labels"]["critical_steps"]) for episode in tiling) == sum(
        breaking for _, breaking, _, _ in stream[:1800]
    )
    dates = [step["metadata"]["date"] for step, _, _, _ in stream]
    assert dates == sorted(dates)  # oldest first
    encoded = encode_episodes(episodes, source="changelog:stripe-python")
    assert encoded.n_episodes == 19 and np.all(encoded.arrays.fact_pair[:, :, 0] >= 0)
    source = EpisodeSource.from_files(["changelog:openai-python:1000"])
    record = source.to_dict()
    assert record["files"] == [
        {"path": "changelog:openai-python:1000", "sha256": episode_file_sha256("changelog:openai-python")}
    ]
    assert EpisodeSource.from_dict(record).load().n_episodes == 1
    record["files"][0]["sha256"] = "0" * 64
    with pytest.raises(ValueError, match="changelog changed since the sweep"):
        EpisodeSource.from_dict(record).load()


def test_cli_sweep_of_a_shipped_changelog(tmp_path):
    out = tmp_path / "changelog.csv"
    assert main(["sweep", "--episodes", "changelog:stripe-python", "--policies", "always_write", "--budgets", "1024",
                 "--tracks", "unprivileged", "--out", os.fspath(out), "--quiet"]) == 0  # fmt: skip
    table = pd.read_csv(out)
    assert len(table) == 19 and table["episode_id"].str.startswith("stripe-python:200:").all()
    assert (table["mode"] == "changelog").all() and np.isfinite(table["f1"]).all()


def test_cli_import_changelog(tmp_path, capsys):
    source = tmp_path / "CHANGELOG.md"
    source.write_text(VENDOR, encoding="utf-8")
    out = tmp_path / "episodes.jsonl.gz"
    assert main(["import-changelog", os.fspath(source), "--out", os.fspath(out), "--steps", "6", "--stride", "4"]) == 0
    err = capsys.readouterr().err
    assert "release headings: plain 2" in err and "15 entries: 8 breaking, 0 warning, 7 info" in err
    assert "text-paren 1" in err and "leading-warning-sign 4" in err and "wrote 4 episodes" in err
    assert [e["labels"]["episode_id"] for e in load_jsonl(out)] == [f"CHANGELOG:6:{s}" for s in (0, 4, 8, 9)]
    sweep_out = tmp_path / "r.csv"
    assert main(["sweep", "--episodes", os.fspath(out), "--policies", "always_write", "--budgets", "1024",
                 "--tracks", "unprivileged", "--out", os.fspath(sweep_out), "--quiet"]) == 0  # fmt: skip
    assert len(pd.read_csv(sweep_out)) == 4


def _fails(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_cli_import_changelog_bad_input(tmp_path, capsys):
    prose = tmp_path / "notes.md"
    prose.write_text("# Notes\n\n* a bullet\n", encoding="utf-8")
    latin = tmp_path / "latin.md"
    latin.write_bytes(b"## 1.0.0\n* caf\xe9\n")
    out = os.fspath(tmp_path / "out.jsonl")
    assert "notes.md: no release heading" in _fails(capsys, ["import-changelog", os.fspath(prose), "--out", out])
    assert "latin.md:2: not UTF-8" in _fails(capsys, ["import-changelog", os.fspath(latin), "--out", out])
    missing = os.fspath(tmp_path / "missing.md")
    assert "missing.md: no shipped changelog" in _fails(capsys, ["import-changelog", missing, "--out", out])
    assert "would overwrite" in _fails(capsys, ["import-changelog", os.fspath(prose), "--out", os.fspath(prose)])
    bad_dir = os.fspath(tmp_path / "no" / "out.jsonl")
    assert "does not exist" in _fails(capsys, ["import-changelog", os.fspath(prose), "--out", bad_dir])
    assert not os.path.exists(out)
    empty = tmp_path / "empty.md"
    empty.write_text("## 1.0.0 - 2024-01-01\n\nNo bullets here.\n", encoding="utf-8")
    assert "no entries" in _fails(capsys, ["import-changelog", os.fspath(empty), "--out", out])
    with pytest.raises(ChangelogError, match="not UTF-8"):
        read_changelog(os.fspath(latin))


def test_docs_list_every_marker():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "changelogs.md"), encoding="utf-8") as handle:
        doc = handle.read()
    for name, reason in MARKERS.items():
        assert f"| `{name}` | {reason} |" in doc, name
