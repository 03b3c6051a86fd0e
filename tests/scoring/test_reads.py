"""Reads (wpbjax.scoring.reads): every read metric on a hand-computed store (the example docs/reads.md works through),
the store's recorded history, oracle memory, K monotonicity, and reads in a sweep's rows."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from helpers import SCRIPTED, make_episode, run_one, script

from wpbjax.core import rollout
from wpbjax.episodes import probes as probes_lib
from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes
from wpbjax.episodes.jsonl import EpisodeFormatError
from wpbjax.policies import make
from wpbjax.scoring import reads
from wpbjax.state import actions
from wpbjax.state.store import STILL_HELD

# Endpoint A (fact "api.v*.endpoint_0") goes v1 -> v2 -> v3, B (endpoint_1) v1 -> v2. Step 2 repeats A v1 with
# new params (merged into step 0 as a delta); step 4 evicts step 0 (its delta is orphaned); step 5 (A v3) is
# never stored.
OBSERVATIONS = [
    {"api": "api.v1.endpoint_0", "params": ["a"], "version": 1},
    {"api": "api.v1.endpoint_1", "params": ["b"], "version": 1},
    {"api": "api.v1.endpoint_0", "params": ["a", "c"], "version": 1},
    {"api": "api.v2.endpoint_0", "params": ["a"], "version": 2},
    {"api": "api.v2.endpoint_1", "params": ["b", "d"], "version": 2},
    {"api": "api.v3.endpoint_0", "params": [], "version": 3},
]
PLAN = {
    0: (actions.WRITE, -1, []),
    1: (actions.WRITE, -1, []),
    2: (actions.MERGE, 0, []),
    3: (actions.WRITE, -1, []),
    4: (actions.WRITE, -1, [0]),
}
PROBES = [
    {"t": 2, "fact": "api.v1.endpoint_0"},  # p0 A now: v1 (base 0 + delta 2)
    {"t": 3, "fact": "api.v*.endpoint_0", "kind": "as_of", "as_of": 1},  # p1 A as of step 1: v1
    {"t": 4, "fact": "api.v*.endpoint_0"},  # p2 A now: v2
    {"t": 4, "fact": "api.v1.endpoint_9", "kind": "never_seen"},  # p3 an api never seen: abstain
    {"t": 5, "fact": "api.v*.endpoint_0"},  # p4 A now: v3 (never stored)
    {"t": 5, "fact": "api.v*.endpoint_1"},
]  # p5 B now: v2
# score = relevance + 0.5 ** (steps since the record's base step); relevance 1 (same endpoint) or
# 0.6 (another: "api", "v", "endpoint" shared of 5 name tokens)
RETRIEVER = reads.Retriever(w_rel=1.0, w_rec=1.0, w_imp=0.0, decay=0.5, top_k=(1, 2))


def _hand_episode():
    episode = make_episode(OBSERVATIONS)
    episode["labels"]["probes"] = PROBES
    return episode


def _cost(observation) -> int:
    """SEMANTICS §2 on the unprivileged track: JSON of the observation and of {"mode": "hand"}, + 32 + 16."""
    return len(json.dumps(observation, sort_keys=True)) + len(json.dumps({"mode": "hand"})) + 48


@pytest.fixture(scope="module")
def hand():
    policy = rollout.with_history(SCRIPTED)
    encoded, _, counts = run_one(policy, [_hand_episode()], 1 << 20, params=script(len(OBSERVATIONS), PLAN))
    return encoded, counts


def test_the_store_records_each_slot_s_history(hand):
    _, counts = hand
    # slot 0 left at step 4 (evicted); 1..4 still held (2 as an orphan delta); 5 never written
    assert counts.left_at[0].tolist() == [4, STILL_HELD, STILL_HELD, STILL_HELD, STILL_HELD, -1]
    assert counts.parent[0].tolist() == [-1, -1, 0, -1, -1, -1]
    assert counts.written_at is None  # no WRITE_PAST: each item is written at its own step


def test_the_same_rows_with_and_without_history():
    episodes = encode_episodes(generate_episodes(DriftConfig(mode="redundancy"), 2))
    for name in ("merge_aggressive", "last_kb"):
        plain = rollout.batch_counts(make(name), episodes.batch("unprivileged"), [1024, 8192])
        recorded = rollout.batch_counts(rollout.with_history(make(name)), episodes.batch("unprivileged"), [1024, 8192])
        for field, value in vars(plain).items():
            if value is not None:
                np.testing.assert_array_equal(np.asarray(value), np.asarray(getattr(recorded, field)), err_msg=field)
        assert np.asarray(recorded.left_at).shape == (2, 2, 200)


def _metrics(encoded, counts):
    history = {
        name: counts_field[:, None] for name, counts_field in (("left_at", counts.left_at), ("parent", counts.parent))
    }
    return {
        name: value[0, 0]
        for name, value in reads.read_metrics(history, encoded, np.array([0]), "unprivileged", RETRIEVER).items()
    }


def test_every_read_metric_on_the_hand_computed_store(hand):
    encoded, counts = hand
    got = _metrics(encoded, counts)
    # Records (a base item with its live deltas) present after each probe's step, ranked by score:
    # p0 (t=2, A):         0 (1 + .25, with delta 2), 1 (.6 + .5)      K=1: {0} -> delta 2: v1 right
    # p1 (t=3, A as of 1): 3 (2), 0 (1.125), 1 (.85)                   K=1: {3}: nothing at or before step 1 ->
    #                      abstains (the whole store has 0: a retrieval miss); K=2: {3, 0} -> 0: v1 right
    # p2 (t=4, A):         base 0 evicted: 4 (B, 1.6), 3 (1.5), 1 (.725)   K=1: {4}: abstains, top-1 is B (a
    #                      distractor, a retrieval miss); K=2: -> 3: v2 right
    # p3 (t=4, endpoint_9): never seen: abstains, right (relevance .6 everywhere)
    # p4 (t=5, A):         3 (1.25), 4 (1.1), 1 (.6625)                -> 3: v2, stale (v3 was never stored:
    #                      the whole store is wrong too, a memory miss)
    # p5 (t=5, B):         4 (1.5), 1 (1.0625), 3 (.85)                -> 4: v2 right
    np.testing.assert_array_equal(got["top_k"], [1, 2])
    assert got["n_probes"].tolist() == [6, 6]
    np.testing.assert_allclose(got["read_accuracy"], [3 / 6, 5 / 6])
    np.testing.assert_allclose(got["stale_answer_rate"], [1 / 5, 1 / 5])  # p4, of 5 answerable
    np.testing.assert_allclose(got["memory_miss_rate"], [1 / 5, 1 / 5])  # p4
    np.testing.assert_allclose(got["retrieval_miss_rate"], [2 / 5, 0])  # p1, p2 at K=1
    np.testing.assert_allclose(got["distractor_rate"], [1 / 5, 1 / 5])  # p2 (top-1 does not depend on K)
    np.testing.assert_allclose(got["abstention_precision"], [1 / 3, 1])  # K=1 abstains on p1, p2, p3
    np.testing.assert_allclose(got["abstention_recall"], [1, 1])
    # K=1: records of the asked fact p0 0, p1 3, p2 4 (no), p4 3, p5 4: 4 of 5;
    # K=2: p0 {0, 1} 1, p1 {3, 0} 2, p2 {4, 3} 1, p4 {3, 4} 1, p5 {4, 1} 2: 7 of 10
    np.testing.assert_allclose(got["precision_at_k"], [4 / 5, 7 / 10])
    cost = [_cost(observation) for observation in OBSERVATIONS]
    delta = len(json.dumps({"params": ["a", "c"]})) + 16  # step 2's delta against step 0 (version unchanged)
    k1 = [cost[0] + delta, cost[3], cost[4], cost[4], cost[3], cost[4]]  # p3's top-1: 4 (.6 + 1)
    k2 = [
        cost[0] + delta + cost[1],
        cost[3] + cost[0] + delta,
        cost[4] + cost[3],
        cost[4] + cost[3],
        cost[3] + cost[4],
        cost[4] + cost[1],
    ]
    np.testing.assert_allclose(got["retrieved_bytes_per_query"], [sum(k1) / 6, sum(k2) / 6])
    # Attribution. No memory: only p3 (abstain) is right. Oracle memory (every step, never evicted), K=1:
    # p0 -> 2 (2.0) right; p1 -> 3 abstains; p2 -> 4 (B) abstains; p3 right; p4 -> 5 (2.0) v3 right;
    # p5 -> 5 (A, 1.6 beats B's 1.5) abstains: 3 of 6. K=2: p1 {3, 2} still abstains, the rest right: 5 of 6.
    np.testing.assert_allclose(got["read_accuracy_no_memory"], [1 / 6, 1 / 6])
    np.testing.assert_allclose(got["read_accuracy_oracle_memory"], [3 / 6, 5 / 6])
    # wrong answers oracle memory gets right: K=1 p4 of {p1, p2, p4}; K=2 p4 of {p4}
    np.testing.assert_allclose(got["writer_error_share"], [1 / 3, 1])


def test_probes_from_labels(hand):
    encoded, _ = hand
    assert encoded.fact_names[0] == ("api.v*.endpoint_0", "api.v*.endpoint_1", "api.v*.endpoint_9")
    assert encoded.probe_pos[0].tolist() == [2, 3, 4, 4, 5, 5]
    assert encoded.probe_as_of[0].tolist() == [2, 1, 4, 4, 5, 5]
    assert encoded.probe_fact[0].tolist() == [0, 0, 0, 2, 0, 1]
    assert encoded.probe_kind[0].tolist() == [0, 1, 0, 2, 0, 0]


@pytest.mark.parametrize(
    "probe, message",
    [
        ({"t": 99, "fact": "x"}, "labels.probes[0]"),
        ({"t": 1, "fact": "x", "kind": "later"}, "labels.probes[0].kind"),
        ({"t": 1, "fact": "x", "kind": "as_of", "as_of": 3}, "labels.probes[0].as_of"),
    ],
)
def test_bad_probe_labels_name_the_probe(probe, message):
    episode = make_episode(OBSERVATIONS)
    episode["labels"]["probes"] = [probe]
    with pytest.raises(EpisodeFormatError, match=re.escape(f"episode 0: {message}")):
        encode_episodes([episode], source="probes.jsonl")


def test_generated_probes_depend_on_the_episode_alone():
    # one-fact probes (the shares of several facts and histories: tests/scoring/test_reads_multi.py)
    one_fact = probes_lib.ProbeConfig(multi_fact_rate=0.0, history_rate=0.0)
    episodes = [generate_episodes(DriftConfig(mode=mode), 3) for mode in ("default", "redundancy")]
    alone = probes_lib.with_default_probes(encode_episodes(episodes[1][2:]), one_fact)
    together = probes_lib.with_default_probes(concat_encoded([encode_episodes(part) for part in episodes]), one_fact)
    for name in probes_lib.PROBE_FIELDS:
        np.testing.assert_array_equal(getattr(alone, name)[0], getattr(together, name)[5])
    kinds = together.probe_kind[together.probe_kind >= 0]
    assert together.probe_pos.shape == (6, 20) and set(kinds.tolist()) == {0, 1, 2}
    # a current or as-of probe asks about a fact seen by its step; a never-seen one about none seen yet
    number, _ = probes_lib.fact_numbers(together.arrays.fact_key)
    first = probes_lib.first_positions(number, number.max((1, 2)) + 1)
    for n, q in zip(*np.nonzero(together.probe_pos >= 0)):
        fact, kind, cutoff = together.probe_fact[n, q], together.probe_kind[n, q], together.probe_as_of[n, q]
        seen = fact >= 0 and first[n, fact] <= cutoff
        assert seen == (kind != probes_lib.NEVER_SEEN), (n, q)


@pytest.fixture(scope="module")
def probed():
    config = probes_lib.ProbeConfig(rate=0.1)
    return probes_lib.with_default_probes(
        concat_encoded(
            [
                encode_episodes(generate_episodes(DriftConfig(mode=mode, seed=5), 2))
                for mode in ("default", "redundancy")
            ]
        ),
        config,
    )


def test_oracle_memory_with_every_record_retrieved_reads_perfectly(probed):
    # K at least the store's size (T = 200 records): the reader sees every step, so every probe (current, as-of
    # and never-seen alike) is answered right
    history = {
        "left_at": np.full((probed.n_episodes, 1, 200), -1, np.int32),
        "parent": np.full((probed.n_episodes, 1, 200), -1, np.int32),
    }
    got = reads.read_metrics(
        history, probed, np.arange(probed.n_episodes), "unprivileged", reads.Retriever(top_k=(1, 200))
    )
    np.testing.assert_array_equal(got["read_accuracy_oracle_memory"][..., 1], 1.0)
    assert np.all(got["read_accuracy_oracle_memory"][..., 0] < 1)  # one record is not enough
    np.testing.assert_array_equal(got["read_accuracy"], got["read_accuracy_no_memory"])  # an empty store


def test_read_accuracy_never_falls_as_k_grows(probed):
    top_k = (1, 2, 3, 5, 8, 13, 20, 50, 200)
    for name in ("fifo_store_all", "last_kb", "merge_aggressive", "priority_greedy"):
        counts = rollout.batch_counts(rollout.with_history(make(name)), probed.batch("privileged"), [1024, 4096, 32768])
        history = {field: np.asarray(getattr(counts, field)) for field in ("left_at", "parent")}
        got = reads.read_metrics(
            history, probed, np.arange(probed.n_episodes), "privileged", reads.Retriever(top_k=top_k)
        )
        accuracy = got["read_accuracy"]
        assert np.all(np.diff(accuracy, axis=-1) >= 0), name
        assert np.all(np.diff(got["retrieved_bytes_per_query"], axis=-1) >= 0), name
        # whatever K, a wrong answer is the writer's (memory miss) or the retriever's (retrieval miss)
        wrong = 1 - accuracy
        answerable = 1 - got["read_accuracy_no_memory"]
        np.testing.assert_allclose(
            wrong, answerable * (got["memory_miss_rate"] + got["retrieval_miss_rate"]), atol=1e-12
        )


def test_runs_with_one_history_are_read_once_and_counted_for_each():
    # Episode 0: runs 0 and 2 hold the same store, run 1 another; episode 1: all three hold one store.
    # The distinct runs are 2 columns wide (episode 0's two); episode 1 repeats its first run in column 1.
    left_at = np.array([[[5, 9], [3, 9], [5, 9]], [[1, 2], [1, 2], [1, 2]]])
    parent = np.full(left_at.shape, -1)
    distinct, copy_of = reads._distinct_runs({"left_at": left_at, "parent": parent, "written_at": None})
    np.testing.assert_array_equal(copy_of, [[0, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(distinct["left_at"], [[[5, 9], [3, 9]], [[1, 2], [1, 2]]])
    assert set(distinct) == {"left_at", "parent"}
    # parents count: the same departures with another parent are another run
    parent[0, 2, 1] = 0
    assert reads._distinct_runs({"left_at": left_at, "parent": parent})[1][0].tolist() == [0, 1, 2]


def test_read_counts_of_repeated_runs_equal_reading_every_run(probed):
    # fifo_store_all at budgets the episodes never fill keeps the same store at each: read once, counted for
    # each, the counts equal those of reading every run on its own
    counts = rollout.batch_counts(
        rollout.with_history(make("fifo_store_all")), probed.batch("unprivileged"), [512, 4096, 10**6, 10**7]
    )
    history = {field: np.asarray(getattr(counts, field)) for field in ("left_at", "parent")}
    assert (history["left_at"][:, 2] == history["left_at"][:, 3]).all()
    episodes = np.arange(probed.n_episodes)
    costs = probed.track_costs("unprivileged")
    retriever = reads.Retriever(top_k=(1, 5, 20))
    once = reads.read_counts(history, probed, episodes, costs, retriever)
    every = reads._read_counts(history, probed, episodes, costs, retriever)
    assert once.keys() == every.keys()
    for name in once:
        np.testing.assert_array_equal(once[name], every[name], err_msg=name)


def test_a_sweep_adds_read_columns_and_keeps_every_other_column(tmp_path):
    from wpbjax.cli import main

    common = [
        "sweep",
        "--n-episodes",
        "1",
        "--budgets",
        "1024,16384",
        "--policies",
        "fifo_store_all,merge_aggressive",
        "--quiet",
    ]
    plain, read = tmp_path / "plain.csv", tmp_path / "reads.csv"
    assert main(common + ["--out", str(plain)]) == 0
    assert main(common + ["--out", str(read), "--probes", "generate", "--top-k", "1,5"]) == 0
    plain, read = pd.read_csv(plain), pd.read_csv(read)
    assert len(read) == 2 * len(plain) and read.top_k.tolist() == [1, 5] * len(plain)
    others = [column for column in plain.columns if column not in reads.READ_COLUMNS]
    pd.testing.assert_frame_equal(read[others].iloc[::2].reset_index(drop=True), plain[others])
    assert plain.read_accuracy.isna().all() and (plain.n_probes == 0).all() and (plain.top_k == 5).all()
    assert read.read_accuracy.between(0, 1).all() and (read.n_probes == 20).all()
    by_k = read.pivot_table(
        index=["mode", "episode_id", "policy", "budget_bytes"], columns="top_k", values="read_accuracy"
    )
    assert (by_k[5] >= by_k[1]).all()


def test_bad_read_arguments_exit_2(tmp_path, capsys):
    from wpbjax.cli import main

    for flags, flag in (
        (["--top-k", "0"], "--top-k"),
        (["--retriever", "decay=2"], "--retriever"),
        (["--probe-rate", "3", "--probes", "generate"], "--probe-rate"),
    ):
        assert (
            main(
                ["sweep", "--n-episodes", "1", "--budgets", "1024", "--quiet", "--out", str(tmp_path / "x.csv")] + flags
            )
            == 2
        )
        assert flag in capsys.readouterr().err
        assert not (tmp_path / "x.csv").exists()
