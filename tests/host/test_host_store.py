"""The host store (wpbjax.host) applies every store rule as the engine does.

Random action scripts (WRITE, EXPIRE of present, absent and future targets, MERGE into any target, SKIP,
several per step) run on random episodes built to exercise the merge rule (equal apis under Python
equality, 1 / 1.0 / True, null against an absent key, non-dict observations, non-ASCII text) at budgets
from tight to ample; each run's host store is compared with the engine's final store after replaying
the host's log (bytes, items, retained set, emitted-action counts).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.host import ActionType, ByteMemoryStore, MemoryAction, PolicyError, Step
from wpbjax.host.drive import drive_episode
from wpbjax.host.replay import build_log, replay_policy
from wpbjax.host.store import make_step

VALUES = [1, 1.0, True, 0, None, "x", "é", [1], [True], {"z": 1}, "long text " * 3]
APIS = ["a", "a", "b", None, 1, 1.0]


def random_episode(rng: random.Random, n: int, n_steps: int) -> dict:
    steps, utility = [], {}
    for t in range(n_steps):
        if rng.random() < 0.85:
            observation = {f"k{i}": rng.choice(VALUES) for i in range(4) if rng.random() < 0.7}
            if rng.random() < 0.9:
                observation["api"] = rng.choice(APIS)
        else:
            observation = rng.choice(["plain text", ["a", 1], 7, None])
        metadata = {"mode": "random"}
        if rng.random() < 0.8:
            metadata["priority"] = rng.choice([0.1, 0.5, 0.9, 1.0])
        steps.append({"t": t, "observation": observation, "metadata": metadata})
        utility[str(t)] = rng.choice([0.0, 0.5, 1.0, 5.0])
    critical = [t for t in range(n_steps) if rng.random() < 0.2]
    labels = {
        "episode_id": n,
        "mode": "random",
        "critical_steps": critical,
        "total_drift_events": len(critical),
        "utility_by_step": utility,
        "max_utility": sum(utility.values()),
    }
    return {"labels": labels, "steps": steps}


class RandomScript:
    """Several random actions per step, applied as yielded (a generator sees the store change)."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def select(self, step, store):
        rng, merged_into, tried_merge = self.rng, None, False
        for _ in range(rng.choice([0, 1, 1, 2, 3, 5])):
            items = store.items()
            draw = rng.random()
            if draw < 0.3:
                yield MemoryAction(ActionType.WRITE, step)
            elif draw < 0.6:
                # present items, absent ones (already expired), the current and a future step
                choices = [item.t for item in items] + [rng.randrange(0, step.t + 1)]
                target = rng.choice(choices)
                if target != merged_into:  # the engine cannot replay EXPIRE(parent) after MERGE(parent)
                    yield MemoryAction("EXPIRE", target_t=target)
            elif draw < 0.9:
                target = rng.choice([item.t for item in items] or [0])
                if merged_into is not None or tried_merge:  # one MERGE per step: the replay counts one
                    continue
                tried_merge = True
                yield MemoryAction("merge", step, target_t=target)
                if step.t in store:
                    merged_into = target
            else:
                yield MemoryAction(ActionType.SKIP)


def host_runs(episodes, budgets, track, seed):
    return [
        [drive_episode(RandomScript(seed + n), episode, budget, track) for budget in budgets]
        for n, episode in enumerate(episodes)
    ]


def host_final(episode, budget, track, seed):
    """The host store after the script, and its emitted counts."""
    script, store = RandomScript(seed).select, ByteMemoryStore(budget)
    counts = {"WRITE": 0, "EXPIRE": 0, "MERGE": 0}
    for raw in episode["steps"]:
        step = make_step(raw, track)
        store.begin(step)
        for action in script(step, store):
            kind = str(getattr(action.action, "value", action.action)).upper()
            counts[kind] = counts.get(kind, 0) + 1
            store.apply(action)
    return store, counts


def retained(store: ByteMemoryStore, episode: dict) -> set:
    """W (SEMANTICS §4) of a host store."""
    api = {
        s["t"]: s["observation"].get("api") if isinstance(s["observation"], dict) else None for s in episode["steps"]
    }
    kept = set()
    for item in store.items():
        parent = store.get(item.parent_t) if item.kind == "delta" else None
        if item.kind == "base" or (
            parent is not None
            and parent.kind == "base"
            and isinstance(api[item.t], str)
            and api[item.t] == api[item.parent_t]
        ):
            kept.add(item.t)
    return kept


