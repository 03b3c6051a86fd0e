"""``wpbjax report`` on every table a sweep writes (oracle and feedback tracks, ``--param`` grids), built
atomically: a failed report leaves no report-looking files and an existing report as it was."""

import os

import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.reports import plots

TINY = ["--n-episodes", "2", "--steps", "20", "--modes", "default", "--quiet"]


@pytest.fixture(scope="module")
def tracks_sweep(tmp_path_factory):
    """A sweep with a policy on each of the unprivileged, oracle and feedback tracks."""
    out = tmp_path_factory.mktemp("tracks") / "w.csv"
    assert (
        main(
            [
                "sweep",
                *TINY,
                "--policies",
                "always_write,oracle_optimal,epsilon_greedy",
                "--tracks",
                "unprivileged,oracle,feedback",
                "--budgets",
                "256,1024",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def _listing(directory):
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


def test_every_track_a_sweep_accepts_is_reportable(tracks_sweep, tmp_path):
    out = tmp_path / "rep"
    assert main(["report", str(tracks_sweep), "--out", str(out), "--budget", "1024", "--quiet"]) == 0
    board = (out / "leaderboard.md").read_text()
    for track in ("unprivileged", "oracle", "feedback"):
        assert f"## Track: {track}" in board
    curve = pd.read_csv(out / "regret_curve.csv")
    assert set(curve["track"]) == {"unprivileged", "oracle", "feedback"}
    # the hindsight policy keeps the exact oracle's choice: no regret once the episode is over
    last = curve[curve["policy"] == "oracle_optimal"].iloc[-1]
    assert last["regret_mean"] == pytest.approx(0.0, abs=1e-9) and last["oracle_to_date_mean"] > 0
    assert sorted(os.listdir(tmp_path)) == ["rep"]  # no temporary directory left beside it


def test_a_failed_report_leaves_nothing_and_an_old_report_intact(tracks_sweep, tmp_path, monkeypatch, capsys):
    bare = tmp_path / "bare.csv"  # no sidecar: no regret curve, a quicker report
    bare.write_bytes(tracks_sweep.read_bytes())
    out = tmp_path / "rep"

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(plots, "f1_vs_budget", broken)  # the first figure: after every table was written
    assert main(["report", str(bare), "--out", str(out), "--quiet"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["bare.csv"]  # no report-looking files, no temporary directory
    out.mkdir()  # a previous report
    (out / "leaderboard.md").write_text("# Leaderboard of an earlier run\n")
    (out / "f1_vs_budget_grid.png").write_bytes(b"\x89PNG earlier")
    before = _listing(out)
    assert main(["report", str(bare), "--out", str(out), "--quiet"]) == 2
    assert _listing(out) == before and sorted(os.listdir(tmp_path)) == ["bare.csv", "rep"]


def test_a_report_replaces_only_a_report_and_never_holds_its_input(tracks_sweep, tmp_path, capsys):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "thesis.tex").write_text("mine")
    assert main(["report", str(tracks_sweep), "--out", str(other), "--quiet"]) == 2
    assert "holds other files than a previous report" in capsys.readouterr().err
    assert os.listdir(other) == ["thesis.tex"]
    assert main(["report", str(tracks_sweep), "--out", str(tracks_sweep.parent), "--quiet"]) == 2
    assert "an input of this report" in capsys.readouterr().err
    assert tracks_sweep.exists()


def test_a_report_directory_named_with_a_trailing_slash(tracks_sweep, tmp_path):
    # `wpbjax report results.csv --out report/` (as the README writes it): the directory report, built beside it
    out = str(tmp_path / "report") + "/"
    assert main(["report", str(tracks_sweep), "--out", out, "--quiet"]) == 0
    assert "leaderboard.md" in os.listdir(tmp_path / "report")
    assert sorted(os.listdir(tmp_path)) == ["report"]


def test_a_param_sweep_reports_one_row_per_grid_point(tmp_path, capsys):
    """2 episodes x 2 thresholds: two leaderboard rows of 2 episodes each, not one row of 4."""
    results = tmp_path / "grid.csv"
    assert (
        main(
            [
                "sweep",
                *TINY[:-1],
                "--policies",
                "priority_threshold,fifo_store_all",
                "--tracks",
                "privileged",
                "--budgets",
                "512,4096",
                "--param",
                "threshold=0.2,0.8",
                "--out",
                str(results),
            ]
        )
        == 0
    )
    rows = pd.read_csv(results)
    summary = capsys.readouterr().out.splitlines()  # the sweep's closing summary: a row per grid point too
    assert summary[0].startswith("Mean F1 by policy, grid point of the swept params and budget")
    at = rows[rows["budget_bytes"] == 512].groupby("param_threshold")["f1"].mean()
    assert [line.split()[-2] for line in summary if line.split()[-3:-2] in (["0.2"], ["0.8"])] == [
        f"{at[0.2]:.3f}",
        f"{at[0.8]:.3f}",
    ]
    out = tmp_path / "rep"
    assert main(["report", str(results), "--out", str(out), "--budget", "512", "--quiet"]) == 0
    board = (out / "leaderboard.md").read_text()
    lines = [line for line in board.splitlines() if line.startswith("| ") and "`" in line]
    by_policy = {line.split("`")[1]: line.rstrip(" |").split("| ")[-1] for line in lines}
    assert by_policy == {
        "priority_threshold (threshold=0.2)": "2",
        "priority_threshold (threshold=0.8)": "2",
        "fifo_store_all": "2",
    }
    for threshold in (0.2, 0.8):  # each row is the mean over that grid point's episodes only
        point = rows[(rows["param_threshold"] == threshold) & (rows["budget_bytes"] == 512)]
        assert f"| {point['f1'].mean():.3f} |" in next(line for line in lines if f"threshold={threshold}" in line)
    curve = pd.read_csv(out / "regret_curve.csv")
    assert set(curve["policy"]) == set(by_policy) and set(curve["episodes"]) == {2}
