"""`wpbjax report`: every file from a small sweep, and the numbers in them against the results rows."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main

BUDGETS = [700, 2048, 10240]
POLICIES = "fifo_store_all,last_kb,priority_greedy,merge_aggressive"
MODES = ["default", "burst_drift"]
TRACKS = ["unprivileged", "privileged"]
N_EPISODES, N_STEPS = 3, 60


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    results_path = root / "results.csv"
    assert (
        main(
            [
                "sweep",
                "--n-episodes",
                str(N_EPISODES),
                "--steps",
                str(N_STEPS),
                "--seed",
                "3",
                "--budgets",
                ",".join(map(str, BUDGETS)),
                "--modes",
                ",".join(MODES),
                "--policies",
                POLICIES,
                "--out",
                str(results_path),
                "--quiet",
            ]
        )
        == 0
    )
    assert main(["report", str(results_path), "--out", str(root / "rep"), "--quiet"]) == 0
    return pd.read_csv(results_path), root / "rep", root


def markdown_rows(text: str) -> list[list[str]]:
    """Body rows of every Markdown table in ``text`` (cells stripped, bold and code marks removed)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| ---") and not set(line) <= set("|-: "):
            rows.append([re.sub(r"[*`]", "", cell).strip() for cell in line.strip("|").split("|")])
    return [row for row in rows if row[0] not in ("Rank", "Track")]


def test_every_file(run):
    results, out, _ = run
    expected = {
        "leaderboard.md",
        "diagnostics.md",
        "diagnostics.tex",
        "diagnostics.csv",
        "recall_at_budget.csv",
        "utility_per_kb.json",
        "confusion_matrix.csv",
        "utility_per_kb_vs_budget.png",
        "regret_vs_budget.png",
        "regret_curve.png",
        "regret_curve.csv",
        "run_metadata.json",
        "f1_vs_budget_grid.png",
        # write integrity (docs/integrity.md)
        "integrity_scorecard.md",
        "integrity_scorecard.csv",
        "integrity_writ_modes.md",
        "update_fidelity_vs_budget.png",
        "history_coverage_vs_budget.png",
    }
    for mode in MODES:
        expected |= {f"f1_by_budget_{mode}.md", f"f1_by_budget_{mode}.tex"}
        expected |= {f"f1_vs_budget_{mode}_{track}.png" for track in TRACKS}
    assert {path.name for path in out.iterdir()} == expected
    import matplotlib.image

    for name in expected:
        assert (out / name).stat().st_size > 100, name
        if name.endswith(".png"):
            image = matplotlib.image.imread(out / name)
            assert image.shape[0] >= 500 and image.shape[1] >= 900, name  # 150 dpi, legend outside


def test_leaderboard_numbers(run):
    results, out, _ = run
    text = (out / "leaderboard.md").read_text()
    assert "Recall@10KB | F1@10KB | Util/KB | Avg Staleness" in text
    at = results[results.budget_bytes == 10240]
    rows = markdown_rows(text.split("## Run")[0])
    assert len(rows) == 3 + 4  # unprivileged: 3 policies, privileged: 4
    expected = at.groupby(["track", "policy"])[["recall", "f1", "utility_per_kb", "avg_staleness"]].mean()
    tracks_in_order = ["unprivileged"] * 3 + ["privileged"] * 4
    f1_seen = {}
    for track, (_rank, policy, recall, f1, util, staleness, episodes) in zip(tracks_in_order, rows):
        want = expected.loc[(track, policy)]
        assert recall == f"{want.recall:.3f}" and f1 == f"{want.f1:.3f}"
        assert util == f"{want.utility_per_kb:.2f}" and staleness == f"{want.avg_staleness:.1f}"
        assert int(episodes) == N_EPISODES * len(MODES)
        f1_seen.setdefault(track, []).append(float(f1))
    assert all(values == sorted(values, reverse=True) for values in f1_seen.values())  # ranked by F1
    assert "jax 0." in text and "seed 3" in text


def test_f1_tables_match_results(run):
    results, out, _ = run
    for mode in MODES:
        expected = results[results["mode"] == mode].groupby(["track", "policy", "budget_bytes"])["f1"].mean()
        rows = markdown_rows((out / f"f1_by_budget_{mode}.md").read_text())
        assert len(rows) == 7
        latex = (out / f"f1_by_budget_{mode}.tex").read_text()
        for track, policy, *cells in rows:
            assert [float(cell) for cell in cells] == [round(expected[(track, policy, b)], 3) for b in BUDGETS]
            tex_row = next(
                line
                for line in latex.splitlines()
                if line.startswith(f"{track} & \\texttt{{{policy.replace('_', chr(92) + '_')}}}")
            )
            assert [float(re.sub(r"[^0-9.]", "", cell)) for cell in tex_row.rstrip(" \\").split(" & ")[2:]] == [
                float(cell) for cell in cells
            ]


