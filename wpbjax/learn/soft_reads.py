"""Soft reads: the expected read accuracy of a soft rollout, for training a gate on what its store answers
(``TrainConfig.read_weight``, docs/reads.md "Read-aware learning").

The soft gate stores step t with probability w_t (independently, it never expires; wpbjax.learn.soft). A probe's
retriever scores (wpbjax.scoring.reads: relevance, recency, importance) depend on the episode alone, so each probe's
ranking of the slots is fixed and computed once on the host (:func:`probe_tables`); what the gate changes is
which slots are present. So the relaxation is over presence, not over the ranking: walking the probe's ranking
best first with the distribution of how many present slots came before (K states), slot s is retrieved with
probability w_s · P(fewer than K present slots rank above it) — the exact marginal of the hard top-K under
independent storage, differentiable in w, with no temperature (a softmax over scores would relax a ranking that
has nothing to learn). The reader answers with the newest retrieved usable item: right with probability
Σ_s r_s [s holds the right version] Π_{usable s' > s} (1 - r_s'), retrievals taken as independent (a probe whose
right answer is to abstain: Π over every usable s of (1 - r_s)). With every w_s in {0, 1} this is the hard
read accuracy; in between, the product is an approximation (retrievals compete for the K places, so it
undercounts an older slot's chance; tests/learn/test_reads_learning.py works one case by hand).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.scoring import reads

_LOG_FLOOR = 1e-6
DEFAULT_RETRIEVER = reads.Retriever()


def probe_tables(encoded, track: str, retriever: reads.Retriever = DEFAULT_RETRIEVER) -> dict:
    """Per episode ``{order, usable, right: [N, Q, T], probe, abstain: [N, Q]}`` of the probes of ``encoded``
    (which has probes): ``order`` the slots by the retriever's score, best first (int32; the hard retriever's
    order, ties to the newer slot); ``usable``, ``right`` (bool) in that order: the slot's item may answer the
    probe / holds the right version, and the slot is not after the probe (later slots are never present);
    ``abstain``: the right answer is to abstain."""
    tables = reads._episode_tables(encoded, np.arange(encoded.n_episodes), encoded.track_costs(track))
    ranked = reads._rank(tables, retriever)
    before = ranked.order <= tables.asked_at[:, :, None]
    version = np.take_along_axis(tables.version, ranked.order, -1)
    truth = tables.truth[:, :, None]
    return {
        "order": ranked.order.astype(np.int32),
        "usable": ranked.usable & before,
        "right": ranked.usable & before & (version == truth) & (truth >= 0),
        "before": before,
        "probe": tables.probe,
        "abstain": tables.probe & (tables.truth < 0),
    }


def retrieved(present: jax.Array, top_k: int) -> jax.Array:
    """[Q, T] probability that each ranked slot is retrieved, from ``present`` [Q, T] (each slot's probability of
    being present, in each probe's ranking order): present x P(fewer than ``top_k`` present slots before it)."""

    def step(before, present_here):  # before: [Q, K] P(j present slots so far), j < K
        chance = present_here * before.sum(-1)
        shifted = jnp.concatenate([jnp.zeros_like(before[:, :1]), before[:, :-1]], -1)
        return before * (1.0 - present_here[:, None]) + shifted * present_here[:, None], chance

    start = jnp.zeros((present.shape[0], top_k), present.dtype).at[:, 0].set(1.0)
    _, chances = jax.lax.scan(step, start, present.T)
    return chances.T


def soft_read_accuracy(stored: jax.Array, tables: dict, top_k: int) -> jax.Array:
    """[] expected share of right answers over one episode's probes; ``stored``: [T] store probabilities,
    ``tables``: one episode's :func:`probe_tables` ([Q, T] and [Q]); 0 where the episode has no probe."""
    present = jnp.where(tables["before"], stored[tables["order"]], 0.0)  # [Q, T] in ranked order
    chance = retrieved(present, top_k)
    usable = tables["usable"]
    # newest first: the reader takes the newest retrieved usable item, so order each probe's slots by step
    newest_first = jnp.argsort(-jnp.where(usable, tables["order"], -1), axis=-1)
    chance_new = jnp.take_along_axis(jnp.where(usable, chance, 0.0), newest_first, -1)
    right_new = jnp.take_along_axis(tables["right"], newest_first, -1)
    missed = jnp.log(jnp.maximum(1.0 - chance_new, _LOG_FLOOR))
    newer_missed = jnp.cumsum(missed, -1) - missed  # every newer usable slot missed
    answered_right = (chance_new * right_new * jnp.exp(newer_missed)).sum(-1)
    abstained = jnp.exp(missed.sum(-1))
    right = jnp.where(tables["abstain"], abstained, answered_right) * tables["probe"]
    return right.sum() / jnp.maximum(tables["probe"].sum(), 1)
