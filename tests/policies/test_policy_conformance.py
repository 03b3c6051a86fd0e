"""Policies: emits and layout checked at construction, the registry (get, factories, module specs), and
wpbjax.testing.check_policy on the zoo and on policies that break each of its rules."""

import jax.numpy as jnp
import pytest

from wpbjax.policies import Policy, get, make, register_factory
from wpbjax.state import actions, store as store_lib
from wpbjax.testing import check_policy


def _write_if_fits(params, state, store, episode, pos, budget):
    return actions.write_if(store_lib.write_fits(store, episode, pos, budget)), state


@pytest.mark.parametrize(
    "declared, message",
    [
        (dict(emits={"wrte"}), "unknown emits 'wrte'"),
        (dict(emits="write"), "emits must be a set of names, not the string"),
        (dict(emits={"write_past"}), "needs multi_action"),
        (dict(layout={"fifo", "ordr"}), "unknown layout 'ordr'"),
        (dict(emits={"fifo"}), "unknown emits 'fifo'"),  # a layout is not an action
        (dict(emits={"write", "expire"}, layout={"oldest_only"}, multi_action=True), "acts once per step"),
    ],
)
def test_emits_and_layout_are_checked_when_a_policy_is_made(declared, message):
    with pytest.raises(ValueError, match=message):
        Policy("typo", _write_if_fits, **declared)
    with pytest.raises(ValueError, match="unknown track"):
        Policy("typo", _write_if_fits, tracks=("unprivileged", "privilegd"), emits={"write"})


@pytest.mark.parametrize("name", ["merge_aggressive", "deferred_batch", "oracle_optimal"])
def test_zoo_policies_pass_check_policy(name):
    # one of each store path: merge + fifo eviction, write_past walks, a hindsight plan
    check_policy(name)


def test_check_policy_catches_an_undeclared_action():
    def expire_oldest_then_write(params, state, store, episode, pos, budget):
        short = store.used + episode.write_cost[pos] > budget
        return actions.write(store.oldest, short.astype(jnp.int32)), state

    with pytest.raises(AssertionError, match="declare every action it emits"):
        check_policy(Policy("undeclared", expire_oldest_then_write, emits={"write"}, layout=()))


def test_check_policy_catches_o_t_work_per_step():
    def count_the_store(params, state, store, episode, pos, budget):
        return actions.write_if(store.present.sum() < params["most"]), state  # reads all T slots

    with pytest.raises(AssertionError, match=r"O\(T\) work"):
        check_policy(Policy("scans", count_the_store, params={"most": 5}, emits={"write"}, layout=()))


def test_get_overrides_default_params_once():
    policy = get("uniform_sample", every_n=5)
    assert policy.params == {"every_n": 5, "start": 0} and make("uniform_sample").params["every_n"] == 10
    assert get("uniform_sample", every_n=5) is policy  # one object: one compile
    with pytest.raises(ValueError, match="no param"):
        get("uniform_sample", every=5)


def test_factories_and_module_specs_resolve(tmp_path, monkeypatch):
    made = Policy("made", _write_if_fits, emits={"write"}, layout=())
    register_factory("test_factory", lambda arg: made if arg == "x" else None, replace=True)
    assert make("test_factory:x") is made
    (tmp_path / "user_mod.py").write_text(
        "from wpbjax import actions\nfrom wpbjax.policies import Policy\n"
        "POLICY = Policy('mine', lambda p, s, st, e, pos, b: (actions.skip(), s), emits=(), layout=())\nOTHER = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert make("user_mod:POLICY").name == "mine" and make("user_mod:POLICY") is make("user_mod:POLICY")
    path = str(tmp_path / "user_mod.py")
    assert make(path).name == "mine" and make(f"{path}:POLICY") is make(path)  # loaded once per file version
    for spec, message in [
        ("user_mod:OTHER", "must be a wpbjax.policies.Policy"),
        ("no_such_mod:X", "cannot load"),
        (str(tmp_path / "missing.py"), "cannot load"),
        ("nonsense", "unknown policy"),
    ]:
        with pytest.raises(ValueError, match=message):
            make(spec)
