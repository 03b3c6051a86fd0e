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

Probes of several facts and history probes (docs/reads.md) are read as the hard reader reads them, a row per
asked fact, all rows of a probe ranked alike (relevance the best over its facts): a history row is right when
every version up to its step is found, Π over its versions of (1 - Π over the slots of that version of (1 - r_s));
a probe is right when every row is (the product of its rows' chances), and its credit is the weighted mean of
its rows' chances — again exact when every w_s is 0 or 1, retrievals taken as independent in between.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.scoring import reads

_LOG_FLOOR = 1e-6
DEFAULT_RETRIEVER = reads.Retriever()


def probe_tables(encoded, track: str, retriever: reads.Retriever = DEFAULT_RETRIEVER) -> dict:
    """Per episode tables of the probe rows of ``encoded`` (which has probes), a row per asked fact: ``order``,
    ``usable``, ``right``, ``before`` [N, Q, T]: the slots by the retriever's score, best first (int32; the hard
    retriever's order, ties to the newer slot) and, in that order, the slot's item may answer the row / holds the
    right version / is not after the probe (later slots are never present); ``probe``, ``abstain`` [N, Q]: a
    real row, and its right answer is to abstain; ``history`` [N, Q]: a history row, ``n_versions`` [N, Q] its
    versions up to its step, ``version_slots`` [N, Q, T, V] (V: the most versions of a history row, at least 1)
    the usable slots of each of its versions in ranked order; ``member`` [N, Q, Q]: for a probe's first row,
    the rows of the probe (False on the other rows), ``weight`` [N, Q] each row's weight in its probe's credit."""
    tables = reads._episode_tables(encoded, np.arange(encoded.n_episodes), encoded.track_costs(track))
    ranked = reads._rank(tables, retriever)
    before = ranked.order <= tables.asked_at[:, :, None]
    version = np.take_along_axis(tables.version, ranked.order, -1)
    truth = tables.truth[:, :, None]
    rows = np.arange(tables.first.shape[1])
    lead = tables.probe & (tables.first == rows)
    member = lead[:, :, None] & (tables.first[:, None, :] == rows[:, None]) & tables.probe[:, None, :]
    vindex = np.take_along_axis(tables.vindex, ranked.order, -1)  # [N, Q, T] in ranked order, -1 elsewhere
    width = max(int(tables.n_versions.max(initial=0)), 1)
    return {
        "order": ranked.order.astype(np.int32),
        "usable": ranked.usable & before,
        "right": ranked.usable & before & (version == truth) & (truth >= 0),
        "before": before,
        "probe": tables.probe,
        "abstain": tables.probe & (tables.truth < 0),
        "history": tables.history,
        "n_versions": tables.n_versions.astype(np.int32),
        "version_slots": (vindex[..., None] == np.arange(width)) & tables.history[:, :, None, None],
        "member": member,
        "weight": np.where(tables.probe, tables.weight, 0.0).astype(np.float32),
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


def soft_reads(stored: jax.Array, tables: dict, top_k: int) -> tuple[jax.Array, jax.Array]:
    """([] expected read accuracy, [] expected read credit) of one episode's probes: the share of probes right
    (every fact of a probe right) and the mean over probes of the weighted share of their facts right;
    ``stored``: [T] store probabilities, ``tables``: one episode's :func:`probe_tables` (without the N axis);
    0 where the episode has no probe."""
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
    row_right = jnp.where(tables["abstain"], abstained, answered_right)
    # a history row: each of its versions found (some retrieved slot of it), every version
    missed_ranked = jnp.log(jnp.maximum(1.0 - jnp.where(usable, chance, 0.0), _LOG_FLOOR))  # [Q, T]
    version_missed = jnp.einsum("qt,qtv->qv", missed_ranked, tables["version_slots"].astype(missed_ranked.dtype))
    wanted = jnp.arange(tables["version_slots"].shape[-1]) < tables["n_versions"][:, None]
    every_version = jnp.where(wanted, 1.0 - jnp.exp(version_missed), 1.0).prod(-1)
    row_right = jnp.where(tables["history"], every_version, row_right) * tables["probe"]  # [Q]
    member = tables["member"]  # [Q, Q]: a probe's first row -> its rows
    lead = member.any(-1)
    probe_right = jnp.where(member, row_right[None, :], 1.0).prod(-1)
    weights = jnp.where(member, tables["weight"][None, :], 0.0)
    credit = (weights * row_right[None, :]).sum(-1) / jnp.maximum(weights.sum(-1), 1e-12)
    n_probes = jnp.maximum(lead.sum(), 1)
    return (jnp.where(lead, probe_right, 0.0).sum() / n_probes, jnp.where(lead, credit, 0.0).sum() / n_probes)


def soft_read_accuracy(stored: jax.Array, tables: dict, top_k: int) -> jax.Array:
    """[] expected share of right answers over one episode's probes (:func:`soft_reads`' first value)."""
    return soft_reads(stored, tables, top_k)[0]
