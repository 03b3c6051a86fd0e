"""Soft write integrity: update fidelity and history coverage of a soft rollout, for training a gate
whose objective mixes F1 with them (``wpbjax train --fidelity-weight/--coverage-weight``).

The soft gate stores step t with probability w_t (independently, it never expires): a (fact, version)
pair is held with probability 1 - Π (1 - w_t) over the steps that carry it, and the expected counts of
:mod:`wpbjax.scoring.integrity`'s definitions follow (ratios of expectations, as soft F1 does).
"""

from __future__ import annotations

import jax.numpy as jnp

from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.scoring.integrity import by_slot_name

_LOG_FLOOR = 1e-6  # keeps log(1 - w) finite where w reaches 1


def soft_fidelity_coverage(stored: jnp.ndarray, episode: EpisodeBatch) -> tuple[jnp.ndarray, jnp.ndarray]:
    """([] soft update fidelity, [] soft history coverage) of per-step store probabilities ``stored``: [T]
    (0, 0 where the episode has no fact tables)."""
    if episode.fact_pair is None:
        zero = jnp.zeros((), jnp.float32)
        return zero, zero
    n_steps, width = episode.fact_pair.shape
    size = n_steps * width
    pair = by_slot_name(episode.fact_pair)
    missed = jnp.log(jnp.maximum(1.0 - jnp.tile(stored, width), _LOG_FLOOR))
    log_missed = jnp.zeros(size, jnp.float32).at[jnp.where(pair >= 0, pair, size)].add(missed, mode="drop")
    first = (pair == jnp.arange(size)).astype(jnp.float32)  # each observed pair once
    held = first * (1.0 - jnp.exp(log_missed))
    latest = by_slot_name(episode.fact_latest).astype(jnp.float32) * first
    fidelity = (held * latest).sum() / jnp.maximum(latest.sum(), 1.0)
    coverage = held.sum() / jnp.maximum(first.sum(), 1.0)
    return fidelity, coverage
