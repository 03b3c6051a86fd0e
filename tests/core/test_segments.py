"""Long rollouts in segments (wpbjax/core/segments.py): the same counts as one unsegmented rollout, for
every kind of policy and call; progress after each segment; one compile for all segments.

Segments are made short (16 steps) so that 50-step episodes run as 16 + 16 + 16 + 2 steps; the
unsegmented reference is the same call with segments longer than the episodes.
"""

import jax
import numpy as np
import pytest

from wpbjax.api import episode_source
from wpbjax.core import rollout, segments
from wpbjax.policies import make
from wpbjax.sweeps.config import Generate
from wpbjax.sweeps.run import run_sweep
from wpbjax.testing import count_compiles

STEPS, SEGMENT = 50, 16
BUDGETS = [300, 1024, 4096]


@pytest.fixture(scope="module")
def encoded():
    return episode_source(Generate(n_episodes=1, steps=STEPS)).load()  # one episode of each published mode


def _counts(call, monkeypatch, segment: int) -> dict:
    monkeypatch.setattr(segments, "STEPS_PER_SEGMENT", segment)
    return {field: np.asarray(value) for field, value in vars(jax.block_until_ready(call())).items()}


def _assert_same(call, monkeypatch) -> None:
    whole = _counts(call, monkeypatch, 10 * STEPS)
    with count_compiles() as compiles:
        parts = _counts(call, monkeypatch, SEGMENT)
    assert compiles["jit(_advance)"] <= 1, "every segment must reuse one compiled program"
    for field, value in whole.items():
        np.testing.assert_array_equal(parts[field], value, err_msg=field)


@pytest.mark.parametrize(
    "name, track",
    [
        ("merge_aggressive", "unprivileged"),  # merges and oldest-first evictions
        ("priority_greedy", "privileged"),  # acts several times per step (eviction walks)
        ("supersede", "unprivileged"),  # ordered expiry of any item
        ("epsilon_greedy", "unprivileged"),  # random draws from the per-episode key
        ("oracle_optimal", "oracle"),  # a hindsight plan: per-run inputs
    ],
)
def test_segments_give_the_counts_of_one_rollout(encoded, monkeypatch, name, track):
    from wpbjax.common.tracks import cost_track

    batch = encoded.batch(cost_track(track))
    _assert_same(lambda: rollout.batch_counts(make(name), batch, BUDGETS), monkeypatch)


def test_a_lone_episode_and_a_param_grid(encoded, monkeypatch):
    lone = encoded.batch("unprivileged", [2])
    _assert_same(lambda: rollout.batch_counts(make("last_kb"), lone, BUDGETS), monkeypatch)
    grid = {"threshold": np.array([0.1, 0.5, 0.9])}
    batch = encoded.batch("privileged")
    _assert_same(lambda: rollout.grid_counts(make("priority_threshold"), batch, BUDGETS, params=grid), monkeypatch)


def test_progress_is_reported_after_every_segment(encoded, monkeypatch):
    monkeypatch.setattr(segments, "STEPS_PER_SEGMENT", SEGMENT)
    heard = []
    segments.listen_to_steps(lambda done, total: heard.append((done, total)))
    try:
        rollout.batch_counts(make("fifo_store_all"), encoded.batch("unprivileged"), BUDGETS)
    finally:
        segments._step_listeners.clear()
    assert heard == [(16, STEPS), (32, STEPS), (48, STEPS), (50, STEPS)]


def test_a_sweep_of_long_episodes_has_the_rows_of_short_ones(encoded, monkeypatch):
    """The sweep stacks a policy's tracks in one call; one episode runs on one device."""

    def rows(segment):
        monkeypatch.setattr(segments, "STEPS_PER_SEGMENT", segment)
        return run_sweep(encoded.take([1]), budgets=[1024, 4096], policies="merge_aggressive,priority_greedy")

    whole, parts = rows(10 * STEPS), rows(SEGMENT)
    assert len(whole) == 2 * (2 + 1)  # budgets x (merge_aggressive on 2 tracks, priority_greedy on 1)
    assert whole.equals(parts)
