"""A WRIT scenario's probe imports as a ``probes`` label (wpbjax.episodes.writ._probes), so reads are scored on
the real scenarios: a probe that should abstain asks about a fact never carried, a temporal query asks as of its
session, another asks for the current value of the memory event whose value its ground truth is."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.writ import import_writ, scenario_episode
from wpbjax.sweeps import run_sweep

SCENARIOS = REPO.parent / "shared" / "writ" / "scenarios"
needs_writ = pytest.mark.skipif(not SCENARIOS.is_dir(), reason=f"WRIT scenarios not found at {SCENARIOS}")


def _scenario(**extra) -> dict:
    """Three sessions; ``city`` is stated in session 1 and moves in session 3; ``pet`` is stated in session 2."""
    sessions = [
        {"session_id": n, "timestamp": f"2026-01-0{n}T09:00:00Z", "messages": [f"session {n}"]} for n in (1, 2, 3)
    ]
    events = [
        {
            "id": "city",
            "value": "Oslo",
            "introduced_in": 1,
            "updated_in": 3,
            "previous_values": [{"value": "Bergen", "source_session": 1}],
        },
        {"id": "pet", "value": "cat", "introduced_in": 2},
    ]
    return {"scenario_id": "hand", "sessions": sessions, "memory_events": events, **extra}


def test_each_kind_of_probe_by_hand():
    def probes(**extra):
        return scenario_episode(_scenario(**extra), "hand.json")["labels"]["probes"]

    # asked after the last session (t = 2): the event whose final value is the answer
    assert probes(probe={"session": 3}, ground_truth={"current_value": "Oslo"}) == [
        {"t": 2, "fact": "city", "kind": "current"}
    ]
    # a temporal query as of 2026-01-02 (the last session at or before it: position 1), answered by an old value
    assert probes(
        probe={"session": 3, "temporal_query": {"as_of": "2026-01-02T12:00:00Z"}},
        ground_truth={"current_value": "Bergen"},
    ) == [{"t": 2, "fact": "city", "kind": "as_of", "as_of": 1}]
    # should abstain: a fact the episode never carries
    assert probes(probe={"session": 3, "should_abstain": True}) == [
        {"t": 2, "fact": "never_seen:hand", "kind": "never_seen"}
    ]
    # an answer that is no single event's value (composed), or no probe at all: nothing imported
    assert probes(probe={"session": 3}, ground_truth={"current_value": "Oslo and a cat"}) == []
    assert probes() == []


@needs_writ
def test_published_scenarios_are_read_by_their_probes():
    episodes = import_writ([SCENARIOS])
    kinds = [episode["labels"]["probes"][0]["kind"] if episode["labels"]["probes"] else None for episode in episodes]
    # counted from the files: 4 scenarios should abstain, 3 temporal probes name one event, 24 current ones
    assert (kinds.count("never_seen"), kinds.count("as_of"), kinds.count("current"), kinds.count(None)) == (
        4,
        3,
        24,
        27,
    )
    by_id = {episode["labels"]["episode_id"]: episode for episode in episodes}
    assert by_id["drift-001-employer-change"]["labels"]["probes"] == [{"t": 4, "fact": "employer", "kind": "current"}]
    chosen = [
        by_id[name]
        for name in (
            "drift-001-employer-change",
            "abstention-001-never-mentioned",
            "certification-002-contradictory-records",
        )
    ]
    table = run_sweep(encode_episodes(chosen), [10**8], policies="always_write,no_mem", tracks=("unprivileged",))
    reads = {(row.episode_id, row.policy): row for row in table.itertuples()}
    # everything stored, unlimited budget: the current employer is read back; no memory: only abstaining is right
    assert reads["drift-001-employer-change", "always_write"].read_accuracy == 1
    assert reads["drift-001-employer-change", "no_mem"].read_accuracy == 0
    assert reads["abstention-001-never-mentioned", "no_mem"].read_accuracy == 1
    assert reads["abstention-001-never-mentioned", "always_write"].abstention_recall == 1
    # no probe imported: the read columns are blank
    assert reads["certification-002-contradictory-records", "always_write"].n_probes == 0
    assert json.dumps(by_id["certification-002-contradictory-records"]["labels"]["probes"]) == "[]"
