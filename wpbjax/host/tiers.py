"""Python policies in tiered runs (docs/tiers.md; docs/policies.md, "Python policies in tiered runs").

A tiered run keeps a journal beside the checkpoint, and a tier policy emits a
:class:`wpbjax.tiers.actions.TierAction` per step. A spec-style policy does the same in the spec's terms:

* its ``store`` is a :class:`TierMemoryStore`: the spec's reads (``items()``, ``oldest_item()``, ``get(t)``,
  ``remaining()``, ``budget``) see the **checkpoint**; ``store.journal`` sees the journal (its records, at
  ``byte_cost`` = the step's cost less the 16 index bytes);
* ``WRITE`` adds a step to the checkpoint: the incoming step, or an earlier one (``.step`` or ``target_t``;
  a promote when the journal holds it); ``EXPIRE(target_t)`` deletes a checkpoint item; ``JOURNAL`` appends
  the incoming step's record; ``DEMOTE(target_t)`` moves a checkpoint item to the journal; ``SKIP``
  nothing. ``MERGE`` is refused (the tier store keeps no deltas). A one-tier policy (WRITE / EXPIRE / SKIP)
  therefore drives the checkpoint as it drives the one-tier store, and never journals;
* a step's actions apply when ``select`` returns, as the engine applies a TierAction: the journal append,
  the deletes, the demotes, then the adds (each kind in the order emitted), under
  :mod:`wpbjax.tiers.store`'s rules -- the host store below states them once more, so that the policy reads
  at the next step what the engine's store holds; the compute budget drops the adds it cannot afford first;
* consolidation runs every ``consolidate_every`` steps (the policy's attribute of that name; default 0,
  never), as for the JAX tier policies (a sweep's ``--param`` does not reach it: it is fixed when the
  policy is driven);
* a crash (the engine's draws and labels, :func:`crash_mask`) calls the policy's ``crash()`` before its step
  if it has one (a policy with a buffer drops it there), and a policy's ``buffered()`` (the t of each step
  it holds for a later write) is logged, so the engine counts ``lost_at_crash`` from it as it does for the
  JAX deferred policies.

Every emitted action is logged (``[N, R, T, ...]``: journal flag, deletes, demotes, adds, buffer) and the
engine's tier run replays the log (:func:`replay_tier_policy`), so every tier column -- rejections,
promotes, history coverage, reads, costs -- is computed by the engine's code.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.constants import NONE
from wpbjax.episodes.encode import INDEX_BYTES
from wpbjax.host.drive import MAX_ACTIONS_PER_STEP, PolicyError, _iterable, as_select
from wpbjax.host.store import ByteBudget, StoredItem, action_kind, make_step

CALLS_PER_ADD = 3  # wpbjax.tiers.engine.CALLS_PER_ADD (a test checks they agree)
MAX_BUFFER = 32  # wpbjax.tiers.policies.MAX_BUFFER: the engine's buffer a crash empties
TIER_LOG_FIELDS = ("log_journal", "log_delete", "log_demote", "log_add", "log_buffer", "consolidate_every")


def journal_cost(byte_cost: int) -> int:
    """Bytes of a journal record (wpbjax.tiers.store.journal_cost: no index entry)."""
    return max(byte_cost - INDEX_BYTES, 1)


@dataclasses.dataclass(frozen=True)
class TierRules:
    """One tiered run's settings, as the engine's: the budget pair, the consolidation period and the
    compute budget (calls per step, bucket size; inf: none)."""

    checkpoint_budget: int
    journal_budget: int
    consolidate_every: int = 0
    calls_per_step: float = float("inf")
    call_burst: float = float("inf")


class JournalView:
    """What a policy reads of the journal: its records (oldest first), ``t in journal``, ``remaining()``."""

    def __init__(self, store: TierMemoryStore):
        self._store = store
        self.budget = store.journal_budget

    def items(self) -> list[StoredItem]:
        views = self._store.views
        return [StoredItem(views[pos], journal_cost(views[pos].byte_cost), "base") for pos in self._store.journal]

    def __contains__(self, t) -> bool:
        return self._store.position.get(t) in self._store.journal

    def __len__(self) -> int:
        return len(self._store.journal)

    def remaining(self) -> int:
        return self.budget.remaining()


class TierMemoryStore:
    """The host mirror of :class:`wpbjax.tiers.store.TierStore` over one episode's steps (``views``, one
    :class:`wpbjax.host.store.Step` per position; ``fact``: [T] the engine's fact of each position, -1 none).
    The spec's reads see the checkpoint; ``journal`` the journal (module note)."""

    def __init__(self, views: list, fact, rules: TierRules):
        self.views, self.rules = views, rules
        self.fact = [int(value) for value in fact[: len(views)]]
        self.position = {step.t: pos for pos, step in enumerate(views)}
        self.budget = ByteBudget(rules.checkpoint_budget)
        self.journal_budget = ByteBudget(rules.journal_budget)
        self.checkpoint: dict[int, None] = {}  # positions held, in the order they came
        self.journal: dict[int, None] = {}
        self.journal_view = JournalView(self)
        self.tokens = np.float32(rules.call_burst)
        self.now = None

    # --- what a policy reads (the checkpoint, as the spec's store)
    def items(self) -> list[StoredItem]:
        return [self._item(pos) for pos in self.checkpoint]

    def oldest_item(self) -> StoredItem | None:
        return self._item(next(iter(self.checkpoint))) if self.checkpoint else None

    def get(self, t) -> StoredItem | None:
        pos = self.position.get(t)
        return self._item(pos) if pos in self.checkpoint else None

    def __contains__(self, t) -> bool:
        return self.position.get(t) in self.checkpoint

    def __len__(self) -> int:
        return len(self.checkpoint)

    def remaining(self) -> int:
        return self.budget.remaining()

    @property
    def used(self) -> int:
        return self.budget.used

    def _item(self, pos: int) -> StoredItem:
        return StoredItem(self.views[pos], self.views[pos].byte_cost, "base")

    # --- what the driver does (wpbjax.tiers.store.tier_apply's order and rules)
    def begin(self, step) -> None:
        self.now = step

    def apply_step(self, pos: int, journal: bool, delete: list, demote: list, add: list) -> None:
        """One step's actions (positions), in the engine's order, then its compute budget and consolidation."""
        if journal:
            self._journal(pos)
        for slot in delete:
            if slot in self.checkpoint:
                self._leave(slot)
        for slot in demote:
            if slot in self.checkpoint and (slot in self.journal or self._journal(slot)):
                self._leave(slot)
        rules = self.rules
        self.tokens = np.minimum(np.float32(rules.call_burst), self.tokens + np.float32(rules.calls_per_step))
        affordable = [slot for number, slot in enumerate(add, 1) if number * CALLS_PER_ADD <= self.tokens]
        self.tokens = np.float32(self.tokens - np.float32(CALLS_PER_ADD * len(affordable)))
        for slot in affordable:
            cost = self.views[slot].byte_cost
            if slot <= pos and slot not in self.checkpoint and self.budget.fits(cost):
                self.checkpoint[slot] = None
                self.budget.used += cost
        every = rules.consolidate_every
        if every > 0 and (pos + 1) % every == 0:
            self._consolidate(pos)

    def _journal(self, slot: int) -> bool:
        cost = journal_cost(self.views[slot].byte_cost)
        if slot in self.journal or not self.journal_budget.fits(cost):
            return False
        self.journal[slot] = None
        self.journal_budget.used += cost
        return True

    def _leave(self, slot: int) -> None:
        del self.checkpoint[slot]
        self.budget.used -= self.views[slot].byte_cost

    def _consolidate(self, pos: int) -> None:
        """wpbjax.tiers.store.consolidate: demote superseded checkpoint items, promote distilled facts."""
        newest: dict[int, int] = {}
        for slot in range(pos + 1):
            if (slot in self.checkpoint or slot in self.journal) and self.fact[slot] >= 0:
                newest[self.fact[slot]] = slot
        distilled = set(newest.values())
        superseded = [slot for slot in sorted(self.checkpoint) if self.fact[slot] >= 0 and slot not in distilled]
        needs_bytes = [slot for slot in superseded if slot not in self.journal]
        journaled = _newest_first(needs_bytes, lambda slot: journal_cost(self.views[slot].byte_cost),
                                  self.journal_budget)  # fmt: skip
        demoted = [slot for slot in superseded if slot in self.journal or slot in journaled]
        for slot in journaled:
            self.journal[slot] = None
            self.journal_budget.used += journal_cost(self.views[slot].byte_cost)
        missing = [slot for slot in sorted(distilled) if slot in self.journal and slot not in journaled
                   and not (slot in self.checkpoint and slot not in demoted)]  # fmt: skip
        for slot in demoted:
            self._leave(slot)
        for slot in sorted(_newest_first(missing, lambda slot: self.views[slot].byte_cost, self.budget)):
            self.checkpoint[slot] = None
            self.budget.used += self.views[slot].byte_cost


