"""The tier policies of docs/tiers.md (:mod:`wpbjax.tiers.policies`) written as spec-style Python policies for
tiered runs (:mod:`wpbjax.host.tiers`): ``select(step, store)`` reading the checkpoint through the spec's
store (``store.get(t)``, ``store.budget``) and emitting WRITE / EXPIRE / JOURNAL / DEMOTE.

They read only what a step shows: its observation (triage: an api whose fields changed; the fact: the api
with its ``v<k>`` segment removed, the engine's api rule for episodes without a ``facts`` label) and its
``byte_cost``. Driven on the host and replayed by the engine, they give the JAX tier policies' rows
(tests/host/test_host_tiers.py). ``wpbjax sweep --journal-budgets ... --policies
py:wpbjax.host.tier_baselines:JournalAndCheckpoint`` runs one.
"""

from __future__ import annotations

from wpbjax.episodes.facts import api_endpoint
from wpbjax.host.store import ActionType, MemoryAction

WINDOW = 20  # the deferred policies' session length (wpbjax.tiers.policies: param ``window``)


def _fields(observation) -> dict:
    return {key: value for key, value in observation.items() if key != "api"}


def _fact(observation):
    api = observation.get("api") if isinstance(observation, dict) else None
    return api_endpoint(api)[0] if isinstance(api, str) else None


class _Tiered:
    """Triage (an api step passes iff its fields differ from the last step seen with its api) and
    distillation (the checkpoint keeps the newest version of each fact) as in wpbjax.tiers.policies."""

    consolidate_every = 0

    def __init__(self):
        self.last_seen: dict = {}  # api -> the fields of the last step seen with it
        self.newest: dict = {}  # fact -> t of the version the policy checkpointed

    def triage(self, step) -> bool:
        observation = step.observation
        api = observation.get("api") if isinstance(observation, dict) else None
        if api is None:
            return True
        fields, previous = _fields(observation), self.last_seen.get(api)
        self.last_seen[api] = fields
        return previous is None or previous != fields

    def supersede(self, step, store, passes: bool) -> tuple:
        """(t of the checkpointed version the step replaces or None, the step replaces it)."""
        fact = _fact(step.observation)
        old = self.newest.get(fact) if fact is not None else None
        held = store.get(old) if old is not None else None
        freed = held.byte_cost if held is not None else 0
        replace = passes and store.budget.used - freed + step.byte_cost <= store.budget.limit
        if replace and fact is not None:
            self.newest[fact] = step.t
        return (old if replace and held is not None else None), replace


class JournalAndCheckpoint(_Tiered):
    consolidate_every = 50

    def select(self, step, store):
        passes = self.triage(step)
        old, replace = self.supersede(step, store, passes)
        actions = [MemoryAction(ActionType.JOURNAL, step)] if passes else []
        if old is not None:
            actions.append(MemoryAction(ActionType.DEMOTE, target_t=old))
        if replace:
            actions.append(MemoryAction(ActionType.WRITE, step))
        return actions


class CheckpointOnly(_Tiered):
    def select(self, step, store):
        passes = self.triage(step)
        old, replace = self.supersede(step, store, passes)
        actions = [MemoryAction(ActionType.EXPIRE, target_t=old)] if old is not None else []
        return actions + ([MemoryAction(ActionType.WRITE, step)] if replace else [])


class JournalOnly(_Tiered):
    def select(self, step, store):
        return [MemoryAction(ActionType.JOURNAL, step)] if self.triage(step) else []


class DeferredCheckpoint(_Tiered):
    """Buffers the steps that pass triage; at each session end (every ``WINDOW`` steps) checkpoints the
    newest buffered step of each fact, superseding the checkpointed version. A crash loses the buffer."""

    journaled = False

    def __init__(self):
        super().__init__()
        self.buffer: dict = {}  # ring slot (t % WINDOW) -> step

    def crash(self) -> None:
        self.buffer.clear()

    def buffered(self) -> list:
        return [step.t for step in self.buffer.values()]

    def select(self, step, store):
        passes = self.triage(step)
        actions = [MemoryAction(ActionType.JOURNAL, step)] if passes and self.journaled else []
        if passes:
            self.buffer[step.t % WINDOW] = step
        if (step.t + 1) % WINDOW == 0:  # a session end (the episodes' lengths are multiples of WINDOW)
            actions += self.flush(store)
        return actions

    def flush(self, store) -> list:
        steps = sorted(self.buffer.values(), key=lambda step: step.t)
        newest_of = {}
        for step in steps:
            fact = _fact(step.observation)
            if fact is not None:
                newest_of[fact] = step.t
        keep = [
            step for step in steps if _fact(step.observation) is None or newest_of[_fact(step.observation)] == step.t
        ]
        superseded = []
        for step in keep:
            fact = _fact(step.observation)
            old = self.newest.get(fact) if fact is not None else None
            if old is not None and store.get(old) is not None:
                superseded.append(old)
            if fact is not None:
                self.newest[fact] = step.t
        kind = ActionType.DEMOTE if self.journaled else ActionType.EXPIRE
        self.buffer.clear()
        return [MemoryAction(kind, target_t=t) for t in superseded] + [
            MemoryAction(ActionType.WRITE, target_t=step.t) for step in keep
        ]


class DeferredJournaled(DeferredCheckpoint):
    journaled = True
    consolidate_every = 20


TIER_BASELINES = {
    "journal_and_checkpoint": JournalAndCheckpoint,
    "checkpoint_only": CheckpointOnly,
    "journal_only": JournalOnly,
    "deferred_checkpoint": DeferredCheckpoint,
    "deferred_journaled": DeferredJournaled,
}
