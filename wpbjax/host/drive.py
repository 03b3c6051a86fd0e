"""Drive a Python policy over one episode on the host store, and compile what it did into replay calls.

The engine applies, per call of a policy, a few EXPIREs and then one main action (WRITE, MERGE, SKIP,
or one that acts again: CONTINUE, WRITE_PAST; :mod:`wpbjax.state.actions`). A spec-style policy emits
any sequence. Each step's sequence becomes engine calls that leave the same store and the same counts:

* its *accepted* EXPIREs (in order), then its accepted WRITE or MERGE (a step adds at most one item) as
  the main action. An EXPIRE accepted after the add moves before it: the add still fits (fewer bytes in
  use) and the EXPIRE still finds its (older) item -- unless it removed the MERGE's own parent, which no
  order of engine calls can replay (:class:`PolicyError`);
* its rejected actions only count (``write_actions`` / ``expire_actions`` / ``merge_actions`` count what
  a policy *emitted*): rejected EXPIREs on the first call's ``n_expire``; each rejected WRITE a
  ``WRITE_PAST`` of no step (rejected by the engine, counted, acts again); a rejected MERGE a MERGE of no
  target as the last call (one per step at most; more is a :class:`PolicyError`).

So the engine never has to reproduce a rejection: every replayed action is one the host accepted, or one
the engine rejects by construction. That the engine accepts every replayed action is checked by the
tests (host store == engine on random scripts; replayed rows == the JAX baselines' rows).
"""

from __future__ import annotations

import copy
import dataclasses

from wpbjax.common.constants import NONE
from wpbjax.host.store import ByteMemoryStore, action_kind, make_step
from wpbjax.state.actions import MERGE, SKIP, WRITE, WRITE_PAST

MAX_ACTIONS_PER_STEP = 100_000  # emitted actions one call of a policy may yield (a runaway generator stops here)


class PolicyError(ValueError):
    """A Python policy did something the run cannot use; the message is one line naming the episode,
    the step's t and the action."""


@dataclasses.dataclass(frozen=True)
class Call:
    """One engine call at a step (see the module note)."""

    kind: int  # SKIP, WRITE, MERGE or WRITE_PAST (wpbjax.state.actions)
    target: int = NONE  # MERGE's parent position (NONE: a count-only MERGE)
    expire: tuple = ()  # positions to EXPIRE first, in order
    n_expire: int = 0  # EXPIREs counted as emitted by this call


def as_select(policy):
    """A fresh ``select(step, store)`` for one run: a class is instantiated, an object with ``select``
    copied, a plain function used as it is."""
    if isinstance(policy, type):
        return policy().select
    if hasattr(policy, "select"):
        return copy.deepcopy(policy).select
    if callable(policy):
        return policy
    raise PolicyError(f"policy: expected a class or object with select(step, store), or a function; got {policy!r}")


def drive_episode(policy, episode: dict, budget: int, track: str, episode_id=None, views=None) -> list[list[Call]]:
    """Run ``policy`` over ``episode`` (a dict episode) at ``budget`` on ``track``: per step, its engine calls.
    ``views``: the episode's steps as :class:`Step` s on ``track`` (made here when None; shared by budgets)."""
    select = as_select(policy)
    store = ByteMemoryStore(budget)
    steps = episode["steps"]
    views = [make_step(raw, track) for raw in steps] if views is None else views
    position = {step["t"]: pos for pos, step in enumerate(steps)}
    name = episode.get("labels", {}).get("episode_id", episode_id) if episode_id is None else episode_id
    program = []
    for pos, step in enumerate(views):
        store.begin(step)
        where = f"episode {name}, t={step.t}"
        try:
            emitted = select(step, store)
            if emitted is None or not _iterable(emitted):
                raise PolicyError(f"{where}: select returned {emitted!r}, not an iterable of actions")
            log = []
            for action in emitted:
                log.append(_applied(store, action, position, step.t, where))
                if len(log) > MAX_ACTIONS_PER_STEP:
                    raise PolicyError(f"{where}: more than {MAX_ACTIONS_PER_STEP:,} actions in one step")
        except PolicyError:
            raise
        except Exception as err:  # the policy's own failure, named where it happened
            raise PolicyError(f"{where}: the policy raised {type(err).__name__}: {err}") from err
        program.append(step_calls(log, pos, where))
    return program


