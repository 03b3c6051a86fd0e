"""External stores scored with the union denominator (MEMAUDIT Definition 3): a hand-computed
package, a plain brute force over the union written here, file errors, and the CLI."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.packages.external import read_store, score_store, union_batch
from wpbjax.packages.io import PackageFormatError, read_packages, write_packages
from wpbjax.packages.memaudit_gen import memaudit_small


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def hand_package(tmp_path):
    """One experience: a fact (cost 2, unit u1) or a raw span (cost 4, u1 and u2); w(u1) = 2, w(u2) = 1.
    The store: m1 (cost 1, covers u2) then m2 (cost 3, half of u1 and half of u2)."""
    d = tmp_path / "pkg"
    d.mkdir()
    _write(
        d / "candidate_memories.jsonl",
        [
            {
                "candidate_id": "e1_fact",
                "experience_id": "e1",
                "representation_type": "atomic_fact",
                "cost": 2,
                "coverage": {"u1": 1.0},
            },
            {
                "candidate_id": "e1_raw",
                "experience_id": "e1",
                "representation_type": "raw_span",
                "cost": 4,
                "coverage": {"u1": 1.0, "u2": 1.0},
            },
        ],
    )
    (d / "instance.json").write_text(json.dumps({"instance_id": "hand", "unit_weights": {"u1": 2.0, "u2": 1.0}}))
    store = _write(
        tmp_path / "store.jsonl",
        [
            {"memory_id": "m1", "cost": 1, "coverage": {"u2": 1.0}},
            {
                "memory_id": "m2",
                "cost": {"total": 3},
                "coverage": [{"unit_id": "u1", "fidelity": 0.5}, {"unit_id": "u2", "coverage": 0.5}],
            },
        ],
    )
    return d, store


def test_hand_computed_union_scores(hand_package):
    d, store_path = hand_package
    pset = read_packages([d])
    table = score_store(pset, read_store(store_path, pset.meta.unit_ids[0]), [3, 4]).set_index(["budget", "selection"])
    # B=3. Package OPT: the fact (2). Union OPT: fact + m1 = 2 + 1 = 3. The whole store costs 4: infeasible.
    # Recency pruning keeps m2 (newest, cost 3; then m1 no longer fits): 2*0.5 + 1*0.5 = 1.5. The best
    # subset of the store within 3 is m2 too (m1 alone is worth 1).
    assert table.at[(3, "as_written"), "union_opt"] == 3.0
    assert table.loc[3, "package_opt"].tolist() == [2.0] * 3
    assert np.isnan(table.at[(3, "as_written"), "value"]) and np.isnan(table.at[(3, "as_written"), "ratio_to_union"])
    assert table.at[(3, "recency_pruned"), "value"] == 1.5 and table.at[(3, "recency_pruned"), "ratio_to_union"] == 0.5
    assert table.at[(3, "recency_pruned"), "ratio_to_package"] == 0.75
    assert table.at[(3, "upper_pruned"), "value"] == 1.5 and table.at[(3, "upper_pruned"), "memories"] == 1
    # B=4. Package OPT: the raw span (3). Union OPT 3 (raw span, or fact + m1). The whole store fits:
    # u1 at 0.5 and u2 at min(1, 1.5): 2*0.5 + 1 = 2.
    assert table.at[(4, "as_written"), "value"] == 2.0 and table.at[(4, "as_written"), "union_opt"] == 3.0
    assert table.at[(4, "as_written"), "ratio_to_union"] == pytest.approx(2 / 3)
    assert (table["store_value"] == 2.0).all() and (table["store_cost"] == 4).all()


def _plain_union_opt(batch, budget):
    """Every assignment of the union package (skip or one candidate per group), plainly."""
    p_cost, p_valid, p_cov, p_w = batch.cost[0], batch.valid[0], batch.coverage[0], batch.weight[0]
    options = [[-1] + [c for c in range(p_cost.shape[1]) if p_valid[g, c]] for g in range(p_cost.shape[0])]
    best = 0.0
    for pick in itertools.product(*options):
        spent = sum(p_cost[g, c] for g, c in enumerate(pick) if c >= 0)
        if spent <= budget:
            totals = sum((p_cov[g, c] for g, c in enumerate(pick) if c >= 0), np.zeros(len(p_w)))
            best = max(best, float((p_w * np.minimum(1.0, totals)).sum()))
    return best


def test_union_opt_against_plain_brute_force(tmp_path):
    pset = memaudit_small([5], normal_count=1, update_count=1)
    [d] = write_packages(pset, tmp_path / "pkgs")
    pset = read_packages([d])
    units = pset.meta.unit_ids[0]
    rng = np.random.default_rng(1)
    rows = [
        {
            "memory_id": f"m{i}",
            "cost": int(rng.integers(1, 4)),
            "coverage": {u: round(float(rng.uniform(0.2, 1.0)), 2) for u in rng.choice(units, 2, replace=False)},
        }
        for i in range(3)
    ]
    store = read_store(_write(tmp_path / "store.jsonl", rows), units)
    budgets = [1, 2, 4, 6]
    table = score_store(pset, store, budgets)
    union, external = union_batch(pset.batch, store)
    assert external.sum() == 3 and union.cost.shape[1] == pset.batch.cost.shape[1] + 3
    for budget in budgets:
        rows_b = table[table.budget == budget].set_index("selection")
        assert rows_b["union_opt"].iloc[0] == pytest.approx(_plain_union_opt(union, budget), abs=1e-12)
        assert rows_b["union_opt"].iloc[0] >= rows_b["package_opt"].iloc[0] - 1e-12
        assert rows_b.at["upper_pruned", "value"] >= rows_b.at["recency_pruned", "value"] - 1e-12
        assert (rows_b["ratio_to_union"].dropna() <= 1 + 1e-12).all()


@pytest.mark.parametrize(
    "row, message",
    [
        ({"memory_id": "m", "cost": 1}, "field 'coverage': missing"),
        ({"cost": 1, "coverage": {}}, "field 'memory_id'"),
        ({"memory_id": "m", "cost": -2, "coverage": {}}, "field 'cost'"),
        ({"memory_id": "m", "cost": 1, "coverage": {"u1": "high"}}, r"field 'coverage\[u1\]'"),
    ],
)
def test_malformed_store_names_file_line_and_field(tmp_path, hand_package, row, message):
    d, _ = hand_package
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"memory_id": "ok", "cost": 1, "coverage": {}}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(PackageFormatError, match=rf"bad.jsonl:2: {message}"):
        read_store(path, ["u1", "u2"])


def test_score_cli(tmp_path, hand_package, capsys):
    d, store = hand_package
    out = tmp_path / "rows.csv"
    assert (
        main(["packages", "score", "--package", str(d), "--store", str(store), "--budget", "3,4", "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    assert "infeasible" in printed and "0.5000" in printed
    rows = pd.read_csv(out)
    assert len(rows) == 6 and set(rows.selection) == {"as_written", "recency_pruned", "upper_pruned"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n")
    assert main(["packages", "score", "--package", str(d), "--store", str(bad), "--budget", "3"]) == 2
    assert "bad.jsonl:1: not valid JSON" in capsys.readouterr().err
