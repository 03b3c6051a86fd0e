"""Branch and bound and the MILP against plain enumeration; certification labels on 100-group packages."""
import numpy as np
import pytest

import packages_plain as plain
from wpbjax.packages import bnb, milp, opt
from wpbjax.packages.generate import memaudit_small
from wpbjax.packages.stress import generate as stress


@pytest.mark.parametrize("name", ["density_trap", "update_chain", "scope_shift"])
def test_search_and_milp_match_plain_enumeration(name):
    pset = stress(name, [4, 9])
    for p in range(2):
        groups, weights = plain.from_batch(pset, p)
        for budget in (1, 3, 7, 12):
            exact = plain.brute_force_opt(groups, weights, budget)
            assert bnb.branch_and_bound(pset.batch, p, budget)[0] == pytest.approx(exact, abs=1e-12)
            assert milp.solve_one(pset.batch, p, budget)[0] == pytest.approx(exact, abs=1e-9)


@pytest.mark.parametrize("h", ["log1p", "linear"])
def test_search_other_h_matches_plain(h):
    pset = memaudit_small([2])
    groups, weights = plain.from_batch(pset, 0)
    for budget in (2, 5, 9):
        assert bnb.branch_and_bound(pset.batch, 0, budget, h)[0] == pytest.approx(
            plain.brute_force_opt(groups, weights, budget, h), abs=1e-12)


def test_hundred_groups_certified_by_search_and_milp():
    batch = memaudit_small([0, 1], normal_count=40, update_count=30).batch   # 100 groups, 150 units
    assert batch.cost.shape[1] == 100
    result = opt.solve(batch, [1, 4, 16], verify="milp")                    # raises on any disagreement
    assert set(result.method.ravel()) == {"branch_and_bound+milp"}
    # OPT picks the cheapest high-weight tombstones first: at B=1 one tombstone of weight 2.5 (or 2.25/2.0)
    inv = batch.weight[:, batch.invalidation[0]]
    np.testing.assert_allclose(result.value[:, 0], inv.max(axis=1))


def test_search_gives_up_loudly():
    batch = memaudit_small([0], normal_count=40, update_count=30).batch
    with pytest.raises(bnb.SearchLimit):
        bnb.branch_and_bound(batch, 0, 16, node_limit=5)
    with pytest.raises(opt.OptNotCertified):
        opt.solve(batch, [16], h="log1p", node_limit=5)
