"""A history's breaking labels against a changelog's (wpbjax/episodes/importers/agreement.py, ``wpbjax drift-agreement``):
hand-computed confusion matrices for both matching modes, ties, zero denominators, the shipped pair, bad inputs."""

from __future__ import annotations

import json
import os

import pytest

from wpbjax.cli import main
from wpbjax.episodes.importers import changelog_episode
from wpbjax.episodes.importers.agreement import (
    agreement,
    parse_match,
    read_history_lines,
    read_sidecar_versions,
    scores,
)
from wpbjax.episodes.importers.changelog import parse_changelog

CHANGELOG = """# Changelog

## 3.0.0 - 2024-03-09
* ⚠️ Remove `/v1/old`

## 2.1.0 - 2024-03-01
* Add `/v1/new`

## 2.0.0 - 2024-02-01
* BREAKING: rename `x`

## 1.1.0 - 2024-01-15
* Fix docs

## 1.0.0 - 2024-01-01
* Initial
"""


def line(version, date, api_version, breaking, endpoint="GET /v1/a", kind="param_added"):
    return {
        "version": version,
        "date": f"{date}T10:00:00Z",
        "api_version": api_version,
        "endpoint": endpoint,
        "breaking": breaking,
        "changes": [{"kind": kind, "glitch": False}],
    }


# spec versions: index, date, info.version, breaking lines
HISTORY = [
    line(0, "2024-01-01", "1.0.0", False, kind="endpoint_added"),
    line(1, "2024-01-16", "v1.1.0", True, "DELETE /v1/a", "endpoint_removed"),  # "v" ignored
    line(1, "2024-01-16", "v1.1.0", False, "GET /v1/b"),
    line(2, "2024-02-03", "2.0.0", False),
    line(3, "2024-03-05", " 2.1.0 ", True, "POST /v1/c", "param_required"),  # 4 days from 2.1.0 and from 3.0.0
    line(4, "2024-03-09", "3.0.0", True, "GET /v1/old", "endpoint_removed"),
    line(5, "2024-06-01", "9.9.9", True, "GET /v1/z", "endpoint_removed"),  # no such release, no date near
]


@pytest.fixture()
def changelog():
    return parse_changelog(CHANGELOG)


def counts(result) -> tuple:
    return result.tp, result.fp, result.fn, result.tn


def test_version_matching(changelog):
    # changelog breaking: 3.0.0, 2.0.0. By version string: 1.0.0 <- v0 (no), 1.1.0 <- v1 (yes): fp,
    # 2.0.0 <- v2 (no): fn, 2.1.0 <- v3 (yes): fp, 3.0.0 <- v4 (yes): tp; 1.0.0: tn; v5 matches nothing
    result = agreement(changelog, HISTORY, "version")
    assert counts(result) == (1, 2, 1, 1)
    assert (result.scored, result.unmatched_releases, result.unmatched_versions) == (5, 0, 1)
    assert result.precision == pytest.approx(1 / 3) and result.recall == 0.5
    assert result.f1 == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))  # 0.4
    assert result.base_rate == pytest.approx(2 / 5)
    assert [(row.version, row.changelog_breaking) for row in result.disagreements] == [
        ("2.1.0", False),
        ("2.0.0", True),
        ("1.1.0", False),
    ]
    fp = result.disagreements[2]
    assert fp.history_lines == ("DELETE /v1/a: endpoint_removed",) and fp.history_versions == (1,)
    assert result.disagreements[1].changelog_entries == ("BREAKING: rename `x`",)
    # the default: some release version equals some api_version
    assert agreement(changelog, HISTORY) == result._replace(match_default=True)


def test_date_matching(changelog):
    # ±3 days: v0 -> 1.0.0 (0 d), v1 -> 1.1.0 (1 d), v2 -> 2.0.0 (2 d), v3 none (4 d either side), v4 ->
    # 3.0.0 (0 d), v5 none: 1.0.0 tn, 1.1.0 fp, 2.0.0 fn, 3.0.0 tp; 2.1.0 unmatched
    three = agreement(changelog, HISTORY, "date:3")
    assert counts(three) == (1, 1, 1, 1) and three.match == "date:3"
    assert (three.scored, three.unmatched_releases, three.unmatched_versions) == (4, 1, 2)
    assert (three.precision, three.recall, three.f1, three.base_rate) == (0.5, 0.5, 0.5, 0.5)
    # ±7 days: v3 is 4 days from 2.1.0 and from 3.0.0, a tie: to the later release, 3.0.0 (still tp); had
    # it gone to 2.1.0, that release would be a fp
    seven = agreement(changelog, HISTORY, "date:7")
    assert counts(seven) == (1, 1, 1, 1) and seven.unmatched_versions == 1
    tp = [row for row in seven.disagreements if row.version == "3.0.0"]
    assert tp == []
    # without api_version (the older history format) the default is date:7
    old = [{key: value for key, value in item.items() if key != "api_version"} for item in HISTORY]
    default = agreement(changelog, old)
    assert default.match == "date:7" and default.match_default and counts(default) == counts(seven)


