"""The action log of a host policy's runs and the JAX policy that replays it.

``ActionLog`` holds, for every (episode, budget) run, each step's engine calls (:class:`wpbjax.host.drive.Call`)
as fixed-shape arrays ``[N, B, T, C]`` (C: the most calls any step needed) and ``[N, B, T, C, K]`` (K: the
most EXPIREs one call applies). :func:`replay_policy` emits them back, one call per ``act``, so the engine's
own store applies them and every column is scored by the code that scores JAX policies.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.state import actions, store as store_lib
from wpbjax.state.actions import ALL_EMITS, EMIT_WRITE_PAST, MERGE, SKIP

LOG_FIELDS = ("log_kind", "log_target", "log_n_expire", "log_expire")


@dataclasses.dataclass(frozen=True)
class ActionLog:
    """Every run's replay calls; leaves lead with [N, B, T]."""

    kind: np.ndarray  # [N, B, T, C] int32 SKIP, WRITE, MERGE, WRITE_PAST (wpbjax.state.actions); SKIP padding
    target: np.ndarray  # [N, B, T, C] int32 MERGE parent / WRITE_PAST source position (NONE: none)
    n_expire: np.ndarray  # [N, B, T, C] int32 EXPIREs counted as emitted
    expire: np.ndarray  # [N, B, T, C, K] int32 positions to EXPIRE first (NONE padding)

    def run_inputs(self) -> dict:
        """The per-run inputs of :func:`replay_policy` (name -> [N, B, ...])."""
        return dict(zip(LOG_FIELDS, (self.kind, self.target, self.n_expire, self.expire)))


def padded(size: int) -> int:
    """A log axis of ``size`` entries rounded up to a power of two (at least 2), so that logs of different
    policies and calls mostly share a shape, hence one compiled replay program."""
    return max(2, 1 << (max(size, 1) - 1).bit_length())


def log_shape(programs) -> tuple[int, int]:
    """(C, K) a log of ``programs`` needs: the most calls one step made, the most EXPIREs one call applied."""
    runs = [run for row in programs for run in row]
    width = max([len(calls) for run in runs for calls in run] + [1])
    k = max([len(call.expire) for run in runs for calls in run for call in calls] + [1])
    return width, k


def build_log(programs, n_steps: int, shape: tuple[int, int] | None = None) -> ActionLog:
    """``programs[n][b]``: one run's per-step call lists (:func:`wpbjax.host.drive.drive_episode`); ``shape``:
    (C, K) to pad to (at least :func:`log_shape`; default it, :func:`padded`)."""
    n, b = len(programs), len(programs[0]) if programs else 0
    needed = log_shape(programs)
    width, k = (padded(size) for size in needed) if shape is None else shape
    if width < needed[0] or k < needed[1]:
        raise ValueError(f"log shape {(width, k)}: the runs need at least {needed}")
    kind = np.full((n, b, n_steps, width), SKIP, np.int32)
    target = np.full((n, b, n_steps, width), NONE, np.int32)
    n_expire = np.zeros((n, b, n_steps, width), np.int32)
    expire = np.full((n, b, n_steps, width, k), NONE, np.int32)
    for i, row in enumerate(programs):
        for j, run in enumerate(row):
            for pos, calls in enumerate(run):
                for c, call in enumerate(calls):
                    kind[i, j, pos, c] = call.kind
                    target[i, j, pos, c] = call.target
                    n_expire[i, j, pos, c] = call.n_expire
                    expire[i, j, pos, c, : len(call.expire)] = call.expire
    return ActionLog(kind, target, n_expire, expire)


def widen(log: ActionLog, shape: tuple[int, int]) -> ActionLog:
    """``log`` padded to (C, K) = ``shape`` (SKIP / NONE / 0 padding, as :func:`build_log` pads), so the logs
    of several policies share one shape and one compiled replay."""
    (width, k), (have_width, have_k) = shape, log.expire.shape[-2:]
    if width < have_width or k < have_k:
        raise ValueError(f"log shape {shape}: the log is already {(have_width, have_k)}")
    calls = [(0, 0)] * (log.kind.ndim - 1) + [(0, width - have_width)]
    return ActionLog(
        np.pad(log.kind, calls, constant_values=SKIP),
        np.pad(log.target, calls, constant_values=NONE),
        np.pad(log.n_expire, calls, constant_values=0),
        np.pad(log.expire, calls + [(0, k - have_k)], constant_values=NONE),
    )


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ReplayState:
    pos: jax.Array  # [] int32 the step of the last call
    call: jax.Array  # [] int32 calls made at that step


def replay_init(params, episode, key):
    return ReplayState(pos=jnp.full((), NONE, jnp.int32), call=jnp.zeros((), jnp.int32))


def replay_act(params, state, store, episode, pos, budget):
    """Emit call number ``call`` of step ``pos`` from the log (a MERGE priced by the engine's own quote)."""
    call = jnp.where(state.pos == pos, state.call, 0)
    kind = params["log_kind"][pos, call]
    target = params["log_target"][pos, call]
    quote = store_lib.quote_merge(episode, pos, target)
    action = actions.Action(
        expire_slots=params["log_expire"][pos, call],
        n_expire=params["log_n_expire"][pos, call],
        kind=kind,
        target=target,
        merge_cost=jnp.where((kind == MERGE) & quote.acceptable, quote.cost, 0),
    )
    return action, ReplayState(pos=jnp.asarray(pos, jnp.int32), call=call + 1)


class ReplayPolicy(Policy):
    """A replay policy. Every replay policy traces to the same program (its log reaches it as per-run data,
    its name and tracks are read on the host only), so two of them are equal as a compiled program's
    static argument: N Python policies swept over logs of one shape compile once per track and shape."""

    def _traced(self) -> tuple:
        return (self.act, self.init, self.multi_action, self.features, tuple(sorted(self.params.items())))

    def __eq__(self, other) -> bool:
        return isinstance(other, ReplayPolicy) and self._traced() == other._traced()

    def __hash__(self) -> int:
        return hash(self._traced())


def replay_policy(name: str, tracks: tuple, plan=None) -> Policy:
    """A Policy that replays an action log; ``plan``: (write_cost, utility, length, budgets) -> run inputs
    (a sweep asks it per chunk; :class:`wpbjax.host.run.LogTable`)."""
    return ReplayPolicy(
        name,
        replay_act,
        tracks,
        init=replay_init,
        multi_action=True,
        emits=ALL_EMITS | {EMIT_WRITE_PAST},
        plan=plan,
        doc="replays a Python policy's accepted actions (wpbjax.host)",
    )