def _iterable(value) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return not isinstance(value, (str, bytes, dict))


def _applied(store: ByteMemoryStore, action, position: dict, t, where: str) -> tuple:
    """Apply one emitted action: (kind, target position or NONE, accepted)."""
    kind = action_kind(action)
    if kind is None:
        raise PolicyError(
            f"{where}: not a memory action: {action!r} (expected .action SKIP, WRITE, EXPIRE, MERGE, JOURNAL or DEMOTE)"
        )
    if kind in ("JOURNAL", "DEMOTE"):
        raise PolicyError(f"{where}: {kind} is a tiered run's action (give journal budgets); this run has one tier")
    target = NONE
    if kind in ("WRITE", "MERGE"):
        acted_on = getattr(action, "step", None)
        acted_t = getattr(acted_on, "t", t) if acted_on is not None else t
        if acted_t != t:
            raise PolicyError(f"{where}: {kind} of step t={acted_t}: a policy adds only the incoming step")
    if kind in ("EXPIRE", "MERGE"):
        target_t = getattr(action, "target_t", None)
        if target_t not in position or isinstance(target_t, bool):
            raise PolicyError(f"{where}: {kind} target_t={target_t!r} is no step of the episode")
        target = position[target_t]
    return kind, target, store.apply(action)


_SINGLE = {  # one emitted action: its calls, computed once (most steps of most policies)
    ("SKIP", False): [Call(SKIP)],
    ("WRITE", True): [Call(WRITE)],
    ("WRITE", False): [Call(WRITE_PAST), Call(SKIP)],
    ("EXPIRE", False): [Call(SKIP, n_expire=1)],
}


def step_calls(log: list[tuple], pos: int, where: str) -> list[Call]:
    """The engine calls that replay one step's emitted ``(kind, target, accepted)`` actions (module note)."""
    if not log:
        return _SINGLE["SKIP", False]
    if len(log) == 1 and (log[0][0], log[0][2]) in _SINGLE:
        return _SINGLE[log[0][0], log[0][2]]
    counts = {kind: sum(entry[0] == kind for entry in log) for kind in ("WRITE", "EXPIRE", "MERGE")}
    expires = [target for kind, target, accepted in log if kind == "EXPIRE" and accepted]
    added = [
        (number, kind, target) for number, (kind, target, accepted) in enumerate(log) if accepted and kind != "EXPIRE"
    ]
    main, parent = SKIP, NONE
    if added:
        number, kind, parent = added[0]
        main = WRITE if kind == "WRITE" else MERGE
        later = [target for kind, target, accepted in log[number + 1 :] if kind == "EXPIRE" and accepted]
        if main == MERGE and parent in later:
            raise PolicyError(
                f"{where}: EXPIRE of the MERGE's own parent after the MERGE in one step (the engine applies "
                f"a step's EXPIREs before its MERGE, so it cannot replay this order)"
            )
    extra_writes = counts["WRITE"] - (main == WRITE)
    extra_merges = counts["MERGE"] - (main == MERGE)
    if extra_merges > 1 or (extra_merges and main == MERGE):
        raise PolicyError(
            f"{where}: {counts['MERGE']} MERGE actions in one step; the replay counts one rejected MERGE per step"
        )
    calls = [Call(WRITE_PAST) for _ in range(extra_writes)]
    if extra_merges and main == WRITE:  # the WRITE acts again (as a WRITE_PAST of this step), then the MERGE counts
        calls += [Call(WRITE_PAST, pos, tuple(expires)), Call(MERGE)]
    elif extra_merges:
        calls.append(Call(MERGE, NONE, tuple(expires)))
    else:
        calls.append(Call(main, parent if main == MERGE else NONE, tuple(expires)))
    calls[0] = dataclasses.replace(calls[0], n_expire=counts["EXPIRE"])
    return calls
