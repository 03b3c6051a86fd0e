"""Write-integrity metrics (wpbjax.scoring.integrity): parity with the published harness's final stores, and a
hand-computed example (the one docs/integrity.md works through)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pyref
import pytest
from helpers import make_episode

from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.episodes.jsonl import EpisodeFormatError
from wpbjax.scoring import integrity
from wpbjax.sweeps import PAPER_BUDGETS, run_sweep

ENDPOINT = re.compile(r"endpoint_(\d+)$")


def _plain_fidelity_and_coverage(episode: dict, policy: str, track: str, budget: int) -> tuple[float, float]:
    """The published harness's final store (tests/pyref.py) -> (update_fidelity, history_coverage), in
    plain Python: fact = endpoint j of "api.v{v}.endpoint_{j}", version = the observation's version."""
    steps = episode["steps"]
    views = [pyref.view_step(step, track) for step in steps]
    store, _, _ = pyref.final_store(steps, policy, track, budget, views)
    fact_at = {
        step["t"]: (int(ENDPOINT.search(step["observation"]["api"]).group(1)), step["observation"]["version"])
        for step in steps
    }
    latest = {}
    for step in steps:  # in time order: the last version seen of each endpoint
        endpoint, version = fact_at[step["t"]]
        latest[endpoint] = version
    observed = set(fact_at.values())
    held = {fact_at[t] for t in pyref.retained_steps(store, steps)}
    fidelity = sum((endpoint, version) in held for endpoint, version in latest.items()) / len(latest)
    return fidelity, len(held) / len(observed)


def test_fidelity_and_coverage_equal_the_published_stores():
    # every mode, both tracks, budgets 1 KB .. 1 MB; one sweep (one compile per policy). The generators'
    # array paths (published_arrays, jax_gen) build the same fact tables: tests/episodes/test_reference_arrays.py and
    # tests/episodes/test_jax_gen.py compare them (helpers.assert_same_encoding).
    episodes = [episode for mode in MODES for episode in generate_episodes(DriftConfig(mode=mode, seed=3), 2)]
    table = run_sweep(
        concat_encoded([encode_episodes(episodes[i : i + 2]) for i in range(0, len(episodes), 2)]), PAPER_BUDGETS
    )
    assert set(table.track) == {"unprivileged", "privileged"} and len(set(table.policy)) == 7
    assert len(table) == len(episodes) * len(PAPER_BUDGETS) * 12
    for row in table.itertuples():
        episode = episodes[MODES.index(row.mode) * 2 + row.episode_id]  # episode ids 0, 1 in each mode
        expected = _plain_fidelity_and_coverage(episode, row.policy, row.track, row.budget_bytes)
        assert (row.update_fidelity, row.history_coverage) == pytest.approx(expected, abs=1e-12), row
    # every column in [0, 1] or blank; the extremes of the grid really differ
    values = table[list(integrity.COLUMNS)].to_numpy()
    assert np.all(np.isnan(values) | ((values >= 0) & (values <= 1)))
    assert table.update_fidelity.min() < 0.5 and table.update_fidelity.max() == 1.0


# A worked example (docs/integrity.md): endpoints e0 and e1; e0 goes v1 -> v2 -> v3, e1 goes v1 -> v2.
HAND = [
    {"api": "api.v1.endpoint_0", "version": 1},
    {"api": "api.v1.endpoint_1", "version": 1},
    {"api": "api.v2.endpoint_0", "version": 2},
    {"api": "api.v2.endpoint_0", "version": 2},
    {"api": "api.v3.endpoint_0", "version": 3},
    {"api": "api.v2.endpoint_1", "version": 2},
]


def test_worked_example_by_hand():
    encoded = encode_episodes([make_episode(HAND)])
    # each step costs 106 bytes (58 of observation, 16 of {"mode": "hand"}, 48 of header and index)
    table = run_sweep(encoded, [200, 300, 10_000], policies="fifo_store_all,last_kb,no_mem", tracks=("unprivileged",))
    got = table.set_index(["policy", "budget_bytes"])[list(integrity.COLUMNS)]
    nan = np.nan
    # probes at positions 0, 1, 2, 2, 3, 4, 5 (8 * length / 8 - 1, the first one, -1, sees nothing): 13
    # (probe, fact) pairs; the current version is e0v1 at 2 of them, e1v1 at 5, e0v2 at 3, e0v3 at 2, e1v2 at 1
    expected = {
        # fifo at 200 B keeps step 0 (e0 v1): no latest version; 1 of 5 pairs; e0 is stale; 2/13 probes
        ("fifo_store_all", 200): [0.0, 1 / 5, 1.0, 0.0, 2 / 13, 1.0, nan],
        # last_kb at 200 B keeps step 5 (e1 v2): e1's latest; 1/5 pairs; nothing stale; 1/13 probes
        ("last_kb", 200): [1 / 2, 1 / 5, 0.0, 0.0, 1 / 13, 1.0, nan],
        # fifo at 300 B keeps steps 0, 1: both facts stale; pairs e0v1, e1v1; 7/13 probes
        ("fifo_store_all", 300): [0.0, 2 / 5, 1.0, 0.0, 7 / 13, 1.0, nan],
        # last_kb at 300 B keeps steps 4, 5: both latest; no change has both ends; 3/13 probes
        ("last_kb", 300): [1.0, 2 / 5, 0.0, 0.0, 3 / 13, 1.0, nan],
        ("fifo_store_all", 10_000): [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, nan],
        # nothing stored: no fact held (stale rate and provenance undefined)
        ("no_mem", 10_000): [0.0, 0.0, nan, 0.0, 0.0, nan, nan],
    }
    for key, values in expected.items():
        np.testing.assert_allclose(got.loc[key].to_numpy(), values, err_msg=str(key))