@pytest.mark.parametrize("track", ["unprivileged", "privileged"])
def test_host_store_matches_engine_on_random_scripts(track):
    rng = random.Random(7)
    episodes = [random_episode(rng, n, 40) for n in range(200)]
    budgets = [1, 150, 300, 600, 1200, 100_000]
    encoded = encode_episodes(episodes)
    log = build_log(host_runs(episodes, budgets, track, 100), encoded.n_steps)
    policy = replay_policy("replay_test", ("unprivileged", "privileged"))
    counts = rollout.grid_counts(policy, encoded.batch(track), np.asarray(budgets), run_inputs=log.run_inputs())
    counts = {field: np.asarray(value)[0] for field, value in vars(counts).items() if value is not None}
    n_merges = n_expires = 0
    for n, episode in enumerate(episodes):
        for b, budget in enumerate(budgets):
            store, emitted = host_final(episode, budget, track, 100 + n)
            where = f"episode {n}, budget {budget}"
            assert counts["bytes_used"][n, b] == store.used, where
            assert counts["n_present"][n, b] == len(store), where
            assert counts["write_actions"][n, b] == emitted["WRITE"], where
            assert counts["expire_actions"][n, b] == emitted["EXPIRE"], where
            assert counts["merge_actions"][n, b] == emitted["MERGE"], where
            engine_kept = np.flatnonzero(np.unpackbits(counts["retained"][n, b])[: len(episode["steps"])])
            assert set(engine_kept.tolist()) == retained(store, episode), where
            n_merges += sum(item.kind == "delta" for item in store.items())
            n_expires += emitted["EXPIRE"]
    # the scripts did exercise the rules (6 budgets x 200 episodes = 1,200 runs per track)
    assert n_merges > 200 and n_expires > 3000


def test_host_byte_costs_are_the_encoders():
    rng = random.Random(3)
    episodes = [random_episode(rng, n, 30) for n in range(20)]
    encoded = encode_episodes(episodes)
    for track in ("unprivileged", "privileged"):
        costs = encoded.track_costs(track)
        for n, episode in enumerate(episodes):
            host = [make_step(step, track).byte_cost for step in episode["steps"]]
            assert host == costs[n, : len(host)].tolist()


def test_store_rules_by_hand():
    # write_cost of {"api": "a", "k": 1} with metadata {"mode": "m"}:
    # len('{"api": "a", "k": 1}') = 20, len('{"mode": "m"}') = 13, + 32 + 16 = 81
    def step(t, observation):
        return Step(t, observation, {"mode": "m"}, 81)

    store = ByteMemoryStore(200)
    store.begin(step(0, {"api": "a", "k": 1}))
    assert store.apply(MemoryAction("WRITE")) and store.remaining() == 119
    assert not store.apply(MemoryAction("WRITE"))  # one item per step
    store.begin(step(1, {"api": "a", "k": 1.0}))
    assert not store.apply(MemoryAction("MERGE", target_t=0))  # 1 == 1.0: empty delta
    store.begin(step(2, {"api": "a", "k": 2}))
    # delta {"k": 2}: len('{"k": 2}') = 8, + 16 = 24 bytes
    assert store.apply(MemoryAction("MERGE", target_t=0)) and store.used == 81 + 24
    store.begin(step(3, {"api": "a", "k": 3}))
    assert not store.apply(MemoryAction("MERGE", target_t=2))  # a delta is no merge target
    assert not store.apply(MemoryAction("EXPIRE", target_t=3))  # not older than the current step
    assert store.apply(MemoryAction("EXPIRE", target_t=0)) and store.used == 24
    assert not store.apply(MemoryAction("EXPIRE", target_t=0))  # absent now
    assert store.oldest_item().t == 2 and store.budget.remaining() == 176
    with pytest.raises(ValueError, match="not a memory action"):
        store.apply(object())


def test_policy_errors_name_episode_t_and_action():
    episode = random_episode(random.Random(1), "e1", 5)

    def bad_target(step, store):
        return [MemoryAction("EXPIRE", target_t=99)] if step.t == 3 else []

    def raises(step, store):
        if step.t == 2:
            raise KeyError("oops")
        return []

    def not_an_action(step, store):
        return ["WRITE"]

    with pytest.raises(PolicyError, match=r"^episode e1, t=3: EXPIRE target_t=99 is no step"):
        drive_episode(bad_target, episode, 1000, "unprivileged")
    with pytest.raises(PolicyError, match=r"^episode e1, t=2: the policy raised KeyError"):
        drive_episode(raises, episode, 1000, "unprivileged")
    with pytest.raises(PolicyError, match=r"^episode e1, t=0: not a memory action: 'WRITE'"):
        drive_episode(not_an_action, episode, 1000, "unprivileged")
