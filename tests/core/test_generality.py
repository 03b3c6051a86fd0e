"""The engine is general, not fitted to the paper grid: it agrees with an independent plain-Python
reading of SEMANTICS.md (tests/pyref.py, itself checked against all 5,280 published rows) on other
seeds, lengths and budgets, on hand-made heterogeneous episodes, and on random action sequences."""

import json
import random

import numpy as np
import pandas as pd
import pyref
import pytest
from helpers import SCRIPTED, make_episode, run_one, script
from hypothesis import given, settings, strategies as st

from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.state.actions import MERGE, SKIP, WRITE
from wpbjax.sweeps import run_sweep

KEY = ["mode", "budget_bytes", "episode_id", "track", "policy"]


def assert_same_rows(episodes, budgets, oracle):
    episodes = [json.loads(json.dumps(episode)) for episode in episodes]  # as read from a file
    ours = run_sweep(encode_episodes(episodes), budgets=budgets, oracle=oracle)
    theirs = pd.DataFrame(
        pyref.run_grid(episodes, budgets, oracle="reference" if oracle == "published_rule" else oracle)
    )
    merged = theirs.merge(ours, on=KEY, suffixes=("_py", "_jax"), validate="one_to_one")
    assert len(merged) == len(theirs) == len(ours)
    for column in theirs.columns:
        if column in KEY:
            continue
        np.testing.assert_allclose(
            merged[f"{column}_jax"].astype(float),
            merged[f"{column}_py"].astype(float),
            rtol=1e-9,
            atol=1e-9,
            err_msg=column,
        )


@pytest.mark.parametrize("oracle", ["published_rule", "exact"])
def test_other_seeds_lengths_budgets(oracle):
    episodes = []
    for mode, seed, steps in zip(MODES, (11, 5, 99, 2024), (157, 64, 230, 101)):
        config = DriftConfig(mode=mode, seed=seed, steps=steps, api_pool=5, max_params=4)
        episodes += generate_episodes(config, 3)
    # 70000 bytes (every episode fits) with the exact oracle costs the plain-Python knapsack most of this test's
    # time; budgets that hold every item are in tests/scoring/test_oracle.py's brute-force check (up to 9
    # items of at most 40 bytes against budgets up to 200)
    budgets = [300, 1500, 2048, 3333, 5000, 12345] + ([70000] if oracle == "published_rule" else [])
    assert_same_rows(episodes, budgets, oracle)


def heterogeneous_episodes(seed: int, count: int):
    """Episodes no generator makes: mixed observation types, unicode, nested values, missing and
    null keys, numeric apis, mixed metadata, gaps in t, unequal lengths."""
    rng = random.Random(seed)
    apis = ["α.v1", "api.x", "api.y", 3, 3.0, None, "☃"]
    values = [
        1,
        1.0,
        True,
        0,
        False,
        None,
        "é",
        "text",
        [1, 2],
        [True, 2.0],
        {"k": [None]},
        {"k": [None], "j": 1},
        -0.5,
        10**12,
        "longer \u00fcnicode string \u2603",
    ]
    keys = ["a", "b", "c", "déjà"]

    def observation():
        kind = rng.random()
        if kind < 0.7:
            obs = {key: rng.choice(values) for key in rng.sample(keys, rng.randint(0, len(keys)))}
            if rng.random() < 0.9:
                obs["api"] = rng.choice(apis)
            return obs
        return rng.choice(["a plain string", "ünïcode", 42, 2.5, None, [1, {"nested": "list"}], []])

    def metadata():
        md = {}
        if rng.random() < 0.8:
            md["mode"] = rng.choice(["hand", "mixed"])
        if rng.random() < 0.7:
            md["priority"] = rng.choice([0.0, 0.25, 0.5, 0.5000001, 0.75, 1, True, None, 1.0 / 3])
        if rng.random() < 0.3:
            md["source"] = "ignored by every view"
        return md

    episodes = []
    for index in range(count):
        length = rng.randint(1, 30)
        t_values = sorted(rng.sample(range(0, 80), length))
        observations = [observation() for _ in t_values]
        utilities = [rng.choice([0.0, 0.5, 1.0, 2.75, 6.0]) for _ in t_values]
        # Only steps the episode has: labels naming absent steps are refused at load (tests/cli/test_errors.py).
        critical = [t for t in t_values if rng.random() < 0.3]
        episode = make_episode(
            observations,
            metadata=[metadata() for _ in t_values],
            utilities=utilities,
            critical=critical,
            episode_id=index,
            mode=rng.choice(["hand", "mixed"]),
            t_values=t_values,
        )
        if rng.random() < 0.2:
            del episode["labels"]["utility_by_step"][str(t_values[0])]  # missing utility counts 0
        episodes.append(episode)
    return episodes


@pytest.mark.parametrize("oracle", ["published_rule", "exact"])
def test_heterogeneous_hand_made_episodes(oracle):
    assert_same_rows(heterogeneous_episodes(seed=1, count=40), [60, 150, 300, 700, 1500, 2100, 4000, 100000], oracle)