def test_fact_labels_win_and_mark_what_should_not_persist():
    # step 0 states a persisting fact; step 1 a fact that should not persist (e.g. WRIT non_memory);
    # step 2 updates the first fact; step 3 carries no fact
    episode = make_episode([{"x": 0}, {"x": 1}, {"x": 2}, {"x": 3}])
    episode["labels"]["facts"] = {
        "0": [["city", "Oslo", True]],
        "1": [["otp", "1234", False]],
        "2": [["city", "Bergen", True], ["job", "chef", True]],
    }
    episode["labels"]["probe_steps"] = [0]
    encoded = encode_episodes([episode])
    assert encoded.arrays.fact_pair.shape == (1, 4, 2)
    assert encoded.arrays.transient[0].tolist() == [False, True, False, False]
    table = run_sweep(encoded, [100, 10_000], policies="fifo_store_all", tracks=("unprivileged",))
    small, large = (table.iloc[i] for i in range(2))
    assert small.bytes_used == encoded.write_cost[0, 0, 0] == 72  # only step 0 fits
    assert (small.update_fidelity, small.history_coverage, small.stale_rate, small.over_retention) == (0, 1 / 3, 1, 0)
    assert (large.update_fidelity, large.history_coverage, large.over_retention, large.detectability) == (1, 1, 1, 1)


@pytest.mark.parametrize(
    "facts, message",
    [
        ([["city", "Oslo"]], "each entry must be"),
        ({"9": []}, "labels.facts"),
    ],
)
def test_malformed_fact_labels_name_the_field(facts, message):
    episode = make_episode([{"x": 0}])
    episode["labels"]["facts"] = {"0": facts} if isinstance(facts, list) else facts
    with pytest.raises(EpisodeFormatError, match=message):
        encode_episodes([episode], source="in.jsonl")


def test_soft_fidelity_and_coverage_for_the_learned_gate():
    from wpbjax.learn.soft_integrity import soft_fidelity_coverage

    batch = encode_episodes([make_episode(HAND)]).host_batch("unprivileged")
    episode = jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf[0]), batch)
    for p, expected in (
        (1.0, (1.0, 1.0)),
        (0.0, (0.0, 0.0)),
        # each pair held with probability 1/2, e0 v2 (two steps) 3/4: coverage 2.75 / 5
        (0.5, (0.5, 0.55)),
    ):
        got = soft_fidelity_coverage(jnp.full(6, p, jnp.float32), episode)
        np.testing.assert_allclose(np.asarray(got), expected, atol=1e-5)


def _plain_fact_tables(fact, version, persist, length, extra):
    """One episode's fact tables in plain Python (the definitions of wpbjax/episodes/facts.py)."""
    n_steps, width = fact.shape
    name = lambda pos, k: k * n_steps + pos  # noqa: E731
    out = {key: [[-1] * width for _ in range(n_steps)] for key in ("fact_pair", "fact_key", "fact_prev")}
    out.update(fact_latest=[[False] * width for _ in range(n_steps)], fact_probes=[[0] * width for _ in range(n_steps)])
    seen = [
        (pos, k, fact[pos, k], version[pos, k])
        for pos in range(length)
        for k in range(width)
        if fact[pos, k] >= 0 and persist[pos, k]
    ]
    first_pair, first_fact, last_pair = {}, {}, {}
    for pos, k, f, v in seen:
        first_pair.setdefault((f, v), name(pos, k))
        first_fact.setdefault(f, name(pos, k))
        if f in last_pair and last_pair[f] != (f, v) and first_pair[(f, v)] == name(pos, k):
            out["fact_prev"][pos][k] = first_pair[last_pair[f]]
        last_pair[f] = (f, v)
        out["fact_pair"][pos][k], out["fact_key"][pos][k] = first_pair[(f, v)], first_fact[f]
    at = lambda slot_name: (slot_name % n_steps, slot_name // n_steps)  # noqa: E731
    for pair in last_pair.values():
        pos, k = at(first_pair[pair])
        out["fact_latest"][pos][k] = True
    probes = [length * i // 8 - 1 for i in range(1, 9)] + [p for p in extra if p >= 0]
    for tau in probes:
        current = {}
        for pos, _kind, f, v in seen:
            if pos <= tau:
                current[f] = (f, v)
        for pair in current.values():
            pos, k = at(first_pair[pair])
            out["fact_probes"][pos][k] += 1
    return out


def test_fact_tables_equal_a_plain_python_model():
    from wpbjax.episodes.facts import fact_tables

    rng = np.random.default_rng(0)
    for _ in range(20):
        n, n_steps, width = rng.integers(1, 5), rng.integers(1, 30), rng.integers(1, 4)
        fact, version = rng.integers(-1, 4, (n, n_steps, width)), rng.integers(0, 4, (n, n_steps, width))
        persist = rng.random((n, n_steps, width)) < 0.8
        length = rng.integers(0, n_steps + 1, n)
        extra = np.where(
            rng.random((n, 2)) < 0.5, rng.integers(0, n_steps, (n, 2)) % np.maximum(length, 1)[:, None], -1
        )
        extra = np.where(length[:, None] > 0, extra, -1)
        valid = np.arange(n_steps)[None, :] < length[:, None]
        got = fact_tables(fact, version, persist, valid, length, extra)
        for e in range(n):
            want = _plain_fact_tables(fact[e], version[e], persist[e], length[e], extra[e])
            for key, table in want.items():
                assert got[key][e].tolist() == table, key
