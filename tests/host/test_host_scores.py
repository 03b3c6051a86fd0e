"""Scores computed once per step (wj.score_steps): the disk cache resumes without calling the scorer again,
and the scored policies read them as an episode array swept over budgets and thresholds."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

import wpbjax as wj
from wpbjax.host import PolicyError

EPISODES = wj.Generate(["default", "burst_drift"], n_episodes=2)  # 4 generated episodes of 200 steps


def priority(step) -> float:
    return float(step.metadata.get("priority", 0.0))


def test_cache_resumes_after_a_kill_without_calling_again(tmp_path):
    cache = tmp_path / "scores.jsonl"
    calls = []

    def dies_after_300(step):
        if len(calls) == 300:
            raise TimeoutError("rate limited")
        calls.append(step.t)
        return 0.25

    with pytest.raises(PolicyError, match=r"^episode default/1, t=100: the scorer raised TimeoutError: rate limited$"):
        wj.score_steps(dies_after_300, cache=cache, episodes=EPISODES)
    assert len(cache.read_text().splitlines()) == 300
    with cache.open("a") as handle:  # a line torn by a kill: dropped on the next open
        handle.write('{"episode": "default/1", "t": 1')
    calls.clear()
    scores = wj.score_steps(lambda step: calls.append(step.t) or 0.25, cache=cache, episodes=EPISODES)
    assert len(calls) == 800 - 300 == scores.calls  # 4 episodes x 200 steps, the first 300 cached
    again = wj.score_steps(lambda step: 1 / 0, cache=cache, episodes=EPISODES)  # all cached: the scorer is not called
    assert again.calls == 0 and (again.values == 0.25).all()
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    assert len(lines) == 800 and len({(line["episode"], line["t"]) for line in lines}) == 800


def test_scorer_errors_name_episode_and_t():
    with pytest.raises(PolicyError, match=r"^episode default/0, t=0: the scorer returned nan, not a finite number$"):
        wj.score_steps(lambda step: float("nan"), episodes=EPISODES)


def test_scored_policies_on_the_priority_are_the_priority_policies():
    # the score is the privileged metadata's priority, so scored_threshold (threshold 0.5) must give
    # priority_threshold's rows and scored_greedy with every step admitted priority_greedy's
    scores = wj.score_steps(priority, track="privileged", episodes=EPISODES)
    threshold, _, greedy = scores.register("priority")
    budgets = [1024, 4096, 10240, 102400]
    grid = wj.Grid(budgets, tracks=["privileged"])
    rows = wj.sweep(EPISODES, grid=replace(grid, policies=[threshold]))
    reference = wj.sweep(EPISODES, grid=replace(grid, policies=["priority_threshold"]))
    pd.testing.assert_frame_equal(rows.drop(columns="policy"), reference.drop(columns="policy"))
    rows = wj.sweep(EPISODES, grid=replace(grid, policies=[greedy], params={"threshold": [-1.0]}))
    reference = wj.sweep(EPISODES, grid=replace(grid, policies=["priority_greedy"]))
    columns = [column for column in reference.columns if column != "policy"]
    pd.testing.assert_frame_equal(rows[columns], reference[columns])


def test_a_threshold_grid_is_one_sweep():
    scores = wj.score_steps(priority, track="privileged", episodes=EPISODES)
    name = scores.register("grid")[0]
    thresholds = [0.0, 0.1, 0.5, 0.9, 1.0]
    grid = wj.Grid([1048576], policies=[name], tracks=["privileged"], params={"threshold": thresholds})
    rows = wj.sweep(EPISODES, grid=grid)
    written = rows.groupby("param_threshold")["write_actions"].sum()
    # priorities are 1/6 (no drift), 5/6 (drift) or 1 (drift inside a burst); at 1 MiB every admitted step is
    # written: all 800 steps above 0 and 0.1, the drift steps (critical) above 0.5, none above 1
    drifts = wj.episodes.generate(modes=EPISODES.modes, n_episodes=EPISODES.n_episodes).n_critical.sum()
    assert written[0.0] == written[0.1] == 800 and written[0.5] == drifts and written[1.0] == 0
    assert 0 < written[0.9] == (scores.values > 0.9).sum() < drifts  # the burst drifts


def test_scores_registered_again_reuse_the_compiled_sweep():
    from wpbjax.core import rollout
    from wpbjax.testing import max_traces

    # two scorers' policies (one kind, other scores, other names) sweep as one program: one trace for both,
    # and scores.episodes is the episodes as score_steps loaded them
    first = wj.score_steps(priority, track="privileged", episodes=EPISODES)
    second = wj.score_steps(lambda step: 1.0 - priority(step), track="privileged", episodes=EPISODES)
    names = [first.register("once")[0], second.register("again")[0]]
    grid = wj.Grid([1024, 1048576], tracks=["privileged"], params={"threshold": [0.2, 0.6]})
    with max_traces(rollout, "_grid_counts", n=1):
        rows = [wj.sweep(first.episodes, grid=replace(grid, policies=[name])) for name in names]
    assert [len(table) for table in rows] == [4 * 2 * 2] * 2
    # at 1 MiB every admitted step is written: each table writes its own scores above 0.6
    once, again = (
        table.query("param_threshold == 0.6 and budget_bytes == 1048576").write_actions.sum() for table in rows
    )
    assert once == (first.values > 0.6).sum() and again == (second.values > 0.6).sum() and once != again
