"""Branch and bound, the decomposition and the MILP against plain enumeration and each other; the size rule."""

import dataclasses

import numpy as np
import packages_plain as plain
import pytest

from wpbjax.packages import bnb, milp, opt
from wpbjax.packages.catalog import DISTRIBUTIONS
from wpbjax.packages.distributions import generate
from wpbjax.packages.memaudit_gen import memaudit_small
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
            plain.brute_force_opt(groups, weights, budget, h), abs=1e-12
        )


def _joined(batch):
    """The batch with one more unit (weight 0.5) that every candidate covers a little (0.05): no
    longer splits into independent parts, whatever its size."""
    shared = np.where(batch.valid, 0.05, 0.0)[..., None]
    n_pkg = batch.weight.shape[0]
    return dataclasses.replace(
        batch,
        coverage=np.concatenate([batch.coverage, shared], axis=-1),
        weight=np.concatenate([batch.weight, np.full((n_pkg, 1), 0.5)], axis=1),
        invalidation=np.concatenate([batch.invalidation, np.zeros((n_pkg, 1), bool)], axis=1),
    )


def test_size_rule_sends_large_packages_to_the_milp():
    large = memaudit_small([0, 1], normal_count=40, update_count=30).batch  # 100 groups, 150 units
    assert large.cost.shape[1] == 100
    budgets = [1, 4, 16]
    assert opt.choose_method(memaudit_small([0]).batch, budgets) == "brute_force"  # 36,864 assignments
    assert opt.choose_method(large, budgets) == "components"  # 50 independent pairs of groups
    joined = _joined(large)
    assert opt.choose_method(joined, budgets) == "milp"
    assert opt.choose_method(joined, budgets, "log1p") == "milp"  # log1p by outer approximation
    assert opt.choose_method(_joined(memaudit_small([0], 4, 3).batch), budgets) == "branch_and_bound"  # 10 groups
    result = opt.solve(joined, budgets, verify="milp")
    assert set(result.method.ravel()) == {"milp"}  # nothing else to check it against
    # the shared unit (0.05 a candidate) is full at 20 candidates: at B <= 16 it adds 0.025 per candidate kept.
    # OPT keeps the cheapest high-weight tombstones first: at B=1 one tombstone of weight 2.5 (or 2.25/2.0),
    # at B=4 four cost-1 tombstones, the four heaviest invalidation weights
    inv = large.weight[:, large.invalidation[0]]
    np.testing.assert_allclose(result.value[:, 0], inv.max(axis=1) + 0.025)
    np.testing.assert_allclose(result.value[:, 1], np.sort(inv, axis=1)[:, -4:].sum(axis=1) + 4 * 0.025)


def test_components_match_brute_force_on_every_distribution():
    budgets = [1, 3, 8, 20]
    for name in DISTRIBUTIONS:
        batch = generate(name, [4, 11]).batch
        for h in ("min", "log1p"):
            np.testing.assert_allclose(
                opt.solve(batch, budgets, h, method="components").value,
                opt.solve(batch, budgets, h, method="brute_force").value,
                rtol=0,
                atol=1e-12,
            )


def test_components_and_milp_agree_on_hundred_groups():
    batch = memaudit_small([5, 6], normal_count=40, update_count=30).batch
    result = opt.solve(batch, [2, 40, 200], verify="milp")  # raises on any disagreement beyond 1e-6
    assert set(result.method.ravel()) == {"components+milp"}
    np.testing.assert_allclose(result.value, opt.solve(batch, [2, 40, 200], method="milp").value, rtol=0, atol=1e-9)


def test_search_brute_force_and_milp_agree_on_mid_sized_packages():
    budgets = [2, 6, 12, 20]
    mid = _joined(memaudit_small([3, 7], normal_count=4, update_count=3).batch)  # 10 groups, 3.5e6 assignments
    search = opt.solve(mid, budgets, method="branch_and_bound")
    by_milp = opt.solve(mid, budgets, method="milp")
    np.testing.assert_allclose(search.value, by_milp.value, rtol=0, atol=milp.AGREEMENT)
    assert set(search.method.ravel()) == {"branch_and_bound"} and set(by_milp.method.ravel()) == {"milp"}
    auto = opt.solve(mid, budgets, verify="milp")  # the search closes every cell
    assert set(auto.method.ravel()) == {"branch_and_bound+milp"}
    np.testing.assert_array_equal(auto.value, search.value)
    np.testing.assert_allclose(
        opt.solve(mid, budgets, "log1p", method="milp").value,
        opt.solve(mid, budgets, "log1p", method="branch_and_bound").value,
        rtol=0,
        atol=milp.AGREEMENT,
    )
    rescued = opt.solve(mid, budgets, node_limit=3)  # a search given 3 nodes hands its cells to the MILP
    assert "milp" in set(rescued.method.ravel())
    np.testing.assert_allclose(rescued.value, search.value, rtol=0, atol=milp.AGREEMENT)
    small = stress("temporal_interval", [1]).batch  # 112,500 assignments
    np.testing.assert_allclose(
        opt.solve(small, budgets, method="brute_force").value,
        opt.solve(small, budgets, method="milp").value,
        rtol=0,
        atol=milp.AGREEMENT,
    )


@pytest.mark.parametrize("h", ["linear", "log1p"])
def test_milp_certifies_other_h(h):
    pset = stress("summary_tradeoff", [5])
    groups, weights = plain.from_batch(pset, 0)
    for budget in (2, 6, 12):
        assert milp.solve_one(pset.batch, 0, budget, h=h)[0] == pytest.approx(
            plain.brute_force_opt(groups, weights, budget, h), abs=1e-9
        )


def test_search_gives_up_loudly():
    batch = _joined(memaudit_small([0], normal_count=40, update_count=30).batch)
    with pytest.raises(bnb.SearchLimit):
        bnb.branch_and_bound(batch, 0, 16, node_limit=5)
    with pytest.raises(opt.OptNotCertified):
        opt.solve(batch, [16], h="log1p", node_limit=5, method="branch_and_bound")
