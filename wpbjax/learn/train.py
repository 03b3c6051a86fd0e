"""Train a budget-conditioned write gate with optax (see docs/learning.md).

Loss: 1 - soft F1 (wpbjax.learn.soft; trains the detection head) + the afford head's hindsight
cross-entropy (wpbjax.learn.hindsight) [+ optional REINFORCE, wpbjax.learn.reinforce]. Training
episodes come from the published generator (all four modes) at seeds far from the evaluation ones:
set ``s`` uses ``random.Random(100_000 + 100_000*s + 10_000*mode_number + i)``, never the published
seeds 0..9 nor the held-out 10_000.. ones. Each optimisation step draws a batch from that pool and
one budget per episode, log-uniform over the paper's range (half of them below 4 KB, where the
budget trade-off matters). Deterministic given the seed (one ``jax.random.key``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.episodes.generators.parallel import generate_encoded
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.gate import init_gate
from wpbjax.learn.hindsight import afford_loss
from wpbjax.learn.reinforce import self_critical_loss
from wpbjax.learn.soft import soft_f1_loss
from wpbjax.runtime import programs

TRAIN_SEED_BASE = 100_000  # training episode seeds start here (evaluation: 0..9 and 10_000..)


def training_episodes(config: TrainConfig) -> EncodedEpisodes:
    """The training pool: ``pool_per_mode`` episodes of each mode, seeds disjoint from evaluation."""
    base = TRAIN_SEED_BASE + 100_000 * config.seed
    configs = [
        DriftConfig(mode=mode, seed=base + 10_000 * number, steps=config.episode_steps)
        for number, mode in enumerate(MODES)
    ]
    return generate_encoded(configs, config.pool_per_mode)


def calibration_episodes(config: TrainConfig, per_mode: int = 64) -> EncodedEpisodes:
    """Held-back training-seed episodes for :mod:`wpbjax.learn.calibrate` (disjoint from the pool)."""
    base = TRAIN_SEED_BASE + 100_000 * config.seed + 5_000
    configs = [
        DriftConfig(mode=mode, seed=base + 10_000 * number, steps=config.episode_steps)
        for number, mode in enumerate(MODES)
    ]
    return generate_encoded(configs, per_mode)


def train_gate(config: TrainConfig = TrainConfig(), log: Callable[[str], None] | None = None) -> dict:
    """Train, then calibrate the afford threshold. Returns ``{"weights", "history", "afford_threshold",
    "calibration", "seconds"}``; :func:`wpbjax.learn.gate.save_gate` takes the rest as ``meta``."""
    from wpbjax.learn.calibrate import calibrate_afford_threshold

    started = time.perf_counter()
    weights, history = train(config, log=log)
    threshold, table = calibrate_afford_threshold(
        weights, config.track, calibration_episodes(config, config.calibration_per_mode)
    )
    if log is not None:
        log(
            f"wpbjax train: afford threshold {threshold:g} (calibrated on {4 * config.calibration_per_mode} "
            f"held-back episodes)"
        )
    return {
        "weights": weights,
        "history": history,
        "afford_threshold": threshold,
        "calibration": table,
        "seconds": round(time.perf_counter() - started, 1),
    }


def sample_budgets(key, n: int, config: TrainConfig) -> jax.Array:
    """[n] float32 budgets: half log-uniform in [1 KB, 2^small_log2_budget], half over the whole range."""
    key_u, key_small = jax.random.split(key)
    low, high, small = config.min_log2_budget, config.max_log2_budget, config.small_log2_budget
    wide = jax.random.uniform(key_u, (n,), minval=low, maxval=high)
    tight = jax.random.uniform(key_small, (n,), minval=low, maxval=small)
    return jnp.round(2.0 ** jnp.where(jnp.arange(n) % 2 == 0, tight, wide))


def optimizer(config: TrainConfig) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, config.learning_rate, max(config.steps // 10, 1), config.steps, config.learning_rate * 0.05
    )
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=config.weight_decay))


def _static(config: TrainConfig) -> TrainConfig:
    """The config as a compile key: the seed only feeds traced keys, so runs with other seeds share a compile."""
    return dataclasses.replace(config, seed=0, log_every=1)


def _total_loss(config: TrainConfig, weights, batch, budgets, key, probes=None):
    # The detection head learns from the soft objective; the afford head from hindsight targets on
    # exact rollouts (its soft gradient pushes it to "always afford", see wpbjax.learn.hindsight).
    soft_weights = {"detect": weights["detect"], "afford": jax.lax.stop_gradient(weights["afford"])}
    soft = soft_f1_loss(
        soft_weights,
        batch,
        budgets,
        config.track,
        config.byte_temperature,
        config.fidelity_weight,
        config.coverage_weight,
        config.f1_weight,
        config.read_weight,
        probes,
        config.read_top_k,
        config.credit_weight,
    )
    hindsight, greedy_f1 = afford_loss(weights, batch, budgets, config.track, config.member_weight)
    total = soft + config.hindsight_weight * hindsight
    if config.reinforce_weight:  # optional: REINFORCE on the exact F1 (off by default, see docs/learning.md)
        surrogate, _ = self_critical_loss(weights, batch, budgets, config.track, key)
        total = total + config.reinforce_weight * surrogate
    return total, (soft, 1.0 - greedy_f1)


def _update(config: TrainConfig, weights, opt_state, key, batch_all, probes_all=None):
    """One optimisation step on a batch drawn from the pool ``batch_all`` ([P, T] arrays; ``probes_all``: the
    pool's probe tables for the read term, or None)."""
    key_batch, key_budget, key_sample = jax.random.split(key, 3)
    indices = jax.random.choice(key_batch, batch_all.valid.shape[0], (config.batch,), replace=False)
    batch = jax.tree_util.tree_map(lambda leaf: leaf[indices], batch_all)
    probes = jax.tree_util.tree_map(lambda leaf: leaf[indices], probes_all)
    budgets = sample_budgets(key_budget, config.batch, config)
    grad_fn = jax.value_and_grad(functools.partial(_total_loss, config), has_aux=True)
    (_, (soft, exact)), grads = grad_fn(weights, batch, budgets, key_sample, probes)
    updates, opt_state = optimizer(config).update(grads, opt_state, weights)
    return optax.apply_updates(weights, updates), opt_state, jnp.stack([soft, exact])


# A short run (under QUICK_TRAINING_BELOW episode-steps: optimisation steps x batch x episode steps) compiles its step
# with XLA's backend optimisation off: sooner, and each step runs slower (docs/performance.md, "Compiling for small
# work"). Its float rounding differs from the full build's, so the build is a function of the config alone: a config
# always trains the same weights (runs of different lengths differ anyway: the learning rate follows the length).
_update_full, _update_quick = programs.full_and_quick(_update, static_argnums=0)
QUICK_TRAINING_BELOW = 100_000


def _update_program(config: TrainConfig):
    work = config.steps * config.batch * config.episode_steps
    return _update_quick if work < QUICK_TRAINING_BELOW else _update_full


def train(
    config: TrainConfig = TrainConfig(), pool: EncodedEpisodes | None = None, log: Callable[[str], None] | None = None
) -> tuple[dict, list[dict]]:
    """Train a gate. Returns ``(weights, history)``; history has one dict per logged step
    (``step``; ``soft_loss`` = 1 - mean soft F1 and ``exact_loss`` = 1 - mean exact F1 of the hard
    greedy gate (afford threshold 0) on the batches, both averaged over the steps since the last log;
    ``seconds`` since the start)."""
    started = time.perf_counter()
    pool = training_episodes(config) if pool is None else pool
    batch_all = pool.batch(config.track)
    probes_all = None
    if config.read_weight or config.credit_weight:  # the pool's generated probes, scored by the default retriever
        from wpbjax.episodes.probes import ProbeConfig, with_default_probes
        from wpbjax.learn.soft_reads import probe_tables

        shares = ProbeConfig(multi_fact_rate=config.read_multi_fact_rate, history_rate=config.read_history_rate)
        probed = with_default_probes(pool, shares)
        probes_all = {name: jnp.asarray(value) for name, value in probe_tables(probed, config.track).items()}
    tx = optimizer(config)
    key = jax.random.key(config.seed)
    key, init_key = jax.random.split(key)
    weights = init_gate(init_key, config.hidden)
    opt_state = tx.init(weights)

    history, recent, update = [], [], _update_program(config)
    for step in range(1, config.steps + 1):
        key, step_key = jax.random.split(key)
        weights, opt_state, losses = update(_static(config), weights, opt_state, step_key, batch_all, probes_all)
        recent.append(losses)
        if step % config.log_every == 0 or step == config.steps:
            soft, hard = np.mean(jax.device_get(recent), axis=0).tolist()
            recent = []
            seconds = time.perf_counter() - started
            history.append(
                {"step": step, "soft_loss": round(soft, 5), "exact_loss": round(hard, 5), "seconds": round(seconds, 2)}
            )
            if log is not None:
                log(
                    f"wpbjax train: step {step}/{config.steps} soft loss {soft:.4f} exact loss {hard:.4f} "
                    f"({seconds:.0f} s)"
                )
    return jax.device_get(weights), history