def test_diagnostics_match_results(run):
    results, out, _ = run
    at = results[results.budget_bytes == 10240]
    expected = at.groupby(["track", "mode", "policy"])[
        ["utilization", "write_density", "expire_rate", "avg_staleness", "drift_coverage"]
    ].mean()
    rows = markdown_rows((out / "diagnostics.md").read_text())
    assert len(rows) == 7 * len(MODES)
    for track, mode, policy, *cells in rows:
        want = expected.loc[(track, mode, policy)]
        assert cells == [
            f"{want.utilization:.3f}",
            f"{want.write_density:.3f}",
            f"{want.expire_rate:.3f}",
            f"{want.avg_staleness:.2f}",
            f"{want.drift_coverage:.3f}",
        ]
    every_budget = pd.read_csv(out / "diagnostics.csv")
    assert len(every_budget) == 7 * len(MODES) * len(BUDGETS)


def test_recall_and_utility_files(run):
    results, out, _ = run
    recall = pd.read_csv(out / "recall_at_budget.csv")
    assert len(recall) == 7 * len(BUDGETS) * (len(MODES) + 1)  # per mode, plus mode "all"
    for row in recall.sample(12, random_state=0).itertuples():
        rows = results[
            (results.track == row.track) & (results.policy == row.policy) & (results.budget_bytes == row.budget_bytes)
        ]
        if row.mode != "all":
            rows = rows[rows["mode"] == row.mode]
        values = rows["recall"].to_numpy()
        assert row.episodes == len(values)
        assert row.recall_mean == pytest.approx(values.mean(), abs=1e-12)
        assert row.recall_se == pytest.approx(values.std(ddof=1) / np.sqrt(len(values)), abs=1e-12)

    utility = json.loads((out / "utility_per_kb.json").read_text())
    assert utility["budgets"] == BUDGETS
    for track, policies in utility["tracks"].items():
        for policy, entry in policies.items():
            rows = results[(results.track == track) & (results.policy == policy)]
            for i, budget in enumerate(BUDGETS):
                values = rows.loc[rows.budget_bytes == budget, "utility_per_kb"].to_numpy()
                assert entry["mean"][i] == pytest.approx(values.mean(), abs=1e-12)
                assert entry["se"][i] == pytest.approx(values.std(ddof=1) / np.sqrt(len(values)), abs=1e-12)
                of_mode = rows.loc[(rows.budget_bytes == budget) & (rows["mode"] == "burst_drift"), "utility_per_kb"]
                assert entry["by_mode"]["burst_drift"]["mean"][i] == pytest.approx(of_mode.mean(), abs=1e-12)


def test_confusion_matrix(run):
    results, out, _ = run
    # each row's counts agree with its published ratios: recall = tp/(tp+fn), precision = tp/(tp+fp),
    # write density = |W|/T, and every step falls in exactly one cell (critical steps are steps here)
    assert ((results.tp + results.fp + results.fn + results.tn) == N_STEPS).all()
    np.testing.assert_allclose(
        results.recall,
        np.where(results.tp + results.fn > 0, results.tp / (results.tp + results.fn).clip(lower=1), 0),
        atol=1e-12,
    )
    np.testing.assert_allclose(
        results.precision,
        np.where(results.tp + results.fp > 0, results.tp / (results.tp + results.fp).clip(lower=1), 0),
        atol=1e-12,
    )
    np.testing.assert_allclose(results.write_density, (results.tp + results.fp) / N_STEPS, atol=1e-12)
    # tn counted directly from the retained set of a fresh run: steps neither retained nor critical
    from wpbjax.core import rollout
    from wpbjax.policies import make
    from wpbjax.reports.metadata import episodes_from_metadata

    encoded = episodes_from_metadata(json.loads((out / "run_metadata.json").read_text()))
    counts = rollout.batch_counts(make("priority_greedy"), encoded.batch("privileged"), BUDGETS)
    kept = np.unpackbits(np.asarray(counts.retained), axis=-1, count=N_STEPS).astype(bool)  # [N, B, T]
    critical = encoded.arrays.critical[:, None, :]
    direct = (~kept & ~critical).sum(axis=-1)
    ours = results[(results.track == "privileged") & (results.policy == "priority_greedy")]
    for n, (mode, episode_id) in enumerate(zip(encoded.mode, encoded.episode_id)):
        for b, budget in enumerate(BUDGETS):
            row = ours[(ours["mode"] == mode) & (ours.episode_id == episode_id) & (ours.budget_bytes == budget)]
            assert row.tn.item() == direct[n, b] and row.tp.item() == (kept[n, b] & critical[n, 0]).sum()
    matrix = pd.read_csv(out / "confusion_matrix.csv")
    assert len(matrix) == 7 * len(BUDGETS)
    sums = results.groupby(["track", "policy", "budget_bytes"])[["tp", "fp", "fn", "tn"]].sum()
    for row in matrix.itertuples():
        assert (row.tp, row.fp, row.fn, row.tn) == tuple(sums.loc[(row.track, row.policy, row.budget_bytes)])
        assert row.episodes == N_EPISODES * len(MODES)