def _newest_first(candidates: list, cost, budget: ByteBudget) -> set:
    """The candidates accepted newest first while each fits after every newer one (a prefix)."""
    accepted, running = set(), 0
    for slot in sorted(candidates, reverse=True):
        running += cost(slot)
        if not budget.fits(running):
            break
        accepted.add(slot)
    return accepted


def crash_mask(n_steps: int, crash_rate: float, seed: int, episode_index, valid, labelled) -> np.ndarray:
    """[N, T] bool: a crash just before the step, as :func:`wpbjax.tiers.engine.run` draws them
    (``labelled``: [N, T] bool, wpbjax.tiers.engine.labelled_crashes)."""
    index = jnp.asarray(np.asarray(episode_index).astype(np.uint32))
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(seed), index)
    draw = lambda key, pos: jax.random.uniform(jax.random.fold_in(key, pos))  # noqa: E731
    pos = jnp.arange(n_steps, dtype=jnp.int32)
    drawn = np.asarray(
        jax.vmap(jax.vmap(draw, in_axes=(None, 0)), in_axes=(0, None))(keys, pos) < jnp.float32(crash_rate)
    )
    # numpy throughout: the forked drivers must not touch a JAX array (a forked JAX runtime deadlocks)
    return (np.arange(n_steps)[None, :] > 0) & np.asarray(valid) & (drawn | np.asarray(labelled))


