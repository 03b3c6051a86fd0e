"""Probes that ask for several facts, and history probes (wpbjax.scoring.reads), on hand-made stores: a probe is
right only when every fact is; ``read_credit`` is the weighted share of its facts right; a history probe needs
every version up to its step. And the trust checks of the probe labels (wpbjax.episodes.validate)."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest
from helpers import make_episode

from wpbjax.episodes import probes as probes_lib
from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.episodes.jsonl import EpisodeFormatError
from wpbjax.scoring import reads
from wpbjax.state.store import STILL_HELD

# t = 0..4: city Bergen, pet cat, city Oslo, city Rome, job baker (one fact per step, named by the facts label).
# The fact names share no token, so a record's relevance to a probe is 1 when it carries one of the probe's facts
# and 0 otherwise; with w_rec = w_imp = 0 equal scores go to the newer record.
FACTS = [("city", "Bergen"), ("pet", "cat"), ("city", "Oslo"), ("city", "Rome"), ("job", "baker")]
RETRIEVER = reads.Retriever(w_rel=1.0, w_rec=0.0, w_imp=0.0, top_k=(1, 2, 3, 5))
HELD = STILL_HELD


def _episode(probes: list) -> dict:
    episode = make_episode([{"note": f"{name} is {value}"} for name, value in FACTS])
    episode["labels"]["facts"] = {str(t): [[name, value, True]] for t, (name, value) in enumerate(FACTS)}
    episode["labels"]["probes"] = probes
    return episode


def _read(probes: list, left_at: list) -> dict:
    """The read columns of one run whose slot t left the store at ``left_at[t]`` (HELD: still held), per K."""
    encoded = encode_episodes([_episode(probes)])
    history = {"left_at": np.array([[left_at]], np.int32), "parent": np.full((1, 1, 5), -1, np.int32)}
    got = reads.read_metrics(history, encoded, np.array([0]), "unprivileged", RETRIEVER)
    return {name: value[0, 0] for name, value in got.items()}


TWO = {"t": 4, "facts": ["city", "pet"], "kind": "current"}


def test_a_two_fact_probe_with_one_fact_evicted_is_wrong_with_half_credit():
    # pet (t=1) left at step 2; city's records 3, 2, 0 remain (job's 4 is irrelevant). At every K the reader
    # answers city = Rome (record 3 ranks first) and abstains on pet: wrong, credit 1/2, a memory miss (the whole
    # store has no pet)
    got = _read([TWO], [HELD, 2, HELD, HELD, HELD])
    np.testing.assert_array_equal(got["read_accuracy"], [0, 0, 0, 0])
    np.testing.assert_array_equal(got["read_credit"], [0.5] * 4)
    np.testing.assert_array_equal(got["memory_miss_rate"], [1] * 4)
    np.testing.assert_array_equal(got["retrieval_miss_rate"], [0] * 4)
    np.testing.assert_array_equal(got["facts_per_probe"], [2] * 4)
    np.testing.assert_array_equal(got["stale_answer_rate"], [0] * 4)  # what it answered (Rome) is current
    np.testing.assert_array_equal(got["abstention_precision"], [math.nan] * 4)  # it answered one fact


def test_one_retrieval_serves_every_fact_of_the_probe():
    # everything held: records of city (0, 2, 3) and pet (1) all have relevance 1 to the probe (the best over its
    # facts), so newest first: 3, 2, 1, 0, then 4. K = 1, 2: pet's record 1 is not retrieved although the whole
    # store has it: a retrieval miss, credit 1/2. K >= 3: both facts right
    got = _read([TWO], [HELD] * 5)
    np.testing.assert_array_equal(got["read_accuracy"], [0, 0, 1, 1])
    np.testing.assert_array_equal(got["read_credit"], [0.5, 0.5, 1, 1])
    np.testing.assert_array_equal(got["retrieval_miss_rate"], [1, 1, 0, 0])
    np.testing.assert_array_equal(got["memory_miss_rate"], [0] * 4)
    # retrieved records carrying one of the probe's facts / retrieved: every one up to 4 records (K=5: 4 present
    # of those facts and job's record 4: 4 of 5)
    np.testing.assert_allclose(got["precision_at_k"], [1, 1, 1, 4 / 5])
    np.testing.assert_array_equal(got["read_accuracy_oracle_memory"], [0, 0, 1, 1])
    np.testing.assert_array_equal(got["read_accuracy_no_memory"], [0] * 4)


def test_weights_share_the_credit():
    weighted = dict(TWO, weights=[3, 1])  # city right, pet evicted: 3 / (3 + 1)
    got = _read([weighted], [HELD, 2, HELD, HELD, HELD])
    np.testing.assert_array_equal(got["read_credit"], [0.75] * 4)
    np.testing.assert_array_equal(got["read_accuracy"], [0] * 4)


def test_credit_is_the_mean_over_probes_and_one_fact_probes_count_as_before():
    probes = [TWO, {"t": 4, "fact": "job"}, {"t": 4, "fact": "dog", "kind": "never_seen"}]
    got = _read(probes, [HELD, 2, HELD, HELD, HELD])
    # TWO 1/2, job (record 4: top-1 of its probe) right, dog abstains right: credit (1/2 + 1 + 1) / 3
    np.testing.assert_allclose(got["read_credit"], [2.5 / 3] * 4)
    np.testing.assert_allclose(got["read_accuracy"], [2 / 3] * 4)
    np.testing.assert_allclose(got["facts_per_probe"], [4 / 3] * 4)


def test_a_never_seen_fact_among_others_is_right_by_abstaining():
    probe = {"t": 4, "facts": ["pet", "dog"]}  # dog never carried: its right answer is to abstain
    got = _read([probe], [HELD] * 5)
    # pet's record 1 ranks first (relevance 1; the others 0): right at every K
    np.testing.assert_array_equal(got["read_accuracy"], [1] * 4)
    np.testing.assert_array_equal(got["read_accuracy_no_memory"], [0] * 4)  # pet is answerable


def test_an_as_of_probe_asks_every_fact_as_of_one_step():
    probe = {"t": 4, "facts": ["city", "pet"], "kind": "as_of", "as_of": 2}  # city Oslo (t=2), pet cat
    got = _read([probe], [HELD] * 5)
    # ranking 3, 2, 1, 0, 4: K=1 {3}: city's 3 is after step 2: nothing usable, abstains; K=2 {3, 2}: Oslo, no pet;
    # K=3 {3, 2, 1}: both right
    np.testing.assert_array_equal(got["read_accuracy"], [0, 0, 1, 1])
    np.testing.assert_array_equal(got["read_credit"], [0, 0.5, 1, 1])


HISTORY = {"t": 4, "fact": "city", "kind": "history"}  # Bergen (t=0), Oslo (t=2), Rome (t=3), in order


def test_a_history_probe_with_the_middle_version_missing_is_wrong():
    # Oslo's record 2 left at step 3: the reader finds Bergen and Rome of three versions: wrong at every K, and a
    # memory miss (the whole store lacks Oslo too); one fact, so no credit
    got = _read([HISTORY], [HELD, HELD, 3, HELD, HELD])
    np.testing.assert_array_equal(got["read_accuracy"], [0] * 4)
    np.testing.assert_array_equal(got["read_credit"], [0] * 4)
    np.testing.assert_array_equal(got["memory_miss_rate"], [1] * 4)
    np.testing.assert_array_equal(got["stale_answer_rate"], [1] * 4)  # an incomplete history
    np.testing.assert_array_equal(got["read_accuracy_oracle_memory"], [0, 0, 1, 1])


def test_a_history_probe_needs_every_version_retrieved():
    # all held, ranking 3, 2, 0 (city), 1, 4: K=1 {3} Rome, K=2 {3, 2} Rome, Oslo: retrieval misses; K >= 3 all three
    got = _read([HISTORY], [HELD] * 5)
    np.testing.assert_array_equal(got["read_accuracy"], [0, 0, 1, 1])
    np.testing.assert_array_equal(got["retrieval_miss_rate"], [1, 1, 0, 0])
    # asked after step 2, the history is Bergen, Oslo: K = 2 finds both
    earlier = _read([dict(HISTORY, t=2)], [HELD] * 5)
    np.testing.assert_array_equal(earlier["read_accuracy"], [0, 1, 1, 1])
    # a history of a fact never seen: right by finding nothing
    never = _read([{"t": 4, "fact": "dog", "kind": "history"}], [HELD] * 5)
    np.testing.assert_array_equal(never["read_accuracy"], [1] * 4)
    np.testing.assert_array_equal(never["abstention_recall"], [1] * 4)


def test_with_oracle_memory_and_k_at_least_the_store_s_size_every_probe_is_right():
    probes = [
        TWO,
        dict(TWO, weights=[1, 2]),
        HISTORY,
        dict(HISTORY, t=2),
        {"t": 3, "facts": ["city", "pet", "job"]},
        {"t": 4, "facts": ["city", "pet"], "kind": "as_of", "as_of": 1},
        {"t": 1, "facts": ["pet", "dog"], "kind": "never_seen"},
    ]
    encoded = encode_episodes([_episode(probes)])
    history = {"left_at": np.full((1, 1, 5), -1, np.int32), "parent": np.full((1, 1, 5), -1, np.int32)}
    got = reads.read_metrics(history, encoded, np.array([0]), "unprivileged", reads.Retriever(top_k=(1, 5)))
    assert got["read_accuracy_oracle_memory"][0, 0, 1] == 1
    assert got["read_accuracy_oracle_memory"][0, 0, 0] < 1
    assert got["facts_per_probe"][0, 0, 0] == 13 / 7


def test_probe_rows_of_a_multi_fact_label():
    encoded = encode_episodes([_episode([TWO, {"t": 3, "fact": "job"}, dict(TWO, weights=[2, 0.5])])])
    assert encoded.probe_fact[0].tolist() == [0, 1, 2, 0, 1]
    assert encoded.probe_group[0].tolist() == [0, 0, 1, 2, 2]
    assert encoded.probe_weight[0].tolist() == [1, 1, 1, 2, 0.5]
    assert encoded.probe_pos[0].tolist() == [4, 4, 3, 4, 4]


@pytest.mark.parametrize(
    "probe, field",
    [
        ({"t": 4, "fact": "city", "as_of": math.nan}, "as_of"),
        ({"t": 4, "fact": "city", "kind": "as_of", "as_of": math.inf}, "as_of"),
        ({"t": 4, "fact": "city", "kind": "as_of"}, "as_of"),
        ({"t": 4, "fact": "city", "kind": "history", "as_of": 1}, "as_of"),
        ({"t": 4, "facts": []}, "facts"),
        ({"t": 4, "facts": ["city", 3]}, "facts"),
        ({"t": 4, "facts": ["city", "city"]}, "facts"),
        ({"t": 4, "facts": ["city", "pet"], "weights": [1]}, "weights"),
        ({"t": 4, "facts": ["city", "pet"], "weights": [1, math.nan]}, "weights[1]"),
        ({"t": 4, "facts": ["city", "pet"], "weights": [1, 0]}, "weights[1]"),
        ({"t": 4, "fact": "city", "weights": [1]}, "weights"),
        ({"t": 4, "fact": "city", "facts": ["pet"]}, ""),
        ({"t": 4.5, "fact": "city"}, "t"),
        ({"t": 4, "fact": 7}, "fact"),
        ({"t": 4, "facts": ["city"], "kind": "past"}, "kind"),
    ],
)
def test_a_bad_probe_label_is_refused_naming_the_probe_and_field(probe, field):
    episode = _episode([{"t": 0, "fact": "city"}, probe])
    with pytest.raises(
        EpisodeFormatError, match=re.escape(f"episode 0: labels.probes[1]{'.' if field else ''}{field}")
    ):
        encode_episodes([episode], source="probes.jsonl")


def test_the_cli_refuses_a_nan_as_of_naming_file_line_probe_and_field(tmp_path, capsys):
    from wpbjax.cli import main

    good = _episode([{"t": 4, "fact": "city"}])
    bad = _episode([{"t": 4, "fact": "city"}, {"t": 4, "facts": ["city"], "as_of": math.nan}])
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")  # json writes NaN, as a careless tool might
    out = tmp_path / "out.csv"
    assert main(["sweep", "--episodes", str(path), "--budgets", "1024", "--quiet", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and f"{path}:2" in error[0] and "labels.probes[1].as_of" in error[0], error
    assert not out.exists()


# --- Generated probes with several facts and histories ------------------------------------------------------------
RATES = probes_lib.ProbeConfig(multi_fact_rate=0.3, history_rate=0.2)


@pytest.fixture(scope="module")
def generated():
    return concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode, seed=5), 2)) for mode in MODES])


def test_generated_multi_fact_and_history_probes_depend_on_the_episode_alone(generated):
    alone = probes_lib.with_default_probes(_one(generated, 5), RATES)
    together = probes_lib.with_default_probes(generated, RATES)
    width = alone.probe_pos.shape[1]
    for name in probes_lib.PROBE_FIELDS:
        np.testing.assert_array_equal(getattr(alone, name)[0], getattr(together, name)[5][:width], err_msg=name)
    real = together.probe_pos >= 0
    sizes = np.concatenate([np.bincount(row[keep]) for row, keep in zip(together.probe_group, real)])
    assert set(sizes.tolist()) == {1, 2, 3}  # probes of 1, 2 and 3 facts
    assert (together.probe_kind[real] == probes_lib.HISTORY).any()


def _one(encoded, index):
    from wpbjax.episodes.batch import take

    return take(encoded, np.array([index]))


def test_the_rates_leave_each_probe_s_first_fact_as_drawn_without_them(generated):
    plain = probes_lib.with_default_probes(generated, probes_lib.ProbeConfig(multi_fact_rate=0, history_rate=0))
    rich = probes_lib.with_default_probes(generated, RATES)
    for n in range(generated.n_episodes):
        group = rich.probe_group[n]
        first = (group >= 0) & np.r_[True, group[1:] != group[:-1]]
        real = plain.probe_pos[n] >= 0
        np.testing.assert_array_equal(rich.probe_pos[n][first], plain.probe_pos[n][real])
        np.testing.assert_array_equal(rich.probe_fact[n][first], plain.probe_fact[n][real])
        # a current probe may become a history one; every other kind is as drawn
        kinds, was = rich.probe_kind[n][first], plain.probe_kind[n][real]
        assert np.all((kinds == was) | ((kinds == probes_lib.HISTORY) & (was == probes_lib.CURRENT)))
        # further facts of a probe: distinct, seen by its cutoff (never a never-seen probe)
        for g in np.unique(group[group >= 0]):
            rows = np.flatnonzero(group == g)
            assert len(set(rich.probe_fact[n][rows].tolist())) == len(rows)
            assert len(rows) == 1 or rich.probe_kind[n][rows[0]] != probes_lib.NEVER_SEEN


def test_generated_probes_with_oracle_memory_and_every_record_retrieved_are_all_right(generated):
    probed = probes_lib.with_default_probes(generated, RATES)
    n_steps = probed.arrays.valid.shape[1]
    history = {
        "left_at": np.full((probed.n_episodes, 1, n_steps), -1, np.int32),
        "parent": np.full((probed.n_episodes, 1, n_steps), -1, np.int32),
    }
    got = reads.read_metrics(
        history, probed, np.arange(probed.n_episodes), "unprivileged", reads.Retriever(top_k=(1, n_steps))
    )
    np.testing.assert_array_equal(got["read_accuracy_oracle_memory"][..., 1], 1.0)
    assert np.all(got["read_accuracy_oracle_memory"][..., 0] < 1)
    assert np.all(got["facts_per_probe"] > 1)


def test_the_default_generated_probes_have_several_facts_and_histories(generated):
    # the defaults (0.4, 0.1) are on: what --probes generate and wj.Reads(probes="generate") ask without the flags
    import wpbjax.api as wj

    assert probes_lib.ProbeConfig().multi_fact_rate == wj.Reads().multi_fact_rate == 0.4
    assert probes_lib.ProbeConfig().history_rate == wj.Reads().history_rate == 0.1
    probed = probes_lib.with_default_probes(generated)
    real = probed.probe_pos >= 0
    sizes = np.concatenate([np.bincount(row[keep]) for row, keep in zip(probed.probe_group, real)])
    assert sizes.max() > 1 and (probed.probe_kind[real] == probes_lib.HISTORY).any()
    one_fact = probes_lib.with_default_probes(generated, probes_lib.ProbeConfig(multi_fact_rate=0, history_rate=0))
    assert (one_fact.probe_pos >= 0).sum() < real.sum()


@pytest.mark.parametrize("flag", ["--multi-fact-rate", "--history-rate"])
def test_bad_rates_exit_2(tmp_path, capsys, flag):
    from wpbjax.cli import main

    out = tmp_path / "x.csv"
    command = ["sweep", "--n-episodes", "1", "--budgets", "1024", "--quiet", "--out", str(out), "--probes", "generate"]
    assert main(command + [flag, "1.5"]) == 2
    assert flag in capsys.readouterr().err and not out.exists()


def test_a_history_probe_reads_deltas_with_their_base_and_never_an_orphan():
    # tests/scoring/test_reads.py's worked example: A v1 at steps 0 and 2 (2 merged into 0 as a delta), A v2 at step 3;
    # step 4 evicts 0, orphaning delta 2. Score = relevance + 0.5 ** age.
    from helpers import SCRIPTED, run_one, script
    from test_reads import OBSERVATIONS, PLAN, RETRIEVER as WORKED

    from wpbjax.core import rollout

    episode = make_episode(OBSERVATIONS)
    episode["labels"]["probes"] = [
        {"t": 3, "fact": "api.v*.endpoint_0", "kind": "history"},  # v1, v2: records 3 (2.0), 0 + delta 2 (1.125)
        {"t": 4, "fact": "api.v*.endpoint_0", "kind": "history"},  # v1 only in the orphan delta 2: unreadable
    ]
    encoded, _, counts = run_one(
        rollout.with_history(SCRIPTED), [episode], 1 << 20, params=script(len(OBSERVATIONS), PLAN)
    )
    history = {"left_at": counts.left_at[:, None], "parent": counts.parent[:, None]}
    for index, expected in ((0, [0, 1]), (1, [0, 0])):
        one = dataclasses.replace(encoded, probe_pos=np.where(np.arange(2) == index, encoded.probe_pos, -1))
        got = reads.read_metrics(history, one, np.array([0]), "unprivileged", WORKED)
        np.testing.assert_array_equal(got["read_accuracy"][0, 0], expected)
    # the t = 4 probe: the whole store lacks a readable v1, a memory miss
    np.testing.assert_array_equal(got["memory_miss_rate"][0, 0], [1, 1])


def test_the_read_scorecard_shows_credit_and_facts_per_probe(tmp_path):
    import wpbjax.api as wj
    from wpbjax.reports import reads as reads_report

    probes = [TWO, {"t": 4, "fact": "job"}, HISTORY]  # 2 + 1 + 1 facts
    results = wj.sweep(
        encode_episodes([_episode(probes)]),
        grid=wj.Grid([1 << 20], policies=["always_write"], tracks=["unprivileged"]),
        reads=wj.Reads(top_k=(1, 5), retriever=dict(w_rel=1.0, w_rec=0.0, w_imp=0.0)),
    )
    card = reads_report.scorecard(results).set_index("top_k")
    # everything stored: K = 1 as test_one_retrieval_serves_every_fact_of_the_probe (credit 1/2), job right, the
    # history finds Rome only (credit 0); K = 5 all right
    np.testing.assert_allclose(card.loc[[1, 5], "read_credit"], [(0.5 + 1 + 0) / 3, 1])
    np.testing.assert_allclose(card.loc[[1, 5], "facts_per_probe"], [4 / 3, 4 / 3])
    markdown = reads_report.scorecard_markdown(reads_report.scorecard(results))
    assert "| credit | facts/q |" in markdown and "| 0.500 | 1.333 |" in markdown
    # results written before these columns still get their scorecard
    older = results.drop(columns=list(reads_report.LATER))
    assert reads_report.has_reads(older) and "credit" not in reads_report.scorecard(older)