def test_sidecar_commits_that_changed_nothing_are_scored(changelog, tmp_path):
    """With the sidecar's every readable commit, a release whose commits changed nothing in the surface is a
    true negative (or a false negative), not unmatched."""
    # date:3 on the lines alone: 2.1.0 (2024-03-01) is unmatched (v3 is 4 days away). The sidecar adds a
    # commit on 2024-03-02 that changed nothing (index null): 2.1.0 is matched by it alone, nothing breaking
    # on either side: a tn. And a no-change commit on 2024-02-01 joins 2.0.0 beside v2: still a fn.
    commits = [
        ["c0", "2024-01-01T10:00:00Z", "1.0.0", 0],
        ["c1", "2024-01-16T10:00:00Z", "v1.1.0", 1],
        ["c1b", "2024-02-01T09:00:00Z", "1.1.0", None],
        ["c2", "2024-02-03T10:00:00Z", "2.0.0", 2],
        ["c2b", "2024-03-02T10:00:00Z", "2.0.0", None],
        ["c3", "2024-03-05T10:00:00Z", " 2.1.0 ", 3],
        ["c4", "2024-03-09T10:00:00Z", "3.0.0", 4],
        ["c5", "2024-06-01T10:00:00Z", "9.9.9", 5],
    ]
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(item) + "\n" for item in HISTORY), encoding="utf-8")
    assert read_sidecar_versions(os.fspath(history)) is None  # no sidecar: the lines' versions
    (tmp_path / "h.jsonl.meta.json").write_text(json.dumps({"versions": commits}), encoding="utf-8")
    assert read_sidecar_versions(os.fspath(history)) == commits
    three = agreement(changelog, HISTORY, "date:3", commits)
    # 1.0.0 <- c0: tn; 1.1.0 <- c1: fp; 2.0.0 <- c1b (1 d), c2 (2 d): fn; 2.1.0 <- c2b (1 d): tn; 3.0.0 <- c4: tp
    assert counts(three) == (1, 1, 1, 2) and (three.scored, three.unmatched_releases) == (5, 0)
    assert (three.history_versions, three.unmatched_versions) == (8, 2)  # c3 (4 d either side), c5
    fn = [row for row in three.disagreements if row.version == "2.0.0"]
    assert fn[0].history_versions == (2,)  # the no-change commit has no version index
    # by version: c1b ("1.1.0") joins 1.1.0 and c2b ("2.0.0") joins 2.0.0; the matrix stays (1, 2, 1, 1)
    assert counts(agreement(changelog, HISTORY, "version", commits)) == (1, 2, 1, 1)
    # the CLI reads the sidecar beside the history
    assert main(["drift-agreement", os.fspath(history), "--changelog", "-", "--match", "date:3"]) == 2
    changelog_file = tmp_path / "CHANGELOG.md"
    changelog_file.write_text(CHANGELOG, encoding="utf-8")
    assert (
        main(
            [
                "drift-agreement",
                os.fspath(history),
                "--changelog",
                os.fspath(changelog_file),
                "--json",
                "--match",
                "date:3",
            ]
        )
        == 0
    )
    (tmp_path / "h.jsonl.meta.json").write_text('{"versions": [["c0", "someday", "1.0.0", 0]]}', encoding="utf-8")
    with pytest.raises(ValueError, match="h.jsonl.meta.json: 'versions' entry 0 is not"):
        read_sidecar_versions(os.fspath(history))


def test_releases_outside_the_history_are_left_out(changelog):
    """Releases dated outside the history's first..last commit (widened by DAYS) are neither scored nor
    unmatched: here the history covers only January 2024."""
    january = [item for item in HISTORY if item["version"] <= 1]  # 2024-01-01 .. 2024-01-16
    result = agreement(changelog, january, "date:3")
    # 1.0.0 <- v0 (tn), 1.1.0 <- v1 (fp); 2.0.0 (2024-02-01) is 16 days after the last commit: outside, as
    # are 2.1.0 and 3.0.0
    assert counts(result) == (0, 1, 0, 1) and (result.unmatched_releases, result.outside_releases) == (0, 3)
    # ±20 days reaches 2024-02-05: 2.0.0 now lies within (v1 is 16 days from it, but 1.1.0 is nearer: unmatched)
    wide = agreement(changelog, january, "date:20")
    assert (wide.scored, wide.unmatched_releases, wide.outside_releases) == (2, 1, 2)
    undated = parse_changelog("## 1.0.0\n* a\n## 0.9.0 - 2024-01-01\n* b\n")
    assert agreement(undated, january, "date:3").outside_releases == 1  # 1.0.0 has no date: it cannot lie within