@dataclasses.dataclass(frozen=True)
class TierStep:
    """One step's logged actions (positions): the engine's TierAction, and the policy's buffer after it."""

    journal: bool
    delete: tuple
    demote: tuple
    add: tuple
    buffer: tuple


def drive_tier_episode(policy, episode: dict, rules: TierRules, track: str, fact, crashes, episode_id) -> list:
    """Run ``policy`` over ``episode`` in a tiered run (module note): per step, a :class:`TierStep`.
    ``fact``: [T] the engine's fact of each position; ``crashes``: [T] bool a crash just before the step."""
    select = as_select(policy)
    owner = getattr(select, "__self__", None)
    steps = episode["steps"]
    views = [make_step(raw, track) for raw in steps]
    store = TierMemoryStore(views, fact, rules)
    log = []
    for pos, step in enumerate(views):
        where = f"episode {episode_id}, t={step.t}"
        try:
            if crashes[pos] and hasattr(owner, "crash"):
                owner.crash()
            store.begin(step)
            emitted = select(step, store)
            if emitted is None or not _iterable(emitted):
                raise PolicyError(f"{where}: select returned {emitted!r}, not an iterable of actions")
            journal, kinds = False, {"EXPIRE": [], "DEMOTE": [], "WRITE": []}
            for number, action in enumerate(emitted):
                if number >= MAX_ACTIONS_PER_STEP:
                    raise PolicyError(f"{where}: more than {MAX_ACTIONS_PER_STEP:,} actions in one step")
                kind, slot = _tier_action(action, store, pos, where)
                if kind == "JOURNAL":
                    journal = True
                elif kind != "SKIP":
                    kinds[kind].append(slot)
            buffer = _buffer(owner, store, where)
        except PolicyError:
            raise
        except Exception as err:  # the policy's own failure, named where it happened
            raise PolicyError(f"{where}: the policy raised {type(err).__name__}: {err}") from err
        entry = TierStep(journal, tuple(kinds["EXPIRE"]), tuple(kinds["DEMOTE"]), tuple(kinds["WRITE"]), buffer)
        store.apply_step(pos, entry.journal, list(entry.delete), list(entry.demote), list(entry.add))
        log.append(entry)
    return log


