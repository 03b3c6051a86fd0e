"""Policies that read a per-step score computed once on the host (:func:`wpbjax.host.scores.score_steps`: a
classifier, a model call), so one pass of scoring serves a whole budget x threshold grid.

The score reaches ``act`` as the per-run input ``score`` ([T] float32, from the policy's ``plan``); each
policy admits a step iff ``score > threshold`` and keeps the eviction rule of its counterpart:

* ``scored_threshold`` -- priority_threshold's: WRITE an admitted step; the store rejects what does not fit.
* ``scored_recency`` -- the spec's recency: expire the oldest items until an admitted step fits.
* ``scored_greedy`` -- priority_greedy's on the score: when full, evict by (score, t) ascending if the
  incoming score beats the lowest stored one.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy, no_state
from wpbjax.policies.common import EVICTS_OLDEST, gated_recency
from wpbjax.policies.published import WRITES, GreedyState, priority_greedy_act
from wpbjax.state import actions

THRESHOLD = {"threshold": 0.5}
TRACKS = ("unprivileged", "privileged")  # the score was computed on one of them: sweep that one


def scored_threshold_act(params, state, store, episode, pos, budget):
    return actions.write_if(params["score"][pos] > params["threshold"]), state


def _admit(params, state, store, episode, pos, budget):
    return params["score"][pos] > params["threshold"], state


scored_recency_act, scored_recency_init = gated_recency(_admit)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ScoredGreedyState:
    greedy: GreedyState  # priority_greedy's level lists, one level per distinct score
    rank: jax.Array  # [T] int32 dense rank of each step's score within the episode


def scored_greedy_init(params, episode, key):
    n_steps = episode.valid.shape[0]
    score = jnp.where(episode.valid, params["score"], -jnp.inf)
    levels = jnp.unique(score, size=n_steps, fill_value=jnp.inf)  # ascending distinct scores
    links = jnp.full(n_steps, NONE, jnp.int32)
    greedy = GreedyState(level_newer=links, level_oldest=links, level_newest=links, walking=jnp.zeros((), bool))
    return ScoredGreedyState(greedy=greedy, rank=jnp.searchsorted(levels, score).astype(jnp.int32))


def scored_greedy_act(params, state, store, episode, pos, budget):
    """priority_greedy on the score's ranks, for admitted steps only (a step not admitted leaves its state)."""
    by_score = dataclasses.replace(episode, priority_rank=state.rank)
    action, greedy = priority_greedy_act(params, state.greedy, store, by_score, pos, budget)
    admitted = params["score"][pos] > params["threshold"]
    greedy = jax.tree_util.tree_map(lambda new, old: jnp.where(admitted, new, old), greedy, state.greedy)
    return actions.select(admitted, action, actions.skip()), ScoredGreedyState(greedy=greedy, rank=state.rank)


class ScoredPolicy(Policy):
    """A scored policy. Its scores reach it as per-run data and its name is read on the host only, so two
    of one kind trace to the same program and are equal as a compiled program's static argument: scores
    registered again (another scorer, another episode set, the same under a new name) reuse the compiled
    sweep of the first."""

    def _traced(self) -> tuple:
        return (self.act, self.init, self.multi_action, self.features, self.tracks, tuple(sorted(self.params.items())))

    def __eq__(self, other) -> bool:
        return isinstance(other, ScoredPolicy) and self._traced() == other._traced()

    def __hash__(self) -> int:
        return hash(self._traced())


def scored_policies(plan, suffix: str) -> dict[str, Policy]:
    """The three scored policies reading the scores ``plan`` hands each run, named ``KIND_SUFFIX``."""
    return {
        kind: ScoredPolicy(
            f"{kind}_{suffix}", act, TRACKS, dict(THRESHOLD), init=init or no_state, plan=plan, **options, doc=doc
        )
        for kind, act, init, options, doc in (
            ("scored_threshold", scored_threshold_act, None, dict(WRITES), "writes steps scoring > threshold"),
            (
                "scored_recency",
                scored_recency_act,
                scored_recency_init,
                dict(multi_action=True, **EVICTS_OLDEST),
                "admits steps scoring > threshold; expires the oldest items until one fits",
            ),
            (
                "scored_greedy",
                scored_greedy_act,
                scored_greedy_init,
                dict(multi_action=True, emits=frozenset({"write", "expire"}), layout=frozenset()),
                "admits steps scoring > threshold; when full evicts by (score, t) if the incoming score beats the lowest",
            ),
        )
    }
