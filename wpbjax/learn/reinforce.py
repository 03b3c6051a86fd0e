"""Exact hard rollouts of a gate, and score-function (REINFORCE) gradients of the exact F1.

:func:`hard_rollout` runs the gate with the store's exact WRITE rule (greedy or sampled writes);
the hindsight targets (wpbjax.learn.hindsight) are computed on its greedy states. The
self-critical REINFORCE loss (reward: the exact F1 of a sampled rollout, baseline: the greedy
rollout of the same episode and budget) is an optional extra term of the training loss
(``TrainConfig.reinforce_weight``, off by default: on its own it did not teach the budget trade-off
within the training budget, see docs/learning.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.learn.features import init_state, steps_since_write
from wpbjax.learn.gate import gate_step
from wpbjax.scoring.metrics import f1_from_counts
from wpbjax.state import store as store_lib


def hard_rollout(weights: dict, episode: EpisodeBatch, budget, track: str, key, greedy: bool):
    """Exact gated rollout of one episode at one budget, writes sampled (or greedy when ``greedy``).

    Returns ``(f1, log_prob, features, remaining)``: the final store's exact F1, Σ_t log π(decision_t)
    over real steps, the features the gate saw ``[T, D]`` and the bytes left before each step ``[T]``.
    """
    budget = jnp.asarray(budget, jnp.int32)
    n_steps = episode.valid.shape[0]
    uniforms = jax.random.uniform(key, (n_steps,))

    def step(carry, pos):
        features_state, used, last_stored = carry
        remaining = jnp.maximum(budget - used, 0)
        gate, features_state = gate_step(
            weights, track, features_state, episode, pos, budget, remaining, steps_since_write(last_stored, pos)
        )
        log_p = gate.log_prob
        log_not_p = jnp.log(-jnp.expm1(jnp.minimum(log_p, -1e-7)))
        write = (log_p > jnp.log(0.5)) if greedy else (uniforms[pos] < jnp.exp(log_p))
        real = episode.valid[pos]
        cost = episode.write_cost[pos]
        stored = real & write & store_lib.fits(used, cost, budget)  # the store's WRITE rule (SEMANTICS §3)
        log_prob = jnp.where(real, jnp.where(write, log_p, log_not_p), 0.0)
        carry = (features_state, used + jnp.where(stored, cost, 0), jnp.where(stored, pos, last_stored))
        return carry, (stored, log_prob, gate.features, remaining)

    initial = (init_state(episode), jnp.zeros((), jnp.int32), jnp.full((), NONE, jnp.int32))
    _, (stored, log_probs, features, remaining) = jax.lax.scan(step, initial, jnp.arange(n_steps))
    hits = (stored & episode.critical).sum()
    f1 = f1_from_counts(hits, stored.sum(), (episode.critical & episode.valid).sum())
    return f1, log_probs.sum(), features, remaining


def self_critical_loss(weights: dict, batch: EpisodeBatch, budgets, track: str, key):
    """Surrogate whose gradient is the REINFORCE estimate of -∇ mean F1 (greedy baseline).

    ``batch``: [N, T]; ``budgets``: [N]. Returns ``(surrogate, mean sampled F1)``.
    """
    keys = jax.random.split(key, batch.valid.shape[0])
    sampled = jax.vmap(hard_rollout, in_axes=(None, 0, 0, None, 0, None))
    f1, log_prob, _, _ = sampled(weights, batch, budgets, track, keys, False)
    greedy_f1, _, _, _ = sampled(jax.lax.stop_gradient(weights), batch, budgets, track, keys, True)
    advantage = jax.lax.stop_gradient(f1 - greedy_f1)
    return -(advantage * log_prob).mean(), f1.mean()
