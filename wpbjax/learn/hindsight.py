"""Hindsight targets for the gate's afford head: would an optimal continuation write this step?

From step t with ``remaining`` bytes left, the F1-best continuation stores as many of the critical
steps still to come (t included) as fit: the cheapest ones, a prefix of their costs sorted
ascending. The incoming critical step is a *member* iff its cost is at most the last one that
prefix takes. Knowing that needs the future, so it is a training target only (as in DAgger, on the
states the gate's own greedy rollouts visit): the afford head learns, from online features, the
probability of membership. At 1 KB that means skipping an expensive critical step while cheaper
ones are likely to come; with room to spare, or near the end of an episode, it means writing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.learn.gate import afford_logit
from wpbjax.learn.reinforce import hard_rollout


def continuation_members(episode: EpisodeBatch, remaining) -> jax.Array:
    """[T] bool: step t is critical and among the cheapest critical steps at positions >= t that fit
    together in ``remaining[t]`` bytes. One episode (arrays without the N axis); ``remaining``: [T]."""
    n_steps = episode.valid.shape[0]
    critical = episode.critical & episode.valid
    positions = jnp.arange(n_steps)
    big = jnp.iinfo(jnp.int32).max

    def member(t, room):
        ahead = critical & (positions >= t)
        costs = jnp.sort(jnp.where(ahead, episode.write_cost, big))  # costs still to come, ascending
        fits = (jnp.cumsum(jnp.where(costs < big, costs, 0)) <= room) & (costs < big)
        taken = fits.sum()
        last_taken = costs[jnp.maximum(taken - 1, 0)]
        return critical[t] & (taken > 0) & (episode.write_cost[t] <= last_taken)

    return jax.vmap(member)(positions, remaining)


def afford_loss(weights: dict, batch: EpisodeBatch, budgets, track: str, member_weight=1.0) -> jax.Array:
    """Mean binary cross-entropy of the afford head against :func:`continuation_members`, over the
    critical steps of the batch (``batch`` [N, T], ``budgets`` [N]) on the greedy gate's states.
    Returns ``(loss, mean exact F1 of those greedy rollouts)``.

    ``member_weight`` > 1 weighs members more: skipping a member loses a hit for sure, writing a
    non-member only costs one when a cheaper critical step then finds no room."""
    greedy = jax.lax.stop_gradient(weights)
    keys = jax.random.split(jax.random.key(0), batch.valid.shape[0])  # unused by greedy rollouts
    greedy_f1, _, features, remaining = jax.vmap(hard_rollout, in_axes=(None, 0, 0, None, 0, None))(
        greedy, batch, budgets, track, keys, True
    )
    targets = jax.vmap(continuation_members)(batch, remaining)
    logits = afford_logit(weights, features, track)
    losses = optax.sigmoid_binary_cross_entropy(logits, targets.astype(jnp.float32))
    losses = losses * jnp.where(targets, member_weight, 1.0)
    critical = (batch.critical & batch.valid).astype(jnp.float32)
    return (losses * critical).sum() / jnp.maximum(critical.sum(), 1.0), greedy_f1.mean()