def _tier_action(action, store: TierMemoryStore, pos: int, where: str) -> tuple[str, int]:
    """(kind, position it acts on) of one emitted action, checked."""
    kind = action_kind(action)
    if kind is None:
        raise PolicyError(
            f"{where}: not a memory action: {action!r} (expected .action SKIP, WRITE, EXPIRE, JOURNAL or DEMOTE)"
        )
    if kind == "MERGE":
        raise PolicyError(f"{where}: MERGE in a tiered run: the tier store keeps no deltas (WRITE the step instead)")
    if kind in ("SKIP", "JOURNAL"):
        acted_on = getattr(action, "step", None) if kind == "JOURNAL" else None
        if acted_on is not None and getattr(acted_on, "t", store.now.t) != store.now.t:
            raise PolicyError(f"{where}: JOURNAL of step t={acted_on.t}: the journal appends the incoming step only")
        return kind, pos
    if kind == "WRITE":
        acted_on = getattr(action, "step", None)
        target_t = getattr(action, "target_t", None)
        t = target_t if target_t is not None else (store.now.t if acted_on is None else getattr(acted_on, "t", None))
    else:
        t = getattr(action, "target_t", None)
    if isinstance(t, bool) or t not in store.position:
        raise PolicyError(f"{where}: {kind} target_t={t!r} is no step of the episode")
    slot = store.position[t]
    if kind == "WRITE" and slot > pos:
        raise PolicyError(f"{where}: WRITE of step t={t}, which has not arrived yet")
    return kind, slot


def _buffer(owner, store: TierMemoryStore, where: str) -> tuple:
    """Positions of the steps the policy's ``buffered()`` names (none without one)."""
    if not hasattr(owner, "buffered"):
        return ()
    held = []
    for t in owner.buffered():
        if isinstance(t, bool) or t not in store.position:
            raise PolicyError(f"{where}: buffered() named t={t!r}, no step of the episode")
        held.append(store.position[t])
    if len(held) > MAX_BUFFER:
        raise PolicyError(f"{where}: buffered() holds {len(held)} steps; a tiered run tracks at most {MAX_BUFFER}")
    return tuple(held)


def _padded(size: int) -> int:
    return max(2, 1 << (max(size, 1) - 1).bit_length())


def build_tier_log(runs: list, n_steps: int, consolidate_every: int, width: int | None = None) -> dict:
    """``runs[n][r]``: one run's :class:`TierStep` list -> name -> [N, R, T, ...] (TIER_LOG_FIELDS); ``width``:
    the action slots per kind (default the most any step emitted, rounded up to a power of two)."""
    flat = [entry for row in runs for run in row for entry in run]
    most = max([max(len(e.delete), len(e.demote), len(e.add)) for e in flat] + [1])
    width = _padded(most) if width is None else width
    n, r = len(runs), len(runs[0]) if runs else 0
    out = {
        "log_journal": np.zeros((n, r, n_steps), bool),
        "log_delete": np.full((n, r, n_steps, width), NONE, np.int32),
        "log_demote": np.full((n, r, n_steps, width), NONE, np.int32),
        "log_add": np.full((n, r, n_steps, width), NONE, np.int32),
        "log_buffer": np.full((n, r, n_steps, MAX_BUFFER), NONE, np.int32),
        "consolidate_every": np.full((n, r), consolidate_every, np.int32),
    }
    for i, row in enumerate(runs):
        for j, run in enumerate(row):
            for pos, entry in enumerate(run):
                out["log_journal"][i, j, pos] = entry.journal
                for name, slots in (("log_delete", entry.delete), ("log_demote", entry.demote), ("log_add", entry.add)):
                    out[name][i, j, pos, : len(slots)] = slots
                out["log_buffer"][i, j, pos, : len(entry.buffer)] = entry.buffer
    return out


