"""Plain-Python reference of the WritePolicyBench v1.0 harness (test oracle).

Follows /work/shared/reference/SEMANTICS.md sections 2-5 literally, standard
library only (no numpy/jax), so it can serve as an independent oracle for the
JAX engine.  tests/test_pyref.py checks it against results_paper_grid.csv.

Details the spec leaves open, as resolved against the CSV:
- write_actions counts WRITE actions only (merge_aggressive's MERGEs are not counted).
- Greedy oracle: "equals no picked pair" is checked against the pairs picked when
  the replacement pass starts (a pair swapped in during the pass does not block
  later candidates with the same (w, u)).
"""

from __future__ import annotations

import functools
import json

HEADER_BYTES, INDEX_BYTES = 32, 16
TRACK_KEYS = {"unprivileged": ("mode",), "privileged": ("mode", "priority")}
TRACK_POLICIES = {
    "unprivileged": ["no_mem", "fifo_store_all", "uniform_sample", "last_kb", "merge_aggressive"],
    "privileged": [
        "no_mem",
        "fifo_store_all",
        "uniform_sample",
        "priority_threshold",
        "priority_greedy",
        "last_kb",
        "merge_aggressive",
    ],
}
EVERY_N, PRIORITY_TAU = 10, 0.5


def _dumps(x) -> str:
    return json.dumps(x, sort_keys=True)  # default separators, ensure_ascii=True


# ---------------------------------------------------------------- 2. byte model
def view_metadata(metadata: dict, track: str) -> dict:
    return {k: metadata[k] for k in TRACK_KEYS[track] if k in metadata}


def write_cost(step: dict, track: str) -> int:
    if step.get("track") == track and "cost" in step:  # memo left by view_step
        return step["cost"]
    meta = view_metadata(step.get("metadata") or {}, track)
    return len(_dumps(step["observation"])) + len(_dumps(meta)) + HEADER_BYTES + INDEX_BYTES


def view_step(step: dict, track: str) -> dict:
    """What a policy sees: t, observation, track-filtered metadata (+ memoised cost)."""
    return {
        "t": step["t"],
        "observation": step["observation"],
        "metadata": view_metadata(step.get("metadata") or {}, track),
        "track": track,
        "cost": write_cost(step, track),
    }


def canonical_delta(old: dict, new: dict) -> dict:
    """Keys of `new` except api whose value differs from old.get(k) (Python equality)."""
    return {k: v for k, v in new.items() if k != "api" and old.get(k) != v}


def merge_cost(delta: dict) -> int:
    return len(_dumps(delta)) + INDEX_BYTES


# ---------------------------------------------------------------- 3. the store
class Store:
    """Items keyed by t, in insertion (== t) order.

    item = {"t", "kind": "base" | "delta", "parent": parent t or None, "cost", "step"}
    """

    def __init__(self, budget: int):
        self.budget = int(budget)
        self.items: dict[int, dict] = {}
        self.used = 0

    @property
    def remaining(self) -> int:
        return max(self.budget - self.used, 0)

    def oldest(self):
        return next(iter(self.items.values()), None)

    def _add(self, step, kind, parent, cost) -> bool:
        self.items[step["t"]] = {"t": step["t"], "kind": kind, "parent": parent, "cost": cost, "step": step}
        self.used += cost
        return True

    def write(self, step: dict, cost: int) -> bool:
        if step["t"] in self.items or self.used + cost > self.budget:
            return False
        return self._add(step, "base", None, cost)

    def expire(self, target_t: int, now_t: int) -> bool:
        if target_t not in self.items or not target_t < now_t:
            return False
        self.used -= self.items.pop(target_t)["cost"]
        return True

    def merge(self, step: dict, target_t: int) -> bool:
        target = self.items.get(target_t)
        if target is None or target["kind"] != "base" or step["t"] in self.items:
            return False
        old, new = target["step"]["observation"], step["observation"]
        if not (isinstance(old, dict) and isinstance(new, dict)):
            return False
        if "api" not in old or "api" not in new:
            return False
        if old["api"] is None or new["api"] is None or old["api"] != new["api"]:
            return False
        delta = canonical_delta(old, new)
        if not delta:
            return False
        cost = merge_cost(delta)
        if self.used + cost > self.budget:
            return False
        return self._add(step, "delta", target_t, cost)

    def apply(self, step: dict, action: tuple, track: str) -> bool:
        kind = action[0]
        if kind == "SKIP":
            return False
        if kind == "WRITE":
            return self.write(step, write_cost(step, track))
        if kind == "EXPIRE":
            return self.expire(action[1], step["t"])
        if kind == "MERGE":
            return self.merge(step, action[1])
        raise ValueError(f"unknown action {action!r}")


