"""The reads trade-off's policies (wpbjax/policies/versions.py, docs/reads.md): add_only's store by hand, and
add_only against supersede and version_journal on hand-computed reads (current and as-of probes)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import make_episode, run_one

from tests.scoring.test_integrity import HAND
from wpbjax.core import rollout
from wpbjax.policies import make
from wpbjax.scoring import reads
from wpbjax.testing import check_policy

STEP = 106  # bytes of each HAND step (58 observation + 16 metadata + 48 header and index)
# HAND: endpoint_0 (e0) v1 (step 0), v2 (2), v2 again (3), v3 (4); endpoint_1 (e1) v1 (1), v2 (5).
PROBES = [
    {"t": 5, "fact": "api.v*.endpoint_0"},  # p0 e0 now: v3 (step 4)
    {"t": 5, "fact": "api.v*.endpoint_0", "kind": "as_of", "as_of": 2},  # p1 e0 after step 2: v2
    {"t": 5, "fact": "api.v*.endpoint_1"},  # p2 e1 now: v2 (step 5)
    {"t": 5, "fact": "api.v*.endpoint_1", "kind": "as_of", "as_of": 1},  # p3 e1 after step 1: v1
    {"t": 5, "fact": "api.v1.endpoint_7", "kind": "never_seen"},
]  # p4 never seen: abstain
# score = relevance + 0.1 * 0.5 ** age: a record of the asked fact (1) always outranks another (0.6), and
# among the asked fact's records the newest comes first
RETRIEVER = reads.Retriever(w_rel=1.0, w_rec=0.1, w_imp=0.0, decay=0.5, top_k=(1, 5))


def _kept(name, budget):
    _, stores, _ = run_one(make(name), [make_episode(HAND)], budget)
    return np.flatnonzero(stores.held[0]).tolist()


def test_add_only_stores_every_new_version_and_never_updates():
    # unlimited: 0 (e0 v1), 1 (e1 v1), 2 (e0 v2), 4 (e0 v3), 5 (e1 v2); step 3 repeats e0 v2, still held
    assert _kept("add_only", 100 * STEP) == [0, 1, 2, 4, 5]
    # room for 4: 0, 1, 2, (3 skipped), 4 fill it; step 5 (e1 v2, a new version) evicts the oldest, 0
    assert _kept("add_only", 4 * STEP) == [1, 2, 4, 5]
    # room for 2: every new version evicts the oldest: {0,1} -> {1,2} -> (3 skipped) -> {2,4} -> {4,5}
    assert _kept("add_only", 2 * STEP) == [4, 5]
    # the other two at room for 4 (tests/policies/test_history_policies.py): supersede one item per fact
    assert _kept("supersede", 4 * STEP) == [4, 5]
    assert _kept("version_journal", 4 * STEP) == [0, 1, 4, 5]


def test_add_only_writes_a_repeat_again_once_its_item_was_evicted():
    # e0 v1, e1 v1, e0 v1: at room for 2 nothing is evicted before step 2, so step 2 repeats a held version
    # (skipped); at room for 1, step 1 evicted step 0, so step 2 is written again
    repeat = [HAND[0], HAND[1], HAND[0]]
    _, stores, _ = run_one(make("add_only"), [make_episode(repeat)], 2 * STEP)
    assert np.flatnonzero(stores.held[0]).tolist() == [0, 1]
    _, stores, _ = run_one(make("add_only"), [make_episode(repeat)], STEP)
    assert np.flatnonzero(stores.held[0]).tolist() == [2]


def test_add_only_passes_check_policy():
    check_policy("add_only")  # its emits and layout suffice, one trace, O(1) work per step


def _reads(name, budget):
    episode = make_episode(HAND)
    episode["labels"]["probes"] = PROBES
    encoded, _, counts = run_one(rollout.with_history(make(name)), [episode], budget)
    history = {"left_at": counts.left_at[:, None], "parent": counts.parent[:, None]}
    got = reads.read_metrics(history, encoded, np.array([0]), "unprivileged", RETRIEVER)
    return {column: value[0, 0] for column, value in got.items()}


@pytest.mark.parametrize(
    "name, accuracy, stale, memory_miss, retrieval_miss, bytes_read",
    [
        # add_only holds 1, 2, 4, 5. K=1 retrieves the newest record of the fact: right on p0, p2 (current) and
        # p4 (abstains), abstains on the as-of probes p1, p3 (4 and 5 are after the asked step) though 2 and 1
        # are stored: retrieval misses. K=5 retrieves all 4 records: p1 -> 2 (v2), p3 -> 1 (v1): all right.
        ("add_only", [3 / 5, 5 / 5], [0, 0], [0, 0], [2 / 4, 0], [STEP, 4 * STEP]),
        # supersede holds 4, 5: current probes right; as-of probes abstain at every K (the history is gone:
        # memory misses)
        ("supersede", [3 / 5, 3 / 5], [0, 0], [2 / 4, 2 / 4], [0, 0], [STEP, 2 * STEP]),
        # version_journal holds 0, 1, 4, 5 (e0's intermediate v2 evicted). K=5: p3 -> 1 (v1) right, but p1 ->
        # 0 (v1), a stale answer (v2 was asked for): the store holds nothing better, a memory miss. K=1: p1 and
        # p3 abstain; p1 is a memory miss (no v2 anywhere), p3 a retrieval miss.
        ("version_journal", [3 / 5, 4 / 5], [0, 1 / 4], [1 / 4, 1 / 4], [1 / 4, 0], [STEP, 4 * STEP]),
    ],
)
def test_the_trade_off_on_hand_computed_reads(name, accuracy, stale, memory_miss, retrieval_miss, bytes_read):
    got = _reads(name, 4 * STEP)
    np.testing.assert_allclose(got["read_accuracy"], accuracy)
    np.testing.assert_allclose(got["stale_answer_rate"], stale)
    np.testing.assert_allclose(got["memory_miss_rate"], memory_miss)
    np.testing.assert_allclose(got["retrieval_miss_rate"], retrieval_miss)
    np.testing.assert_allclose(got["retrieved_bytes_per_query"], bytes_read)  # every probe retrieves that much
    np.testing.assert_allclose(got["abstention_recall"], [1, 1])  # p4 abstains everywhere


def test_the_report_s_read_scorecard_and_figure(tmp_path):
    """wpbjax.reports.reads on a sweep of the hand episode: the scorecard's rows are the hand-computed reads
    above (one row per budget x K x policy), the figure is drawn, and a run without probes gets neither."""
    import wpbjax as wj
    from wpbjax.episodes.encode import encode_episodes
    from wpbjax.reports import reads as reads_report, write_report
    from wpbjax.reports.plots import policy_styles

    episode = make_episode(HAND)
    episode["labels"]["probes"] = PROBES
    names = ["add_only", "supersede", "version_journal"]
    weights = dict(w_rel=1.0, w_rec=0.1, w_imp=0.0, decay=0.5)
    results = wj.sweep(
        encode_episodes([episode]),
        grid=wj.Grid([4 * STEP, 100 * STEP], policies=names, tracks=["unprivileged"]),
        reads=wj.Reads(top_k=(1, 5), retriever=weights),
    )
    card = reads_report.scorecard(results)
    assert len(card) == 2 * 2 * 3 and (card.runs == 1).all()
    at = card[(card.budget_bytes == 4 * STEP) & (card.top_k == 5)].set_index("policy")
    np.testing.assert_allclose(at.loc[names, "read_accuracy"], [1.0, 3 / 5, 4 / 5])
    np.testing.assert_allclose(at.loc[names, "stale_answer_rate"], [0, 0, 1 / 4])
    # with room for all: add_only and version_journal hold 0, 1, 2, 4, 5 and read everything right at K=5
    at = card[(card.budget_bytes == 100 * STEP) & (card.top_k == 5)].set_index("policy")
    np.testing.assert_allclose(at.loc[names, "read_accuracy"], [1.0, 3 / 5, 1.0])
    written = reads_report.write(results, tmp_path, policy_styles(results.policy))
    assert sorted(path.rsplit("/", 1)[1] for path in written) == [
        "read_accuracy_vs_budget.png",
        "read_scorecard.csv",
        "read_scorecard.md",
    ]
    markdown = (tmp_path / "read_scorecard.md").read_text()
    assert markdown.count("## Budget") == 4 and "| unprivileged | add_only | 1.000 |" in markdown
    import matplotlib.image

    image = matplotlib.image.imread(tmp_path / "read_accuracy_vs_budget.png")
    assert image.shape[0] >= 400 and image.shape[1] >= 900  # two K panels and the legend outside
    # the other tables count each run once, not once per K: the hand sweep's leaderboard shows 1 episode
    write_report(results, tmp_path / "whole")
    assert (tmp_path / "whole" / "leaderboard.md").read_text().strip().splitlines()[-1].endswith("| 1 |")
    assert len(reads_report.one_row_per_run(results)) == len(results) // 2
    plain = wj.sweep(
        encode_episodes([make_episode(HAND)]), grid=wj.Grid([4 * STEP], policies=names, tracks=["unprivileged"])
    )
    assert not reads_report.has_reads(plain)
    assert not any(path.rsplit("/", 1)[1].startswith("read_") for path in write_report(plain, tmp_path / "plain"))


def test_the_trade_off_table_in_docs_reads_md_regenerates():
    """docs/reads.md "Update when writing or when reading" (experiments/reads_tables.py, its trade_off part):
    every row, regenerated by the script's own code, appears in the doc character for character."""
    import pathlib

    from tests.reports.test_doc_tables import load_experiment, table_rows

    script = load_experiment("reads_tables")
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "reads.md").read_text()
    section = doc.split("## Update when writing or when reading", 1)[1].split("\n## ", 1)[0]
    assert "`python experiments/reads_tables.py` (its `trade_off` part)" in section
    results = script._sweep(
        script.paper_episodes(), script.TRADE_OFF_BUDGETS, script.TRADE_OFF, ["unprivileged"], script.TABLE_K
    )
    rows = table_rows(script.trade_off_markdown(results))
    assert len(rows) == len(script.TRADE_OFF_BUDGETS) * len(script.TRADE_OFF)
    missing = [row for row in rows if row not in table_rows(section)]
    assert not missing, "\n".join(missing)


def test_the_every_policy_rows_in_docs_reads_md_regenerate():
    """docs/reads.md "The paper grid: F1 against read accuracy" (experiments/reads_tables.py, its every_policy part,
    default generated probes with several facts and histories): the rows of add_only, supersede and
    version_journal on the unprivileged track at every budget, regenerated, appear in the doc as they are."""
    import pathlib

    from tests.reports.test_doc_tables import load_experiment, table_rows

    script = load_experiment("reads_tables")
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "reads.md").read_text()
    section = doc.split("## The paper grid: F1 against read accuracy", 1)[1].split("\n## ", 1)[0]
    assert "(its `every_policy` part)" in section and "| read credit K=5 |" in section
    policies = ["add_only", "supersede", "version_journal"]
    results = script._sweep(script.paper_episodes(), script.TABLE_BUDGETS, policies, ["unprivileged"], script.TABLE_K)
    rows = table_rows(script.every_policy_markdown(results))
    assert len(rows) == len(script.TABLE_BUDGETS) * len(policies)
    missing = [row for row in rows if row not in table_rows(section)]
    assert not missing, "\n".join(missing)
