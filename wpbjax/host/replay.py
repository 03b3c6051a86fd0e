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
from wpbjax.state.actions import ALL_KINDS, KIND_WRITE_PAST, MERGE, SKIP

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


def build_log(programs, n_steps: int) -> ActionLog:
    """``programs[n][b]``: one run's per-step call lists (:func:`wpbjax.host.drive.drive_episode`)."""
    runs = [run for row in programs for run in row]
    n, b = len(programs), len(programs[0]) if programs else 0
    width = max([len(calls) for run in runs for calls in run] + [1])
    k = max([len(call.expire) for run in runs for calls in run for call in calls] + [1])
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


def replay_policy(name: str, tracks: tuple, plan=None) -> Policy:
    """A Policy that replays an action log; ``plan``: (write_cost, utility, length, budgets) -> run inputs
    (a sweep asks it per chunk; :func:`wpbjax.host.run.log_plan`)."""
    return Policy(
        name,
        replay_act,
        tracks,
        init=replay_init,
        multi_action=True,
        kinds=ALL_KINDS | {KIND_WRITE_PAST},
        plan=plan,
        doc="replays a Python policy's accepted actions (wpbjax.host)",
    )