# ---------------------------------------------------------------- 5. baselines
def _priority(step: dict) -> float:
    p = step["metadata"].get("priority")
    return 0.0 if p is None else float(p)


def no_mem(s, store, track):
    return [("SKIP",)]


def fifo_store_all(s, store, track):
    return [("WRITE",)] if write_cost(s, track) <= store.remaining else [("SKIP",)]


def uniform_sample(s, store, track):
    ok = s["t"] % EVERY_N == 0 and write_cost(s, track) <= store.remaining
    return [("WRITE",)] if ok else [("SKIP",)]


def priority_threshold(s, store, track):
    return [("WRITE",)] if _priority(s) > PRIORITY_TAU else [("SKIP",)]


def priority_greedy(s, store, track):
    c = write_cost(s, track)
    if c <= store.remaining:
        return [("WRITE",)]
    if not store.items:
        return [("SKIP",)]

    def prio(item):  # delta items carry no priority -> 0
        return _priority(item["step"]) if item["kind"] == "base" else 0.0

    if _priority(s) <= min(prio(it) for it in store.items.values()):
        return [("SKIP",)]
    actions, freed = [], 0
    for it in sorted(store.items.values(), key=lambda it: (prio(it), it["t"])):
        actions.append(("EXPIRE", it["t"]))
        freed += it["cost"]
        if c <= store.remaining + freed:
            return actions + [("WRITE",)]
    return [("SKIP",)]  # walk ended without room: only SKIP is emitted


def _evict_oldest_then(need: int, store, final: tuple) -> list:
    """last_kb loop, with the quirk: `oldest` is read once, before any action applies."""
    actions, remaining, oldest = [], store.remaining, store.oldest()
    while need > remaining:
        if oldest is None:
            return actions + [("SKIP",)]
        actions.append(("EXPIRE", oldest["t"]))
        remaining += oldest["cost"]
    return actions + [final]


def last_kb(s, store, track):
    return _evict_oldest_then(write_cost(s, track), store, ("WRITE",))


def merge_aggressive(s, store, track):
    obs = s["observation"]
    if isinstance(obs, dict) and obs.get("api") is not None:
        target = None
        for it in store.items.values():  # keeps the most recently inserted match
            o = it["step"]["observation"]
            if it["kind"] == "base" and isinstance(o, dict) and "api" in o and o["api"] == obs["api"]:
                target = it
        if target is not None:
            delta = canonical_delta(target["step"]["observation"], obs)
            return _evict_oldest_then(merge_cost(delta), store, ("MERGE", target["t"]))
    return last_kb(s, store, track)


POLICIES = {
    f.__name__: f
    for f in (no_mem, fifo_store_all, uniform_sample, priority_threshold, priority_greedy, last_kb, merge_aggressive)
}


# ---------------------------------------------------------------- 4. oracles
def exact_oracle(weights, values, budget: int) -> float:
    """True 0/1 knapsack optimum: DP over capacity 0..min(budget, sum of weights)."""
    cap = min(int(budget), sum(weights))
    best = [0.0] * (cap + 1)  # best[c] = max value with total weight <= c
    for w, v in zip(weights, values):
        if w > cap or v <= 0:
            continue
        # 0/1: each new entry is computed from the previous row only
        best[w:] = [a if a >= b + v else b + v for a, b in zip(best[w:], best)]
    return best[cap]


def reference_oracle(weights, values, budget: int) -> float:
    """The published oracle, with its greedy quirk (§4)."""
    weights, values = list(weights), list(values)
    if budget >= sum(weights):
        return float(sum(values))
    if budget <= 2048 and len(weights) * budget <= 25_000_000:
        return exact_oracle(weights, values, budget)
    # Sort by (u/w, w, u) descending; equal keys are equal (w, u) pairs, so ties
    # cannot change the result.
    items = sorted(zip(weights, values), key=lambda wv: (wv[1] / wv[0], wv[0], wv[1]), reverse=True)
    picked, used = [], 0
    for w, v in items:
        if used + w <= budget:
            picked.append((w, v))
            used += w
    start_pairs = set(picked)  # pairs picked when the replacement pass starts
    for w, v in items:
        if (w, v) in start_pairs:
            continue
        for i, (pw, pv) in enumerate(picked):  # first picked item it beats and fits
            if v > pv and used - pw + w <= budget:
                picked[i] = (w, v)
                used += w - pw
                break
    return float(sum(v for _, v in picked))


