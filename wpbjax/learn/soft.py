"""A differentiable relaxation of one gated rollout: soft gate, soft store, soft F1.

Per step ``t`` (inside ``lax.scan``, so gradients flow through the whole episode):
  p_t = sigmoid(logit(features_t))                          write probability (the soft gate)
  a_t = sigmoid((remaining_t - cost_t) / BYTE_TEMPERATURE)  soft "the write fits" (the store's rule)
  w_t = p_t * a_t                                           expected bytes used grow by w_t * cost_t
Soft F1 = 2 Σ w_t critical_t / (Σ w_t + |R|), the exact F1 formula with expected counts (retained
steps W = written steps: the gate never merges or expires). Budget-awareness comes from the
features (remaining budget, costs) and from a_t: an expensive write now makes later ones not fit.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.learn.features import init_state
from wpbjax.learn.gate import gate_step
from wpbjax.learn.soft_integrity import soft_fidelity_coverage
from wpbjax.learn.soft_reads import soft_reads
from wpbjax.scoring.metrics import f1_from_counts

BYTE_TEMPERATURE = 32.0  # bytes: how soft the budget edge is (default; wider edges give smoother gradients)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SoftOutcome:
    hits: jax.Array  # [] float32 expected |W ∩ R|
    written: jax.Array  # [] float32 expected |W|
    used: jax.Array  # [] float32 expected bytes used
    n_critical: jax.Array  # [] float32 |R| (critical real steps)
    fidelity: jax.Array  # [] float32 soft update fidelity (wpbjax.learn.soft_integrity; 0 without facts)
    coverage: jax.Array  # [] float32 soft history coverage
    reads: jax.Array  # [] float32 soft read accuracy (wpbjax.learn.soft_reads; 0 without probe tables)
    credit: jax.Array  # [] float32 soft read credit (the weighted share of each probe's facts right)

    @property
    def f1(self) -> jax.Array:
        return f1_from_counts(self.hits, self.written, self.n_critical)


def soft_rollout(
    weights: dict,
    episode: EpisodeBatch,
    budget,
    track: str,
    byte_temperature=BYTE_TEMPERATURE,
    probes: dict | None = None,
    read_top_k: int = 5,
) -> SoftOutcome:
    """Expected counts of the soft gate on one episode (arrays without the N axis) at one budget; with
    ``probes`` (one episode's :func:`wpbjax.learn.soft_reads.probe_tables`) also its soft read accuracy."""
    budget = jnp.asarray(budget, jnp.float32)

    def step(carry, pos):
        features_state, used, since_write = carry
        remaining = jnp.maximum(budget - used, 0.0)
        gate, features_state = gate_step(weights, track, features_state, episode, pos, budget, remaining, since_write)
        cost = episode.write_cost[pos].astype(jnp.float32)
        write = jnp.exp(gate.log_prob)
        fits = jax.nn.sigmoid((remaining - cost) / byte_temperature)
        stored = jnp.where(episode.valid[pos], write * fits, 0.0)
        since_write = (1.0 - stored) * (since_write + 1.0) + stored  # expected steps since the last item
        out = (stored, stored * episode.critical[pos])
        return (features_state, used + stored * cost, since_write), out

    initial = (init_state(episode), jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32) + 1.0)
    (_, used, _), (stored, hits) = jax.lax.scan(step, initial, jnp.arange(episode.valid.shape[0]))
    n_critical = (episode.critical & episode.valid).sum().astype(jnp.float32)
    fidelity, coverage = soft_fidelity_coverage(stored, episode)
    zero = jnp.zeros((), jnp.float32)
    read, credit = (zero, zero) if probes is None else soft_reads(stored, probes, read_top_k)
    return SoftOutcome(
        hits=hits.sum(),
        written=stored.sum(),
        used=used,
        n_critical=n_critical,
        fidelity=fidelity,
        coverage=coverage,
        reads=read,
        credit=credit,
    )


def soft_f1_loss(
    weights: dict,
    batch: EpisodeBatch,
    budgets,
    track: str,
    byte_temperature=BYTE_TEMPERATURE,
    fidelity_weight=0.0,
    coverage_weight=0.0,
    f1_weight=1.0,
    read_weight=0.0,
    probes: dict | None = None,
    read_top_k: int = 5,
    credit_weight=0.0,
) -> jax.Array:
    """``f1_weight`` x (1 - mean soft F1) over a batch: ``batch`` [N, T] arrays, ``budgets``: [N] (one per
    episode); plus ``fidelity_weight`` x (1 - soft update fidelity) and ``coverage_weight`` x (1 - soft history
    coverage) (write integrity, docs/integrity.md), ``read_weight`` x (1 - soft read accuracy) and
    ``credit_weight`` x (1 - soft read credit) over the ``probes`` tables (wpbjax.learn.soft_reads.probe_tables
    with the N axis, docs/reads.md)."""

    def one(episode, budget, episode_probes):
        return soft_rollout(weights, episode, budget, track, byte_temperature, episode_probes, read_top_k)

    outcomes = jax.vmap(one)(batch, budgets, probes)
    return (
        f1_weight * (1.0 - outcomes.f1.mean())
        + fidelity_weight * (1.0 - outcomes.fidelity.mean())
        + coverage_weight * (1.0 - outcomes.coverage.mean())
        + read_weight * (1.0 - outcomes.reads.mean())
        + credit_weight * (1.0 - outcomes.credit.mean())
    )
