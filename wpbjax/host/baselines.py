"""The published harness's seven baselines (SEMANTICS §5), written as spec-style Python policies:
``select(step, store) -> list of MemoryAction``, reading only the spec's interface (``step.byte_cost``,
``step.metadata``, ``store.budget.remaining()``, ``store.oldest_item()``, ``store.items()``).

They are examples of the interface and the check of the host path: driven on the host and replayed by the
engine they give the rows of the JAX baselines (:mod:`wpbjax.policies.published`), and with the published
oracle the published rows (tests/host/test_host_policies.py). ``wpbjax sweep --policies
py:wpbjax.host.baselines:last_kb`` runs one.
"""

from __future__ import annotations

from wpbjax.host.store import ActionType, MemoryAction, canonical_delta, merge_cost

EVERY_N, PRIORITY_TAU = 10, 0.5
SKIP = [MemoryAction(ActionType.SKIP)]


def _priority(step) -> float:
    value = step.metadata.get("priority")
    return 0.0 if value is None else float(value)


def no_mem(step, store):
    return SKIP


def fifo_store_all(step, store):
    return [MemoryAction(ActionType.WRITE, step)] if step.byte_cost <= store.budget.remaining() else SKIP


def uniform_sample(step, store):
    if step.t % EVERY_N == 0 and step.byte_cost <= store.budget.remaining():
        return [MemoryAction(ActionType.WRITE, step)]
    return SKIP


def priority_threshold(step, store):
    return [MemoryAction(ActionType.WRITE, step)] if _priority(step) > PRIORITY_TAU else SKIP


def priority_greedy(step, store):
    cost, room = step.byte_cost, store.budget.remaining()
    if cost <= room:
        return [MemoryAction(ActionType.WRITE, step)]
    items = store.items()
    if not items:
        return SKIP

    def priority(item) -> float:  # delta items carry no priority
        return _priority(item.step) if item.kind == "base" else 0.0

    if _priority(step) <= min(priority(item) for item in items):
        return SKIP
    actions, freed = [], 0
    for item in sorted(items, key=lambda item: (priority(item), item.t)):
        actions.append(MemoryAction(ActionType.EXPIRE, target_t=item.t))
        freed += item.byte_cost
        if cost <= room + freed:
            return actions + [MemoryAction(ActionType.WRITE, step)]
    return SKIP  # the walk ended without room: only SKIP is emitted


def _evict_oldest_then(need: int, store, final: MemoryAction) -> list:
    """last_kb's loop with its quirk: the oldest item is read once, before any action applies."""
    actions, room, oldest = [], store.budget.remaining(), store.oldest_item()
    while need > room:
        if oldest is None:
            return actions + SKIP
        actions.append(MemoryAction(ActionType.EXPIRE, target_t=oldest.t))
        room += oldest.byte_cost
    return actions + [final]


def last_kb(step, store):
    return _evict_oldest_then(step.byte_cost, store, MemoryAction(ActionType.WRITE, step))


def merge_aggressive(step, store):
    observation = step.observation
    if isinstance(observation, dict) and observation.get("api") is not None:
        target = None
        for item in store.items():  # keeps the most recently inserted match
            old = item.step.observation
            if item.kind == "base" and isinstance(old, dict) and "api" in old and old["api"] == observation["api"]:
                target = item
        if target is not None:
            delta = canonical_delta(target.step.observation, observation)
            merge = MemoryAction(ActionType.MERGE, step, target_t=target.t, delta=delta)
            return _evict_oldest_then(merge_cost(delta), store, merge)
    return last_kb(step, store)


BASELINES = {
    policy.__name__: policy
    for policy in (
        no_mem,
        fifo_store_all,
        uniform_sample,
        priority_threshold,
        priority_greedy,
        last_kb,
        merge_aggressive,
    )
}
