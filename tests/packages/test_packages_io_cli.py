"""Package I/O (the artifact's export layout) and the ``wpbjax packages`` CLI."""

import json

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.packages.io import PackageFormatError, read_packages, write_packages
from wpbjax.packages.memaudit_gen import memaudit_small


def test_round_trip_keeps_every_array(tmp_path):
    pset = memaudit_small([3, 11])
    dirs = write_packages(pset, tmp_path)
    back = read_packages(dirs)
    for field in ("cost", "valid", "kind", "coverage", "weight", "invalidation", "rank", "time"):
        np.testing.assert_array_equal(getattr(back.batch, field), getattr(pset.batch, field), err_msg=field)
    np.testing.assert_array_equal(back.reservoir_key, pset.reservoir_key)
    assert back.meta.candidate_ids == pset.meta.candidate_ids


def _package(tmp_path, candidates, cells=None, instance=None):
    d = tmp_path / "pkg"
    d.mkdir()
    (d / "candidate_memories.jsonl").write_text("\n".join(json.dumps(c) for c in candidates) + "\n")
    if cells is not None:
        (d / "coverage_matrix.jsonl").write_text("\n".join(json.dumps(c) for c in cells) + "\n")
    if instance is not None:
        (d / "instance.json").write_text(json.dumps(instance))
    return d


def test_reads_both_cost_and_coverage_spellings(tmp_path):
    d = _package(
        tmp_path,
        [
            {
                "candidate_id": "a",
                "experience_id": "e1",
                "representation_type": "atomic_fact",
                "cost": {"total": 2},
                "coverage": {"u1": 1.0},
            },
            {
                "candidate_id": "b",
                "experience_id": "e1",
                "representation_type": "tombstone",
                "cost": 1,
                "coverage": [{"unit_id": "u2", "fidelity": 0.5}],
            },
        ],
        instance={"unit_weights": {"u1": 2.0, "u2": 1.0}, "invalidation_units": ["u2"]},
    )
    pset = read_packages([d])
    assert pset.batch.cost[0, 0].tolist() == [1, 2]  # (cost, id) order
    assert pset.batch.coverage[0, 0, 0].tolist() == [0.0, 0.5]
    assert pset.batch.invalidation[0].tolist() == [False, True]


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"candidate_id": "a", "experience_id": "e", "cost": -1}', "field 'cost'"),
        ('{"candidate_id": "a", "cost": 1}', "field 'experience_id'"),
        ('{"candidate_id": "a", "experience_id": "e", "cost": 1, "coverage": 3}', "field 'coverage'"),
        ("not json", "not valid JSON"),
    ],
)
def test_malformed_candidates_name_file_line_and_field(tmp_path, line, message):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "candidate_memories.jsonl").write_text(
        '{"candidate_id": "z", "experience_id": "e", "cost": 1, "coverage": {"u": 1}}\n' + line + "\n"
    )
    with pytest.raises(PackageFormatError, match=rf"candidate_memories.jsonl:2: .*{message}"):
        read_packages([d])


def test_cli_sweep_rows_and_errors(tmp_path, capsys):
    out = tmp_path / "pk.csv"
    assert (
        main(
            [
                "packages",
                "sweep",
                "--seeds",
                "4",
                "--budgets",
                "2,8",
                "--methods",
                "opt,oracle_gvt,reservoir_raw",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    assert {"distribution", "seed", "budget", "method", "value", "opt", "ratio", "cost", "invalidation_covered"} <= set(
        table.columns
    )
    assert len(table) == 4 * 2 * 3 and (table["cost"] <= table["budget"]).all()
    assert "mean ratio to OPT" in capsys.readouterr().out
    assert main(["packages", "sweep", "--seeds", "2", "--methods", "nope", "--quiet"]) == 2
    assert "unknown method" in capsys.readouterr().err
    generated = tmp_path / "gen"
    assert main(["packages", "generate", "--seeds", "2", "--out", str(generated), "--quiet"]) == 0
    again = tmp_path / "again.csv"
    assert (
        main(
            [
                "packages",
                "sweep",
                "--packages",
                *map(str, sorted(generated.iterdir())),
                "--budgets",
                "2,8",
                "--methods",
                "opt,oracle_gvt,reservoir_raw",
                "--out",
                str(again),
                "--quiet",
            ]
        )
        == 0
    )
    same = table[table.seed < 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.read_csv(again).drop(columns="distribution"), same.drop(columns="distribution"))


def test_cli_stress_distribution_verified_by_milp(tmp_path, capsys):
    out = tmp_path / "stress.csv"
    assert (
        main(
            [
                "packages",
                "sweep",
                "--distribution",
                "update_chain",
                "--seeds",
                "2",
                "--budgets",
                "2,8",
                "--methods",
                "opt,greedy,no_tombstone_opt",
                "--verify",
                "milp",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    assert set(table["distribution"]) == {"update_chain"}
    assert set(table["opt_certified_by"]) == {"brute_force+milp"}
    with pytest.raises(SystemExit) as exit_info:
        main(["packages", "sweep", "--seeds", "0"])
    assert exit_info.value.code == 2 and "--seeds" in capsys.readouterr().err
    assert main(["packages", "sweep", "--packages", str(tmp_path / "missing"), "--quiet"]) == 2
    assert "not a package directory" in capsys.readouterr().err