def test_zero_denominators():
    quiet = parse_changelog("## 1.0.0 - 2024-01-01\n* Add a thing\n")
    result = agreement(quiet, [line(0, "2024-01-02", "", False)], "date:7")
    assert counts(result) == (0, 0, 0, 1)
    assert (result.precision, result.recall, result.f1, result.base_rate) == (None, None, None, 0.0)
    assert scores(0, 0, 0, 0) == {"precision": None, "recall": None, "f1": None, "base_rate": None}
    json.dumps(result.to_dict())  # None, not NaN: valid JSON


def test_parse_match():
    assert parse_match("version") == ("version", None) and parse_match("date:0") == ("date", 0)
    assert parse_match(None) is None
    for bad in ("date", "date:-1", "dates:3", "Version"):
        with pytest.raises(ValueError, match="--match"):
            parse_match(bad)


def test_cli_on_the_shipped_pair(capsys):
    assert main(["drift-agreement", "real:stripe", "--changelog", "changelog:stripe-python", "--match", "date:7"]) == 0
    text = capsys.readouterr().out
    commits = read_sidecar_versions("real:stripe")  # every readable commit, those that changed nothing too
    assert commits is not None and any(index is None for *_, index in commits)
    expected = agreement(
        changelog_episode.load_changelog("stripe-python"), read_history_lines("real:stripe"), "date:7", commits
    )
    assert "real:stripe against changelog:stripe-python, matched by date:7\n" in text
    assert (
        f"{expected.scored:,} of 356 releases scored ({expected.unmatched_releases:,} unmatched releases within the "
        f"history's dates, {expected.outside_releases:,} outside them)" in text
    )
    # stripe-python's releases run 2011 .. 2026, the history 2017 .. 2023: most of the rest lie outside it
    assert expected.outside_releases > expected.unmatched_releases > 0
    assert expected.scored + expected.unmatched_releases + expected.outside_releases == 356
    assert (
        f"tp {expected.tp}  fp {expected.fp} (history only)  fn {expected.fn} (changelog only)  tn {expected.tn}"
        in text
    )
    assert f"precision {expected.precision:.3f}  recall {expected.recall:.3f}" in text
    assert expected.tp + expected.fp + expected.fn + expected.tn == expected.scored > 0
    assert main(["drift-agreement", "real:stripe", "--changelog", "changelog:stripe-python", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["match"] == "date:7" and record["match_default"] is True  # Stripe's info.version is a date
    assert record["tp"] == expected.tp and len(record["disagreements"]) == len(expected.disagreements)


def _fails(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_cli_bad_inputs(tmp_path, capsys):
    good_changelog = tmp_path / "CHANGELOG.md"
    good_changelog.write_text(CHANGELOG, encoding="utf-8")
    good_history = tmp_path / "history.jsonl"
    good_history.write_text("".join(json.dumps(item) + "\n" for item in HISTORY), encoding="utf-8")
    assert main(["drift-agreement", os.fspath(good_history), "--changelog", os.fspath(good_changelog)]) == 0
    assert "tp 1  fp 2" in capsys.readouterr().out
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"version": 0, "date": "2024-01-01", "breaking": false}\nnot json\n', encoding="utf-8")
    assert "garbage.jsonl:2: not a JSON line" in _fails(
        capsys, ["drift-agreement", os.fspath(garbage), "--changelog", os.fspath(good_changelog)]
    )
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text('{"version": 0, "date": "2024-01-01"}\n', encoding="utf-8")
    assert "unlabelled.jsonl:1: 'breaking' must be true or false" in _fails(
        capsys, ["drift-agreement", os.fspath(unlabelled), "--changelog", os.fspath(good_changelog)]
    )
    assert "no shipped real history 'nope'" in _fails(
        capsys, ["drift-agreement", "real:nope", "--changelog", os.fspath(good_changelog)]
    )
    prose = tmp_path / "notes.md"
    prose.write_text("# Notes\n* a bullet\n", encoding="utf-8")
    assert "notes.md: no release heading" in _fails(
        capsys, ["drift-agreement", os.fspath(good_history), "--changelog", os.fspath(prose)]
    )
    assert "--match" in _fails(
        capsys, ["drift-agreement", os.fspath(good_history), "--changelog", os.fspath(good_changelog), "--match", "x"]
    )
    assert "no shipped changelog" in _fails(
        capsys, ["drift-agreement", os.fspath(good_history), "--changelog", "changelog:nope"]
    )
