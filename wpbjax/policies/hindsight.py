"""Cheating references on the ``oracle`` track: they see every step's hidden utility.

``utility_greedy`` is the spec's oracle-sorted UtilityGreedy: priority_greedy run on the utility
instead of the priority. ``oracle_optimal`` writes exactly an exact knapsack solution, computed in
hindsight on the host (:func:`wpbjax.scoring.oracle.exact_choice_batch`), so its regret against the exact
oracle is 0 on every run.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import ORACLE_ONLY
from wpbjax.policies.published import WRITES, GreedyState, priority_greedy_act
from wpbjax.scoring import oracle
from wpbjax.state import actions


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class UtilityGreedyState:
    greedy: GreedyState  # priority_greedy's level lists, one level per distinct utility
    rank: jax.Array  # [T] int32 dense rank of each step's utility within the episode


def utility_greedy_init(params, episode, key):
    n_steps = episode.valid.shape[0]
    utility = jnp.where(episode.valid, episode.utility, 0.0)
    levels = jnp.unique(utility, size=n_steps, fill_value=jnp.inf)  # ascending distinct utilities
    rank = jnp.searchsorted(levels, utility).astype(jnp.int32)
    links = jnp.full(n_steps, NONE, jnp.int32)
    greedy = GreedyState(level_newer=links, level_oldest=links, level_newest=links, walking=jnp.zeros((), bool))
    return UtilityGreedyState(greedy=greedy, rank=rank)


def utility_greedy_act(params, state, store, episode, pos, budget):
    """priority_greedy on the utility: WRITE if it fits; else, if the incoming utility beats the
    lowest stored one, evict by (utility, t) ascending until it fits, then WRITE. One level per
    distinct utility, so a call is O(T) rather than priority_greedy's O(R)."""
    by_utility = dataclasses.replace(episode, priority_rank=state.rank)
    action, greedy = priority_greedy_act(params, state.greedy, store, by_utility, pos, budget)
    return action, UtilityGreedyState(greedy=greedy, rank=state.rank)


UTILITY_GREEDY = Policy(
    "utility_greedy",
    utility_greedy_act,
    ORACLE_ONLY,
    init=utility_greedy_init,
    multi_action=True,
    emits=frozenset({"write", "expire"}),
    layout=frozenset(),
    doc="priority_greedy on the hidden utility (cheating reference)",
)


def oracle_optimal_plan(write_cost, utility, length, budgets):
    """Per-run input: the exact oracle's chosen steps, ``plan``: [n, B, T] bool."""
    return {"plan": oracle.exact_choice_batch(write_cost, utility, length, budgets)}


def oracle_optimal_act(params, state, store, episode, pos, budget):
    """WRITE exactly the planned steps (they fit the budget together, so every WRITE is accepted)."""
    return actions.write_if(params["plan"][pos]), state


ORACLE_OPTIMAL = Policy(
    "oracle_optimal",
    oracle_optimal_act,
    ORACLE_ONLY,
    **WRITES,
    plan=oracle_optimal_plan,
    doc="writes an exact knapsack solution chosen in hindsight (regret 0)",
)
