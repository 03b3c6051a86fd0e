"""The spec's store on the host: ``ByteMemoryStore``, ``Step``, ``MemoryAction`` and ``ByteBudget``.

A Python policy (the spec's ``select(step, store) -> Iterable[MemoryAction]``) runs against this store;
its rules are the engine's (:mod:`wpbjax.state.store`, SEMANTICS §2-3), stated here once more in plain
Python because a host policy reads the store between its own actions:

* WRITE of the incoming step: accepted iff the step holds no item yet and ``used + byte_cost <= limit``.
* EXPIRE(target_t): accepted iff an item keyed ``target_t`` exists and ``target_t < t`` (the current step);
  credits the item's exact cost.
* MERGE(target_t): accepted iff the step holds no item yet, the target is a present *base* item, both
  observations are dicts with equal non-null ``api`` values, the canonical delta (the incoming keys but
  ``api`` whose value differs from the target's under Python equality) is non-empty, and
  ``used + len(json(delta)) + 16 <= limit``. The store prices the delta itself: a policy's ``delta`` is
  not read.
* SKIP: nothing. A rejected action changes nothing; later actions of the step still apply.

Actions are read by attribute (``.action``, ``.step``, ``.target_t``), so the published harness's own
action objects work; ``.action`` may be a string or an enum whose name or value is the kind.
"""

from __future__ import annotations

import dataclasses
import enum
import numbers
from typing import Any

from wpbjax.episodes.encode import INDEX_BYTES, json_len, write_cost

KINDS = ("SKIP", "WRITE", "EXPIRE", "MERGE", "JOURNAL", "DEMOTE")  # the last two: tiered runs only


class ActionType(enum.StrEnum):
    SKIP = "SKIP"
    WRITE = "WRITE"
    EXPIRE = "EXPIRE"
    MERGE = "MERGE"
    JOURNAL = "JOURNAL"  # tiered runs (wpbjax.host.tiers): append the incoming step's record to the journal
    DEMOTE = "DEMOTE"  # tiered runs: move checkpoint item ``target_t`` to the journal


@dataclasses.dataclass(frozen=True)
class Step:
    """One incoming step as a policy on a track sees it (SEMANTICS §2: the track's metadata view)."""

    t: int
    observation: Any
    metadata: dict  # the track's view: ``mode`` (and ``priority`` on the privileged track)
    byte_cost: int  # bytes a WRITE of this step costs on the track


@dataclasses.dataclass(frozen=True)
class MemoryAction:
    """``MemoryAction(ActionType.WRITE, step)``, ``MemoryAction("EXPIRE", target_t=3)``,
    ``MemoryAction("MERGE", step, target_t=3)``; ``delta`` is informational (the store prices its own)."""

    action: ActionType | str
    step: Step | None = None
    target_t: int | None = None
    delta: dict | None = None


@dataclasses.dataclass(frozen=True)
class StoredItem:
    """An item in the store: a base item (a WRITE) or a delta (a MERGE into ``parent_t``)."""

    step: Step
    byte_cost: int
    kind: str  # "base" | "delta"
    parent_t: int | None = None
    delta: dict | None = None

    @property
    def t(self) -> int:
        return self.step.t


class ByteBudget:
    """``limit`` bytes, ``used`` of them; ``remaining() = max(limit - used, 0)``."""

    def __init__(self, limit: int):
        self.limit = int(limit)
        self.used = 0

    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def fits(self, cost: int) -> bool:
        """The budget rule, for every item the store adds."""
        return self.used + cost <= self.limit


_KIND_NAMES = {name: name for name in KINDS} | {name.lower(): name for name in KINDS}


def action_kind(action) -> str | None:
    """The kind of a duck-typed action ("SKIP", "WRITE", "EXPIRE", "MERGE"), or None if it is not one."""
    kind = getattr(action, "action", None)
    try:
        known = _KIND_NAMES.get(kind)  # strings and ActionType (a str) in one lookup
    except TypeError:  # unhashable
        return None
    if known is not None:
        return known
    if isinstance(kind, enum.Enum):
        kind = kind.value if isinstance(kind.value, str) else kind.name
    if not isinstance(kind, str):
        return None
    kind = kind.upper()
    return kind if kind in KINDS else None


def canonical_delta(old: Any, new: Any) -> dict:
    """The keys of ``new`` but ``api`` whose value differs from ``old.get(key)`` (Python equality)."""
    return {key: value for key, value in new.items() if key != "api" and old.get(key) != value}