# --- random action sequences against the plain-Python store --------------------------------------------
N_STEPS = 8
POOL = [
    {"api": "a", "x": 1},
    {"api": "a", "x": 2, "y": "é"},
    {"api": "a", "x": 1.0},
    {"api": "b", "y": [1]},
    {"api": "b", "y": [True], "z": None},
    {"api": None, "x": 3},
    "just text",
    {"api": "a"},
    {"x": 1, "y": 2, "z": 3},
]
ANCHOR = make_episode([{"api": "a", "x": 0, "y": 0, "z": 0}] * N_STEPS)  # fixes the field count: one compile


@st.composite
def action_scripts(draw):
    observations = [draw(st.sampled_from(POOL)) for _ in range(N_STEPS)]
    plan = {}
    for pos in range(N_STEPS):
        kind = draw(st.sampled_from([SKIP, WRITE, WRITE, MERGE, MERGE]))
        target = draw(st.integers(0, max(pos - 1, 0))) if kind == MERGE and pos > 0 else -1
        expires = draw(st.lists(st.integers(0, N_STEPS - 1), max_size=3, unique=True))
        plan[pos] = (kind, target, expires)
    return observations, plan, draw(st.integers(50, 400))


@settings(max_examples=150, deadline=None, derandomize=True, database=None)  # repeatable in CI
@given(action_scripts())
def test_random_action_sequences_match_a_plain_python_store(case):
    observations, plan, budget = case
    episode = make_episode(observations)
    _, stores, counts = run_one(SCRIPTED, [episode, ANCHOR], budget, params=script(N_STEPS, plan))

    store = pyref.Store(budget)
    for pos, step in enumerate(episode["steps"]):
        view = pyref.view_step(step, "unprivileged")
        kind, target, expires = plan[pos]
        for slot in expires:
            store.apply(view, ("EXPIRE", slot), "unprivileged")
        store.apply(view, {SKIP: ("SKIP",), WRITE: ("WRITE",), MERGE: ("MERGE", target)}[kind], "unprivileged")

    present = stores.present[0]
    costs = np.where(
        stores.is_delta[0], stores.held[0], encode_episodes([episode, ANCHOR]).track_costs("unprivileged")[0]
    )
    assert [t for t in range(N_STEPS) if present[t]] == list(store.items)
    # the O(1) oldest-first chain visits exactly the present items, in order, both ways
    chain, slot = [], int(stores.oldest[0])
    while slot >= 0:
        chain.append(slot)
        slot = int(stores.newer[0, slot])
    assert chain == list(store.items)
    assert int(stores.newest[0]) == (chain[-1] if chain else -1)
    assert all(int(stores.older[0, b]) == a for a, b in zip(chain, chain[1:]))
    assert int(stores.used[0]) == store.used
    for t, item in store.items.items():
        assert bool(stores.is_delta[0, t]) == (item["kind"] == "delta")
        assert int(costs[t]) == item["cost"]
        if item["kind"] == "delta":
            assert int(stores.parent[0, t]) == item["parent"]
    assert int(counts.expire_actions[0]) == sum(len(e) for _, _, e in plan.values())


def test_sweep_of_several_files_with_different_keys_and_lengths(tmp_path):
    """`--episodes A B`: each file is encoded alone and joined (field slots aligned by key, padded
    to one T); rows still match the plain-Python reading, file by file."""
    from wpbjax.cli import main
    from wpbjax.episodes.jsonl import save_jsonl

    generated = [
        json.loads(json.dumps(e)) for e in generate_episodes(DriftConfig(mode="redundancy", steps=30, seed=2), 3)
    ]
    hand_made = heterogeneous_episodes(seed=7, count=6)
    paths = [tmp_path / "generated.jsonl", tmp_path / "hand.jsonl"]
    for path, episodes in zip(paths, (generated, hand_made)):
        save_jsonl(episodes, path)
    out = tmp_path / "rows.csv"
    budgets = [150, 900, 5000]
    assert (
        main(
            [
                "sweep",
                "--episodes",
                *map(str, paths),
                "--budgets",
                ",".join(map(str, budgets)),
                "--oracle",
                "exact",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    ours = pd.read_csv(out, keep_default_na=False)
    theirs = pd.DataFrame(pyref.run_grid(generated + hand_made, budgets, oracle="exact"))
    ours["episode_id"], theirs["episode_id"] = ours["episode_id"].astype(str), theirs["episode_id"].astype(str)
    merged = theirs.merge(ours, on=KEY, suffixes=("_py", "_jax"), validate="one_to_one")
    assert len(merged) == len(theirs) == len(ours) == 9 * 3 * 12
    for column in ("f1", "bytes_used", "policy_utility", "oracle_utility", "expire_actions", "write_actions"):
        np.testing.assert_allclose(
            merged[f"{column}_jax"].astype(float),
            merged[f"{column}_py"].astype(float),
            rtol=1e-9,
            atol=1e-9,
            err_msg=column,
        )
