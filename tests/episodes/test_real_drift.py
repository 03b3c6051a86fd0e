"""The shipped Stripe history (wpbjax/data/real) and its episodes: the file matches its sidecar, its labels
derive again from its own surfaces, windows validate, encode and sweep, priorities see no later version."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pandas as pd
import pytest

import wpbjax as wj
from wpbjax.cli import main
from wpbjax.episodes.importers import openapi_import, real_drift
from wpbjax.episodes.source import EpisodeSource
from wpbjax.episodes.validate import validate_episode

SHIPPED = real_drift.history_path("stripe")
N_1000 = len(real_drift.window_starts(len(real_drift.load_history("stripe")), 1000, 500))  # 1,000-step windows


@pytest.fixture(scope="module")
def lines():
    return list(real_drift.load_history("stripe"))


def test_shipped_history_matches_its_sidecar(lines):
    with open(SHIPPED, "rb") as handle:
        data = handle.read()
    with open(SHIPPED + ".meta.json") as handle:
        meta = json.load(handle)
    assert meta["rows"] == len(lines) == meta["counts"]["lines"]
    assert meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert meta["origin"] == "https://github.com/stripe/openapi" and "MIT" in meta["licence"]["text"]
    assert meta["importer"]["version"] == openapi_import.IMPORTER_VERSION
    assert os.path.exists(os.path.join(real_drift.DATA_DIR, "stripe.NOTICE"))
    # the examples of real Stripe changes, as labelled
    charges = _line(lines, "2018-02-05", "POST /v1/charges")
    assert charges["breaking"] and ("request_removed", "body.three_d_secure") in _kinds(charges)
    intents = [
        line
        for line in lines
        if line["date"].startswith("2019-02-1") and line["breaking"] and line["endpoint"] == "POST /v1/payment_intents"
    ]
    assert any(("request_removed", "body.allowed_source_types") in _kinds(line) for line in intents)
    assert any(("request_added_required", "body.payment_method_types") in _kinds(line) for line in intents)
    links = _line(lines, "2022-03-1", "POST /v1/payment_links")
    assert {
        "kind": "request_required",
        "field": "body.line_items",
        "level": "breaking",
        "glitch": False,
        "detail": "",
    } in links["changes"]


def _kinds(line) -> list:
    return [(change["kind"], change["field"]) for change in line["changes"] if not change["glitch"]]


def _line(lines, date_prefix, endpoint):
    (line,) = [line for line in lines if line["date"].startswith(date_prefix) and line["endpoint"] == endpoint]
    return line


@pytest.mark.parametrize("name", ["openai", "discord"])  # the smaller shipped vendors; Stripe's takes ~40 s
def test_labels_derive_again_from_the_shipped_history(name):
    lines = list(real_drift.load_history(name))
    assert openapi_import.relabel(lines) == lines


def test_windows_validate_and_encode():
    episodes = real_drift.episodes("stripe", steps=200)
    n_lines = len(real_drift.load_history("stripe"))
    assert [episode["labels"]["episode_id"] for episode in episodes[:2]] == ["stripe:200:0", "stripe:200:100"]
    assert episodes[-1]["labels"]["episode_id"] == f"stripe:200:{n_lines - 200}"
    for index, episode in enumerate(episodes):
        validate_episode(episode, f"window {index}")
        assert len(episode["steps"]) == 200
    encoded = wj.episodes.real("stripe", steps=200)
    assert encoded.n_episodes == len(episodes)
    assert list(encoded.episode_id) == [episode["labels"]["episode_id"] for episode in episodes]
    assert encoded.n_critical.tolist() == [len(episode["labels"]["critical_steps"]) for episode in episodes]
    assert (encoded.arrays.fact_pair >= 0).any()  # the facts label reached the integrity tables
    assert len(real_drift.episodes("stripe", steps=1000)) == len(real_drift.window_starts(n_lines, 1000, 500))


def test_temporal_split():
    train = real_drift.episodes("stripe", steps=200, split="train")
    test = real_drift.episodes("stripe", steps=200, split="test")
    cut = int(real_drift.SPLIT_SHARE * len(real_drift.load_history("stripe")))
    assert all(episode["steps"][-1]["t"] < cut for episode in train)
    assert all(episode["steps"][0]["t"] >= cut for episode in test)
    assert train and test
    by_date = real_drift.episodes("stripe", steps=200, split="train", split_date="2020-01-01")
    assert all(episode["steps"][-1]["metadata"]["date"] < "2020-01-01" for episode in by_date)


def test_priority_sees_no_later_version(lines):
    """Cutting the history after a version changes no earlier step's priority (the labels may change: a
    glitch is known only once it is undone)."""
    full = real_drift.stream(lines, "stripe")
    cut = [line for line in lines if line["version"] <= 40]
    assert 0 < len(cut) < len(lines)
    assert [step["metadata"]["priority"] for step, *_ in real_drift.stream(cut, "stripe")] == [
        step["metadata"]["priority"] for step, *_ in full[: len(cut)]
    ]


def test_real_specs():
    assert real_drift.parse_spec("real:stripe")["steps"] is None
    assert {
        key: value for key, value in real_drift.parse_spec("real:stripe:1000:250:test").items() if key != "path"
    } == {"name": "stripe", "steps": 1000, "stride": 250, "split": "test"}
    with pytest.raises(ValueError, match="no shipped real history 'nope'"):
        real_drift.parse_spec("real:nope")


def test_source_records_and_checks_the_history(tmp_path):
    source = EpisodeSource.from_files(["real:stripe:1000"])
    record = source.to_dict()
    with open(SHIPPED + ".meta.json") as handle:
        assert record["files"] == [{"path": "real:stripe:1000", "sha256": json.load(handle)["sha256"]}]
    assert EpisodeSource.from_dict(record).load().n_episodes == N_1000
    record["files"][0]["sha256"] = "0" * 64
    with pytest.raises(ValueError, match="history changed since the sweep"):
        EpisodeSource.from_dict(record).load()


def test_cli_sweep_of_real_windows(tmp_path):
    out = tmp_path / "real.csv"
    assert (
        main(
            [
                "sweep",
                "--episodes",
                "real:stripe:1000",
                "--budgets",
                "10240",
                "--policies",
                "fifo_store_all",
                "--tracks",
                "unprivileged",
                "--out",
                os.fspath(out),
                "--quiet",
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    assert len(table) == N_1000 and table["episode_id"].str.startswith("stripe:1000:").all()
    assert np.isfinite(table["f1"]).all()


def test_windows_encode_like_any_jsonl_episode(tmp_path):
    """Written to JSONL and loaded back, the windows encode to the same arrays as wj.episodes.real."""
    from wpbjax.episodes.jsonl import save_jsonl

    path = tmp_path / "discord500.jsonl"
    save_jsonl(real_drift.episodes("discord", steps=500), path)
    direct, loaded = wj.episodes.real("discord", steps=500), wj.episodes.load(path)
    assert list(direct.episode_id) == list(loaded.episode_id)
    for name in ("write_cost", "utility", "priority", "critical", "fact_pair", "fact_prev", "api_index"):
        np.testing.assert_array_equal(getattr(direct.arrays, name), getattr(loaded.arrays, name), err_msg=name)


def test_the_stream_of_the_stored_deltas_is_the_stream_of_whole_lines():
    """Windows are streamed from the history as stored (each surface a change from the endpoint's line
    before); the steps equal those of the unpacked lines, every field map included."""
    from wpbjax.episodes.importers.openapi_import import read_history

    path = real_drift.history_path("openai")
    stored = real_drift.stream(read_history(path, packed=True), "openai")
    whole = real_drift.stream(read_history(path), "openai")
    assert [step for step, *_ in stored] == [step for step, *_ in whole]
    assert any(step["observation"].get("response") for step, *_ in stored)
