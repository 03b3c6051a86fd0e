"""WRIT scenarios as episodes (wpbjax.episodes.importers.writ, `wpbjax import-writ`): every shared scenario imports
and sweeps; keeping everything scores 1 on every defined integrity metric, keeping nothing 0."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest
from conftest import REPO

from wpbjax.cli import main
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.importers.writ import import_writ
from wpbjax.episodes.jsonl import EpisodeFormatError, load_jsonl
from wpbjax.scoring import integrity
from wpbjax.sweeps import run_sweep

SCENARIOS = REPO.parent / "shared" / "writ" / "scenarios"
needs_writ = pytest.mark.skipif(not SCENARIOS.is_dir(), reason=f"WRIT scenarios not found at {SCENARIOS}")


@pytest.fixture(scope="module")
def writ_episodes(tmp_path_factory):
    out = tmp_path_factory.mktemp("writ") / "writ.jsonl"
    assert main(["import-writ", os.fspath(SCENARIOS), "--out", os.fspath(out), "--quiet"]) == 0
    return load_jsonl(out)


@needs_writ
def test_all_scenarios_import_and_sweep(writ_episodes):
    assert len(writ_episodes) == len(list(SCENARIOS.glob("*.json"))) == 58
    encoded = encode_episodes(writ_episodes)
    table = run_sweep(encoded, [10**8, 4096], policies="always_write,never_write")
    assert len(table) == 58 * 2 * 2 * 2
    values = table[list(integrity.COLUMNS)]
    assert np.all(values.isna() | ((values >= 0) & (values <= 1)))
    everything = table[(table.policy == "always_write") & (table.budget_bytes == 10**8)]
    nothing = table[table.policy == "never_write"]
    for name in integrity.COLUMNS:
        kept, none = everything[name].dropna(), nothing[name].dropna()
        if name == "stale_rate":
            assert (kept == 0).all() and none.empty  # nothing held: no stale fact, and no fact to be stale
        elif name == "provenance_completeness":
            assert (kept == 1).all() and none.empty  # no item stored: undefined
        else:
            assert len(kept) > 0 and (kept == 1).all() and (none == 0).all(), name
    # defined where the scenario has them: temporal probes and non_memory facts
    assert everything.over_retention.notna().sum() < len(everything)


@needs_writ
def test_cli_sweep_writes_blank_cells_not_nan(writ_episodes, tmp_path):
    episodes, out = tmp_path / "writ.jsonl", tmp_path / "results.csv"
    episodes.write_text("".join(json.dumps(episode, sort_keys=True) + "\n" for episode in writ_episodes))
    assert (
        main(
            [
                "sweep",
                "--episodes",
                os.fspath(episodes),
                "--policies",
                "never_write",
                "--budgets",
                "4096",
                "--tracks",
                "unprivileged",
                "--out",
                os.fspath(out),
                "--quiet",
            ]
        )
        == 0
    )
    text = out.read_text()
    header = next(csv.reader(text.splitlines()))
    assert set(integrity.COLUMNS) <= set(header)
    assert ",," in text and "nan" not in text.lower().replace("provenance", "")


@needs_writ
def test_scenario_labels(writ_episodes):
    by_id = {episode["labels"]["episode_id"]: episode for episode in writ_episodes}
    revert = by_id["update-004-revert-to-previous"]["labels"]
    # oldmail (session 1), newmail (2), oldmail again (3): three versions, a revert is a new one
    assert revert["facts"] == {"0": [["email", 0, True]], "1": [["email", 1, True]], "2": [["email", 2, True]]}
    assert revert["critical_steps"] == [0, 1, 2] and revert["total_drift_events"] == 2
    retracted = by_id["abstention-002-retracted-fact"]
    assert retracted["labels"]["critical_steps"] == []
    assert [step["metadata"]["priority"] for step in retracted["steps"]] == [0.0, 0.0, 0.25, 0.25, 0.25]
    # as_of 2026-03-15 falls after session 2 (2026-02-20) and before session 3 (2026-04-10)
    assert by_id["temporal-002-multi-fact"]["labels"]["probe_steps"] == [1]
    step = by_id["temporal-002-multi-fact"]["steps"][0]
    assert set(step["observation"]) == {"messages", "timestamp"}


def _scenario(tmp_path, **changes):
    scenario = {
        "sessions": [
            {
                "session_id": 1,
                "timestamp": "2026-01-01T00:00:00Z",
                "messages": [{"role": "user", "content": "I live in Oslo."}],
            }
        ],
        "memory_events": [
            {"id": "city", "type": "mutable", "value": "Oslo", "introduced_in": 1, "should_persist": True}
        ],
    }
    scenario.update(changes)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    return path


def test_minimal_scenario_imports(tmp_path):
    (episode,) = import_writ([_scenario(tmp_path)])
    assert episode["labels"]["facts"] == {"0": [["city", 0, True]]} and episode["labels"]["critical_steps"] == [0]


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"sessions": []}, "'sessions'"),
        ({"sessions": [{"session_id": 1, "messages": []}]}, r"sessions\[0\]: missing 'timestamp'"),
        ({"sessions": [{"session_id": 1, "timestamp": "soon", "messages": []}]}, r"sessions\[0\].timestamp"),
        ({"memory_events": [{"id": "x", "value": 1, "introduced_in": 7}]}, r"memory_events\[0\].introduced_in"),
        (
            {"memory_events": [{"id": "x", "previous_values": [{"value": 1}]}]},
            r"memory_events\[0\].previous_values\[0\]",
        ),
        ({"memory_events": [{"id": "x", "value": 1, "introduced_in": 1, "should_persist": "yes"}]}, "should_persist"),
    ],
)
def test_malformed_scenarios_name_file_and_field(tmp_path, changes, field):
    path = _scenario(tmp_path, **changes)
    with pytest.raises(EpisodeFormatError, match=f"{path}.*{field}"):
        import_writ([path])
    assert main(["import-writ", os.fspath(path), "--out", os.fspath(tmp_path / "out.jsonl")]) == 2