def tier_log_width(runs: list) -> int:
    """The action slots per kind a log of ``runs`` needs (a power of two)."""
    flat = [entry for row in runs for run in row for entry in run]
    return _padded(max([max(len(e.delete), len(e.demote), len(e.add)) for e in flat] + [1]))


def replay_tier_act(params, state, store, episode, pos, budget):
    """Emit step ``pos``'s logged TierAction, and the policy's logged buffer (what a crash loses)."""
    from wpbjax.tiers.actions import TierAction

    action = TierAction(
        journal=params["log_journal"][pos],
        delete=params["log_delete"][pos],
        demote=params["log_demote"][pos],
        add=params["log_add"][pos],
    )
    return action, dataclasses.replace(state, buffer=params["log_buffer"][pos])


def replay_tier_policy(name: str, plan):
    """The TierPolicy that replays a Python policy's tier log; ``plan``: :class:`TierLogTable`."""
    from wpbjax.tiers.policies import TierPolicy

    return TierPolicy(name, replay_tier_act, {}, doc="replays a Python policy's tier actions (wpbjax.host.tiers)",
                      plan=plan)  # fmt: skip


class TierLogTable:
    """Per-run inputs by episode content and (checkpoint, journal) budget pair: a replay's ``plan``."""

    def __init__(self, pairs: list[tuple[int, int]], key_of):
        self.pairs, self.key_of = pairs, key_of  # key_of(write_cost, utility, length): wpbjax.host.run.episode_key
        self.runs: dict[bytes, dict] = {}  # episode key -> name -> [R, ...]

    def add(self, key: bytes, inputs: dict, episode_id) -> None:
        known = self.runs.get(key)
        if known is not None and not all(np.array_equal(known[name], inputs[name]) for name in TIER_LOG_FIELDS):
            raise PolicyError(
                f"episode {episode_id}: another episode has the same write costs and utilities but the policy "
                f"acted differently on it; the replay cannot tell them apart"
            )
        self.runs[key] = inputs

    def __call__(self, write_cost, utility, length, pairs) -> dict:
        columns = []
        for pair in zip(np.asarray(pairs[0]).tolist(), np.asarray(pairs[1]).tolist()):
            if tuple(pair) not in self.pairs:
                raise PolicyError(f"budget pair {pair}: the Python policy was run at {self.pairs} only")
            columns.append(self.pairs.index(tuple(pair)))
        out = {name: [] for name in TIER_LOG_FIELDS}
        for n in range(len(length)):
            runs = self.runs.get(self.key_of(write_cost[n], utility[n], int(length[n])))
            if runs is None:
                raise PolicyError(f"episode {n} of the sweep: the Python policy was not run on it")
            for name in TIER_LOG_FIELDS:
                out[name].append(runs[name][columns])
        return {name: np.stack(value) for name, value in out.items()}


def drive_tiered(task) -> list:
    """One episode's tiered runs: ``task`` = (policy, episode, [R] TierRules, track, fact, crashes, episode id)."""
    policy, episode, rules, track, fact, crashes, episode_id = task
    return [drive_tier_episode(policy, episode, rule, track, fact, crashes, episode_id) for rule in rules]


def consolidation_period(policy, label: str) -> int:
    """The policy's ``consolidate_every`` (default 0: never), checked."""
    every = getattr(policy, "consolidate_every", 0)
    if isinstance(every, bool) or not isinstance(every, int) or every < 0:
        raise PolicyError(f"policy py:{label}: consolidate_every must be a whole number of steps >= 0; got {every!r}")
    return every
