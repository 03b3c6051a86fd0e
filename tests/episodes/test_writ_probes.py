"""A WRIT scenario's probe imports as a ``probes`` label (wpbjax.episodes.importers.writ._probes), so reads are scored on
the real scenarios: a probe that should abstain asks about a fact never carried, a temporal query asks as of its
session, another asks for the current value of the memory event whose value its ground truth is."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REPO

from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.importers.writ import import_writ, scenario_episode
from wpbjax.episodes.importers.writ_probes import map_probe, words
from wpbjax.scoring import reads
from wpbjax.state.store import STILL_HELD
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
    # an answer that contains several events' values (composed): a probe of both; no probe at all: nothing
    assert probes(probe={"session": 3}, ground_truth={"current_value": "Oslo and a cat"}) == [
        {"t": 2, "facts": ["city", "pet"], "kind": "current"}
    ]
    assert probes() == []


@needs_writ
def test_published_scenarios_are_read_by_their_probes():
    episodes = import_writ([SCENARIOS])
    kinds = [episode["labels"]["probes"][0]["kind"] if episode["labels"]["probes"] else None for episode in episodes]
    # counted from the files: 4 scenarios should abstain, 4 temporal probes, 4 history questions, 43 current ones
    # (the rules of wpbjax.episodes.importers.writ_probes); 3 answers are paraphrases of no event's value
    assert [kinds.count(kind) for kind in ("never_seen", "as_of", "history", "current", None)] == [4, 4, 4, 43, 3]
    by_id = {episode["labels"]["episode_id"]: episode for episode in episodes}
    # "my employment history this year": a history question
    assert by_id["drift-001-employer-change"]["labels"]["probes"] == [{"t": 4, "fact": "employer", "kind": "history"}]
    chosen = [
        by_id[name]
        for name in (
            "drift-001-employer-change",
            "abstention-001-never-mentioned",
            "certification-002-contradictory-records",
            "work_state-005-project-handoff",
        )
    ]
    table = run_sweep(encode_episodes(chosen), [10**8], policies="always_write,no_mem", tracks=("unprivileged",))
    reads = {(row.episode_id, row.policy): row for row in table.itertuples()}
    # everything stored, unlimited budget: the current employer is read back; no memory: only abstaining is right
    assert reads["drift-001-employer-change", "always_write"].read_accuracy == 1
    assert reads["drift-001-employer-change", "no_mem"].read_accuracy == 0
    assert reads["work_state-005-project-handoff", "always_write"].n_probes == 0
    assert reads["abstention-001-never-mentioned", "no_mem"].read_accuracy == 1
    assert reads["abstention-001-never-mentioned", "always_write"].abstention_recall == 1
    # "$75K" is the event's 75000 once normalised (a k suffix is thousands)
    assert reads["certification-002-contradictory-records", "always_write"].read_accuracy == 1
    assert by_id["certification-002-contradictory-records"]["labels"]["probes"] == [
        {"t": 5, "fact": "atlas_initiative_budget_usd", "kind": "current"}
    ]
    # no probe imported: the read columns are blank
    assert json.dumps(by_id["work_state-005-project-handoff"]["labels"]["probes"]) == "[]"


# --- The mapping rules (wpbjax.episodes.importers.writ_probes), each on a hand-made scenario --------------------------------
def _salary(**probe) -> dict:
    """Four sessions: base salary $85,000 (1) -> $115,000 (3), a $5K bonus target (3), a $10,000 signing bonus
    (2), and an inferred dislike of evening calls (latent, 1 -> 4)."""
    sessions = [
        {"session_id": n, "timestamp": f"2026-01-0{n}T09:00:00Z", "messages": [f"session {n}"]} for n in (1, 2, 3, 4)
    ]
    events = [
        {
            "id": "base_salary",
            "value": "115000",
            "introduced_in": 1,
            "updated_in": 3,
            "previous_values": [{"value": "$85,000", "source_session": 1}],
        },
        {"id": "bonus_target", "value": "$5K", "introduced_in": 3},
        {"id": "signing_bonus", "value": "$10,000", "introduced_in": 2},
        {
            "id": "no_evening_calls",
            "type": "latent",
            "value": "avoids calls after 6pm",
            "introduced_in": 1,
            "updated_in": 4,
            "previous_values": [{"value": "declined a 7pm call", "source_session": 1}],
        },
    ]
    truth = {"current_value": probe.pop("answer", "$115,000 base + $5,000 bonus target")}
    return {
        "scenario_id": "salary",
        "sessions": sessions,
        "memory_events": events,
        "probe": {"session": 5, **probe},
        "ground_truth": truth,
    }


def _mapped(scenario):
    return map_probe(scenario, "hand.json", None)


def test_a_composed_answer_asks_for_every_event_whose_value_it_contains():
    # "$115,000" is base_salary's 115000 and "$5,000" bonus_target's $5K (currency, thousands separators and a k
    # suffix normalised); the $10,000 signing bonus is not in the answer
    mapping = _mapped(_salary())
    assert mapping.probes == [{"t": 3, "facts": ["base_salary", "bonus_target"], "kind": "current"}]
    assert mapping.rule == "composed"
    assert words("$115,000") == words("115000") == words("$115K") == ("115000",)


def test_a_history_question_asks_for_every_version():
    mapping = _mapped(_salary(required_capabilities=["retrieval", "history_preservation"]))
    assert mapping.probes == [{"t": 3, "facts": ["base_salary", "bonus_target"], "kind": "history"}]
    # a history question may be answered by an old value: every version is compared
    old = _mapped(_salary(required_capabilities=["history_preservation"], answer="It started at $85,000"))
    assert old.probes == [{"t": 3, "fact": "base_salary", "kind": "history"}]


def test_a_constraint_probe_asks_for_the_latent_events():
    mapping = _mapped(_salary(required_capabilities=["constraint_application"], answer="propose a morning call"))
    assert mapping.probes == [{"t": 3, "fact": "no_evening_calls", "kind": "current"}] and mapping.rule == "constraint"
    # an event typed "constraint" counts alike; the others (explicit, mutable) do not
    scenario = _salary(required_capabilities=["constraint_application"], answer="propose a morning call")
    scenario["memory_events"].append({"id": "budget_cap", "type": "constraint", "value": "$50", "introduced_in": 2})
    assert _mapped(scenario).probes == [{"t": 3, "facts": ["no_evening_calls", "budget_cap"], "kind": "current"}]


def test_an_answer_held_in_one_event_s_longer_value():
    # the answer is inside one event's value (the event elaborates it): that event
    mapping = _mapped(_salary(answer="calls after 6pm"))
    assert mapping.probes == [{"t": 3, "fact": "no_evening_calls", "kind": "current"}] and mapping.rule == "elaborated"


def test_a_multi_hop_answer_adds_the_entity_it_is_reached_through():
    scenario = _salary(required_capabilities=["multi_hop"], answer="555-0142")
    scenario["memory_events"] += [
        {"id": "dentist", "type": "entity", "value": "Dr. Patel", "introduced_in": 1},
        {"id": "optometrist", "type": "entity", "value": "Dr. Nguyen", "introduced_in": 1},
        {"id": "dr_patel_phone", "value": "555-0142", "introduced_in": 2},
    ]
    assert _mapped(scenario).probes == [{"t": 3, "facts": ["dentist", "dr_patel_phone"], "kind": "current"}]


def test_scenarios_without_a_mapping_say_why():
    assert _mapped(_salary(answer="a paraphrase of nothing stored")).reason.startswith("no memory event's value")
    twice = _salary(answer="$10,000")
    twice["memory_events"].append({"id": "signing_bonus_again", "value": "10000", "introduced_in": 3})
    assert _mapped(twice).reason == "2 memory events hold the answer"
    assert _mapped({**_salary(), "ground_truth": {}}).reason == "the ground truth has no current_value"


def _read(scenario: dict, left_at: list, top_k=(1, 4)) -> dict:
    """Read columns of one run on the scenario's episode whose session at position p left the store at
    ``left_at[p]`` (STILL_HELD: held)."""
    encoded = encode_episodes([scenario_episode(scenario, "hand.json")])
    history = {"left_at": np.array([[left_at]], np.int32), "parent": np.full((1, 1, len(left_at)), -1, np.int32)}
    got = reads.read_metrics(history, encoded, np.array([0]), "unprivileged", reads.Retriever(top_k=top_k))
    return {name: value[0, 0] for name, value in got.items()}


def test_a_composed_probe_read_by_hand():
    # base_salary's $115,000 was stated in session 3 (position 2), the bonus target there too. Everything held, K = 4
    # (every session): both right. Session 3 evicted at position 3: base salary answers the old $85,000 from
    # session 1 and the bonus is gone: wrong, no credit, a memory miss
    held = [STILL_HELD] * 4
    assert _read(_salary(), held)["read_accuracy"][1] == 1
    gone = _read(_salary(), [STILL_HELD, STILL_HELD, 3, STILL_HELD])
    assert gone["read_accuracy"][1] == 0 and gone["read_credit"][1] == 0 and gone["stale_answer_rate"][1] == 1
    assert gone["memory_miss_rate"][1] == 1


def test_a_constraint_probe_read_by_hand():
    # the latent constraint's current version was stated in session 4 (position 3); with it evicted the reader
    # answers session 1's older inference: stale
    scenario = _salary(required_capabilities=["constraint_application"], answer="propose a morning call")
    assert _read(scenario, [STILL_HELD] * 4)["read_accuracy"][1] == 1
    stale = _read(scenario, [STILL_HELD, STILL_HELD, STILL_HELD, 3])
    # the probe is asked after position 3: an item that left at step 3 is gone by then
    assert stale["read_accuracy"][1] == 0 and stale["stale_answer_rate"][1] == 1


def test_the_import_summary_names_every_scenario_without_a_probe(tmp_path, capsys):
    from wpbjax.cli import main

    paraphrase = dict(_salary(answer="nothing of the sort"), scenario_id="paraphrase")
    for name, scenario in (("a.json", _salary()), ("b.json", paraphrase)):
        (tmp_path / name).write_text(json.dumps(scenario))
    assert main(["import-writ", str(tmp_path), "--out", str(tmp_path / "out.jsonl")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == [
        "probes for 1 of 2 scenarios (composed: 1)",
        "  no probe: paraphrase: no memory event's value is in the answer or holds it (a paraphrased answer)",
    ]


@needs_writ
def test_the_writ_table_in_docs_reads_md_regenerates():
    """docs/reads.md "WRIT: every scenario read, by category" (experiments/reads_writ_table.py): the rows of the four
    zoo policies, regenerated by the script's own code, appear in the doc character for character (the gates'
    rows need training: not rerun here)."""
    from tests.reports.test_doc_tables import load_experiment, table_rows

    script = load_experiment("reads_writ_table")
    section = (REPO / "docs" / "reads.md").read_text().split("## WRIT: every scenario read", 1)[1].split("\n## ", 1)[0]
    names = {name: name for name in script.POLICIES}
    results, counts = script.sweep(SCENARIOS, names, top_k=(5,))
    assert counts == (55, 58)
    rows = table_rows(script.table(results, names))
    assert len(rows) == len(script.POLICIES) * len(script.BUDGETS)
    missing = [row for row in rows if row not in table_rows(section)]
    assert not missing, "\n".join(missing)