def test_regret_curve_ends_at_the_results(run):
    """Last step: oracle-to-date is the exact oracle; retained-to-date is the policy utility; for
    policies without merges (never above the write-cost knapsack) the difference is the regret."""
    results, out, _ = run
    curve = pd.read_csv(out / "regret_curve.csv")
    assert set(curve.step) == set(range(N_STEPS)) and (curve.budget_bytes == 10240).all()
    last = curve[curve.step == N_STEPS - 1].set_index(["track", "policy"])
    at = (
        results[results.budget_bytes == 10240]
        .groupby(["track", "policy"])[["oracle_utility", "policy_utility", "regret"]]
        .mean()
    )
    for (track, policy), row in last.iterrows():
        assert row.oracle_to_date_mean == pytest.approx(at.loc[(track, policy), "oracle_utility"], abs=1e-9)
        assert row.retained_to_date_mean == pytest.approx(at.loc[(track, policy), "policy_utility"], abs=1e-9)
        if policy != "merge_aggressive":
            assert row.regret_mean == pytest.approx(at.loc[(track, policy), "regret"], abs=1e-9)
    # the oracle-to-date never decreases over steps
    for _, rows in curve.groupby(["track", "policy"]):
        assert (np.diff(rows.sort_values("step").oracle_to_date_mean) >= -1e-12).all()


def test_sidecar_metadata(run):
    import jax

    _, out, root = run
    meta = json.loads((root / "results.csv.meta.json").read_text())
    assert meta["budgets"] == BUDGETS and meta["seeds"]["generator"] == 3 and meta["oracle"] == "exact"
    assert meta["tracks"]["privileged"] == POLICIES.split(",")
    assert meta["tracks"]["unprivileged"] == ["fifo_store_all", "last_kb", "merge_aggressive"]
    from wpbjax.policies import make

    assert meta["policy_params"] == {name: make(name).params for name in POLICIES.split(",")}
    env = meta["environment"]
    assert env["jax_version"] == jax.__version__ and env["devices"] and env["wpbjax_version"]
    assert "git" in env  # a commit where the code is a git checkout, null otherwise
    assert meta["episodes"]["configs"][0]["steps"] == N_STEPS and meta["rows"] == 7 * N_EPISODES * 2 * 3
    assert json.loads((out / "run_metadata.json").read_text()) == meta


def test_report_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "rep")]) == 2
    assert "missing.csv: no such results file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"policy": ["x"], "f1": [0.5]}).to_csv(bad, index=False)
    assert main(["report", str(bad), "--out", str(tmp_path / "rep")]) == 2
    assert "not a wpbjax results table; missing columns" in capsys.readouterr().err


def test_results_without_counts_or_metadata(run, tmp_path, capsys):
    """A results table without the count columns or a sidecar (e.g. the published CSV's columns) still
    gets every other file; the report says what it skipped and why."""
    results, out, _ = run
    bare = tmp_path / "bare.csv"
    results.drop(columns=["tp", "fp", "fn", "tn", "merge_actions"]).to_csv(bare, index=False)
    assert main(["report", str(bare), "--out", str(tmp_path / "rep"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "skipped confusion_matrix.csv" in err and "skipped regret_curve.png" in err
    missing = {"confusion_matrix.csv", "regret_curve.png", "regret_curve.csv", "run_metadata.json"}
    assert {path.name for path in (tmp_path / "rep").iterdir()} == {path.name for path in out.iterdir()} - missing
    assert (tmp_path / "rep" / "leaderboard.md").read_text().split("## Run")[0].rstrip() == (
        out / "leaderboard.md"
    ).read_text().split("## Run")[0].rstrip()


def test_regret_curve_from_episode_files(tmp_path, capsys):
    """A sweep of episode files records their paths and SHA-256; the report reloads them for the
    regret curve, and refuses files that changed since."""
    episodes = tmp_path / "episodes.jsonl"
    assert (
        main(
            ["generate", "--mode", "redundancy", "--steps", "30", "--episodes", "2", "--out", str(episodes), "--quiet"]
        )
        == 0
    )
    results_path = tmp_path / "results.csv"
    assert (
        main(
            [
                "sweep",
                "--episodes",
                str(episodes),
                "--policies",
                "fifo_store_all",
                "--tracks",
                "unprivileged",
                "--budgets",
                "2048",
                "--out",
                str(results_path),
                "--quiet",
            ]
        )
        == 0
    )
    meta = json.loads((tmp_path / "results.csv.meta.json").read_text())
    assert meta["episodes"]["source"] == "files" and meta["seeds"]["generator"] is None
    assert main(["report", str(results_path), "--out", str(tmp_path / "rep"), "--quiet"]) == 0
    curve = pd.read_csv(tmp_path / "rep" / "regret_curve.csv")
    results = pd.read_csv(results_path)
    assert curve.loc[curve.step == 29, "regret_mean"].item() == pytest.approx(results.regret.mean(), abs=1e-9)
    episodes.write_text(episodes.read_text().replace('"t": 0', '"t": 0 ', 1))
    assert main(["report", str(results_path), "--out", str(tmp_path / "rep2")]) == 2
    assert "changed since the sweep" in capsys.readouterr().err