def merge_cost(delta: dict) -> int:
    return json_len(delta) + INDEX_BYTES


def make_step(step: dict, track: str, byte_cost: int | None = None) -> Step:
    """The :class:`Step` a policy on ``track`` sees of an episode's step dict; ``byte_cost``: its write cost
    on the track when known (the encoded episodes' costs), else computed here."""
    from wpbjax.common.tracks import view_metadata

    metadata = step.get("metadata") or {}
    return Step(
        t=step["t"],
        observation=step["observation"],
        metadata=view_metadata(metadata, track),
        byte_cost=write_cost(step["observation"], metadata, track) if byte_cost is None else byte_cost,
    )


class ByteMemoryStore:
    """Items keyed by the t of the step that made them, in insertion order, under a :class:`ByteBudget`.

    The driver (:func:`wpbjax.host.drive.drive_episode`) calls :meth:`begin` with each incoming step;
    a policy reads ``items()``, ``oldest_item()``, ``remaining()`` / ``budget.remaining()`` and
    ``get(t)``, and the driver applies its actions with :meth:`apply`.
    """

    def __init__(self, budget: int | ByteBudget):
        self.budget = budget if isinstance(budget, ByteBudget) else ByteBudget(budget)
        self._items: dict[int, StoredItem] = {}
        self.now: Step | None = None  # the incoming step

    # --- what a policy reads
    def items(self) -> list[StoredItem]:
        """The present items, oldest first (insertion order)."""
        return list(self._items.values())

    def oldest_item(self) -> StoredItem | None:
        return next(iter(self._items.values()), None)

    def get(self, t: int) -> StoredItem | None:
        return self._items.get(t)

    def __contains__(self, t) -> bool:
        return t in self._items

    def __len__(self) -> int:
        return len(self._items)

    def remaining(self) -> int:
        return self.budget.remaining()

    @property
    def used(self) -> int:
        return self.budget.used

    # --- what the driver does
    def begin(self, step: Step) -> None:
        """``step`` is the incoming step: WRITE and MERGE add it, EXPIRE needs older targets."""
        self.now = step

    def apply(self, action) -> bool:
        """Apply one action at the incoming step under the rules above: True iff accepted."""
        kind = action_kind(action)
        if kind == "WRITE":
            return self._write()
        if kind == "EXPIRE":
            return self._expire(getattr(action, "target_t", None))
        if kind == "MERGE":
            return self._merge(getattr(action, "target_t", None))
        if kind == "SKIP":
            return False
        raise ValueError(f"not a memory action: {action!r}")

    def _write(self) -> bool:
        step = self.now
        if step.t in self._items or not self.budget.fits(step.byte_cost):
            return False
        self._add(StoredItem(step, step.byte_cost, "base"))
        return True

    def _expire(self, target_t) -> bool:
        item = self._items.get(target_t) if _is_key(target_t) else None
        if item is None or not target_t < self.now.t:
            return False
        del self._items[target_t]
        self.budget.used -= item.byte_cost
        return True

    def merge_quote(self, target_t) -> tuple[dict, int] | None:
        """(canonical delta, merge cost) of MERGE(``target_t``) at the incoming step, or None when the
        target or the observations rule it out (the budget not checked)."""
        step = self.now
        target = self._items.get(target_t) if _is_key(target_t) else None
        if target is None or target.kind != "base" or step.t in self._items:
            return None
        old, new = target.step.observation, step.observation
        if not (isinstance(old, dict) and isinstance(new, dict)):
            return None
        if old.get("api") is None or new.get("api") is None or old["api"] != new["api"]:
            return None
        delta = canonical_delta(old, new)
        return (delta, merge_cost(delta)) if delta else None

    def _merge(self, target_t) -> bool:
        quote = self.merge_quote(target_t)
        if quote is None or not self.budget.fits(quote[1]):
            return False
        delta, cost = quote
        self._add(StoredItem(self.now, cost, "delta", parent_t=target_t, delta=delta))
        return True

    def _add(self, item: StoredItem) -> None:
        self._items[item.t] = item
        self.budget.used += item.byte_cost


def _is_key(t) -> bool:
    """A target that can name an item (integers; bools are not targets)."""
    return isinstance(t, numbers.Integral) and not isinstance(t, bool)
