"""Bandits on the ``feedback`` track: per step-type utility estimates learned online.

The feedback track reveals u_t after the decision at step t: acting at step ``pos`` a policy may read
``episode.utility[pos - 1]`` (:func:`revealed_utility`) and must keep anything it wants from earlier
steps in its own state. These two learn only from the steps they *wrote* (bandit feedback: the value
of a memory is learned by keeping it), which is what makes their exploration matter. Both evict by
recency when full.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import EVICTS_OLDEST, FEEDBACK_ONLY, N_STEP_TYPES, gated_recency, step_type


def revealed_utility(episode, pos):
    """``(u, revealed)``: the utility of step ``pos - 1``, revealed once the decision at it was made.
    The only read of ``episode.utility`` a feedback-track policy makes."""
    return episode.utility[jnp.maximum(pos - 1, 0)], pos >= 1


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class BanditState:
    seen: jax.Array  # [A] bool   api values seen so far in the episode
    previous_api: jax.Array  # []  int32  api index of the previous step (-1 none)
    previous_type: jax.Array  # []  int32  step type of the previous step
    value_sum: jax.Array  # [K] float32 revealed utility of the written steps, per step type
    n_written: jax.Array  # [K] float32 written steps with revealed utility, per step type
    key: jax.Array  # the episode's PRNG key (epsilon_greedy's exploration draws)


def bandit_init(params, episode, key):
    return BanditState(
        seen=jnp.zeros(episode.api_ids.shape[-1], bool),
        previous_api=jnp.full((), NONE, jnp.int32),
        previous_type=jnp.zeros((), jnp.int32),
        value_sum=jnp.zeros(N_STEP_TYPES, jnp.float32),
        n_written=jnp.zeros(N_STEP_TYPES, jnp.float32),
        key=key,
    )


def _learn_and_type(state: BanditState, store, episode, pos):
    """Fold in the previous step's revealed utility if it was written; classify the current step."""
    utility, revealed = revealed_utility(episode, pos)
    learn = revealed & (store.newest == pos - 1)  # the previous step is the newest item: we wrote it
    value_sum = state.value_sum.at[state.previous_type].add(jnp.where(learn, utility, 0.0))
    n_written = state.n_written.at[state.previous_type].add(jnp.where(learn, 1.0, 0.0))
    api = episode.api_index[pos]
    kind = step_type(state.seen, state.previous_api, api)
    new_state = dataclasses.replace(
        state,
        seen=state.seen.at[jnp.maximum(api, 0)].set(state.seen[jnp.maximum(api, 0)] | (api >= 0)),
        previous_api=api,
        previous_type=kind,
        value_sum=value_sum,
        n_written=n_written,
    )
    mean = value_sum / jnp.maximum(n_written, 1.0)
    overall = value_sum.sum() / jnp.maximum(n_written.sum(), 1.0)
    return kind, mean, overall, new_state


def epsilon_greedy_gate(params, state, store, episode, pos, budget):
    """Admit with probability epsilon (explore); otherwise admit a step whose type is untried or whose
    mean revealed utility is at least the mean over all written steps (exploit)."""
    kind, mean, overall, state = _learn_and_type(state, store, episode, pos)
    explore = jax.random.uniform(jax.random.fold_in(state.key, pos)) < params["epsilon"]
    exploit = (state.n_written[kind] == 0) | (mean[kind] >= overall)
    return explore | exploit, state


def bandit_ucb_gate(params, state, store, episode, pos, budget):
    """Admit a step whose type's upper confidence bound, mean + c·sqrt(ln(n + 1) / n_type), reaches
    the mean revealed utility over all n written steps (untried types: always)."""
    kind, mean, overall, state = _learn_and_type(state, store, episode, pos)
    n_total, n_type = state.n_written.sum(), state.n_written[kind]
    bonus = params["c"] * jnp.sqrt(jnp.log(n_total + 1.0) / jnp.maximum(n_type, 1.0))
    return (n_type == 0) | (mean[kind] + bonus >= overall), state


epsilon_greedy_act, epsilon_greedy_init = gated_recency(epsilon_greedy_gate, bandit_init)


EPSILON_GREEDY = Policy(
    "epsilon_greedy",
    epsilon_greedy_act,
    FEEDBACK_ONLY,
    {"epsilon": 0.1},
    init=epsilon_greedy_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="per step-type utility estimates from revealed utility; explores with probability epsilon",
)
bandit_ucb_act, bandit_ucb_init = gated_recency(bandit_ucb_gate, bandit_init)


BANDIT_UCB = Policy(
    "bandit_ucb",
    bandit_ucb_act,
    FEEDBACK_ONLY,
    {"c": 1.0},
    init=bandit_ucb_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="per step-type UCB on revealed utility; recency eviction",
)