@functools.lru_cache(maxsize=4096)
def _oracle(kind: str, weights: tuple, values: tuple, budget: int) -> float:
    if kind not in ("reference", "exact"):
        raise ValueError(f"unknown oracle {kind!r}")
    return (reference_oracle if kind == "reference" else exact_oracle)(weights, values, budget)


# ---------------------------------------------------------------- runner + scoring
def _utility(labels: dict, t: int) -> float:
    u = labels.get("utility_by_step", {}).get(str(t))
    return 0.0 if u is None else float(u)


def _api(step: dict):
    obs = step["observation"]
    return obs.get("api") if isinstance(obs, dict) else None


def final_store(steps: list, policy: str, track: str, budget: int, views: list):
    """The store after the last step, and the WRITE / EXPIRE actions emitted (rejected ones too)."""
    fn, store = POLICIES[policy], Store(budget)
    n_write = n_expire = 0
    for s in views:
        for action in fn(s, store, track):  # counted as emitted, rejected ones too
            n_write += action[0] == "WRITE"
            n_expire += action[0] == "EXPIRE"
            store.apply(s, action, track)
    return store, n_write, n_expire


def retained_steps(store: Store, steps: list) -> list:
    """W (§4): base items, plus deltas whose parent is a present base item with an equal string api."""
    api = {st["t"]: _api(st) for st in steps}
    retained = []
    for t, it in store.items.items():
        parent = store.items.get(it["parent"])
        if it["kind"] == "base" or (
            parent is not None and parent["kind"] == "base" and isinstance(api[t], str) and api[t] == api[it["parent"]]
        ):
            retained.append(t)
    return retained


def run_episode(
    episode: dict, policy: str, track: str, budget: int, oracle: str = "reference", views: list | None = None
) -> dict:
    """Run one policy over one episode; return the 21-column result row (§4)."""
    labels, steps = episode["labels"], episode["steps"]
    if views is None:
        views = [view_step(st, track) for st in steps]
    store, n_write, n_expire = final_store(steps, policy, track, budget, views)
    retained = retained_steps(store, steps)
    W, R = set(retained), set(labels.get("critical_steps", []))
    hits = len(W & R)
    recall = hits / len(R) if R else 0.0
    precision = hits / len(W) if W else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    U = sum(_utility(labels, t) for t in retained)
    opt = _oracle(
        oracle, tuple(s["cost"] for s in views), tuple(_utility(labels, st["t"]) for st in steps), int(budget)
    )
    regret = max(0.0, opt - U)
    drift = labels.get("total_drift_events", 0)
    t_last = steps[-1]["t"] if steps else 0
    return {
        "avg_staleness": sum(t_last - t for t in retained) / len(W) if W else 0.0,
        "budget_bytes": budget,
        "bytes_used": store.used,
        "drift_coverage": hits / drift if drift else 0.0,
        "episode_id": labels["episode_id"],
        "expire_actions": n_expire,
        "expire_rate": n_expire / n_write if n_write else 0.0,
        "f1": f1,
        "mode": labels["mode"],
        "oracle_utility": float(opt),
        "policy": policy,
        "policy_utility": U,
        "precision": precision,
        "recall": recall,
        "regret": regret,
        "regret_write_only": regret,
        "track": track,
        "utility_per_kb": U / (store.used / 1024) if store.used else 0.0,
        "utilization": store.used / budget if budget else 0.0,
        "write_actions": n_write,
        "write_density": len(W) / len(steps) if steps else 0.0,
    }


def run_grid(episodes, budgets, tracks=("unprivileged", "privileged"), oracle: str = "reference") -> list[dict]:
    rows = []
    for ep in episodes:
        views = {tr: [view_step(st, tr) for st in ep["steps"]] for tr in tracks}
        for budget in budgets:
            for track in tracks:
                for policy in TRACK_POLICIES[track]:
                    rows.append(run_episode(ep, policy, track, budget, oracle, views[track]))
    return rows
