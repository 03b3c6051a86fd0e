"""Traced programs kept on disk (wpbjax.runtime.traced): the same counts as an ordinary call, read back
without tracing, keyed by the code and the arguments, and skipped where a call cannot be keyed.

The cache's folder is pointed at a temporary one here (JAX's compile cache stays off in the suite: see
tests/conftest.py); a CLI sweep run twice with a real cache is in tests/sweeps/test_resume.py's processes."""

import dataclasses
import functools
import os

import jax.numpy as jnp
import numpy as np
import pytest
from helpers import make_episode

from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.policies import make
from wpbjax.runtime import programs, traced

BUDGETS = [150, 400]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(traced, "_folder", lambda: str(tmp_path / "traced"))
    monkeypatch.setattr(traced, "_LOADED", {})
    return tmp_path / "traced"


@pytest.fixture(scope="module")
def batch():
    steps = [{"api": f"a{i % 3}", "x": i} for i in range(12)]
    return encode_episodes([make_episode(steps), make_episode(steps[::-1])]).batch("privileged")


def _counts(policy, batch):
    return {field: np.asarray(value) for field, value in vars(rollout.batch_counts(policy, batch, BUDGETS)).items()}


def _assert_same(left, right):
    assert left.keys() == right.keys()
    for field in left:
        np.testing.assert_array_equal(left[field], right[field], err_msg=field)


def test_counts_are_an_ordinary_calls_and_come_back_without_tracing(folder, batch, monkeypatch):
    policy = make("merge_aggressive")
    monkeypatch.setattr(traced, "_folder", lambda: None)
    ordinary = _counts(policy, batch)
    monkeypatch.setattr(traced, "_folder", lambda: str(folder))
    first = _counts(policy, batch)  # traced, exported and written
    assert len(os.listdir(folder)) == 1
    _assert_same(first, ordinary)

    def refuse(*args):
        raise AssertionError("traced again")

    monkeypatch.setattr(traced, "_export", refuse)
    monkeypatch.setattr(traced, "_LOADED", {})  # as a new process: read from disk
    _assert_same(_counts(policy, batch), ordinary)


def test_the_key_holds_the_code_and_the_arguments(folder, batch, monkeypatch):
    _counts(make("last_kb"), batch)
    _counts(make("last_kb"), batch)  # the same program: no second entry
    assert len(os.listdir(folder)) == 1
    _counts(make("fifo_store_all"), batch)  # another policy (a static argument)
    assert len(os.listdir(folder)) == 2
    shorter = encode_episodes([make_episode([{"api": "a", "x": i} for i in range(5)])] * 2).batch("privileged")
    _counts(make("last_kb"), shorter)  # other shapes
    assert len(os.listdir(folder)) == 3
    monkeypatch.setattr(traced, "package_digest", lambda: "other code")
    monkeypatch.setattr(traced, "_LOADED", {})
    _counts(make("last_kb"), batch)  # other code: a new entry
    assert len(os.listdir(folder)) == 4


def test_an_unreadable_entry_is_traced_again(folder, batch, monkeypatch):
    policy = make("priority_greedy")
    expected = _counts(policy, batch)
    (entry,) = os.listdir(folder)
    (folder / entry).write_bytes(b"\x80\x05 truncated")
    monkeypatch.setattr(traced, "_LOADED", {})
    _assert_same(_counts(policy, batch), expected)
    assert [name for name in os.listdir(folder) if name.endswith(".tmp")] == []


@dataclasses.dataclass(frozen=True)
class _Scale:
    factor: float
    how: object  # a function


def _scaled(scale, x):
    return scale.how(x) * scale.factor


_program = programs.jit(_scaled, static_argnums=0)


def test_code_from_outside_wpbjax_makes_an_ordinary_call(folder):
    """A program or a static argument's function from outside wpbjax, JAX and numpy (its code is not in the
    key): the call runs as usual, and nothing is written."""
    assert float(traced.call(_program, _Scale(2.0, lambda x: x + 1), jnp.float32(3.0))) == 8.0
    assert float(traced.call(_program, _Scale(2.0, jnp.negative), jnp.float32(3.0))) == -6.0
    assert not folder.exists() or os.listdir(folder) == []


def test_descriptions_tell_apart_what_changes_a_trace():
    describe = traced.describe
    assert describe(make("last_kb")) == describe(make("last_kb")) != describe(make("merge_aggressive"))
    assert describe(np.arange(3)) != describe(np.arange(1, 4)) and describe(1) != describe(1.0) != describe(True)
    assert describe(functools.partial(jnp.add, 1)) != describe(functools.partial(jnp.add, 2))
    assert describe(jnp.negative) != describe(jnp.abs)

    # a closure is described by what it captured: two recency policies with different gates differ
    from wpbjax.policies import common, feedback

    act_of = {gate: common.gated_recency(gate)[0] for gate in (feedback.epsilon_greedy_gate, common.no_state)}
    assert describe(act_of[feedback.epsilon_greedy_gate]) != describe(act_of[common.no_state])
    with pytest.raises(traced._Opaque):  # a function of this test module: its code is not in the key
        describe(lambda: 1)
    with pytest.raises(traced._Opaque):
        describe(object())
