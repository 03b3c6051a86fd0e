"""The settings of ``wpbjax train`` (:class:`TrainConfig`), in a module of their own so that the
command line can show their defaults without importing the training code (and optax)."""

from __future__ import annotations

import dataclasses

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.learn.gate import GATE_TRACKS


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Defaults are what ``wpbjax train`` uses (about a minute of CPU on 2 cores)."""

    track: str = "unprivileged"
    seed: int = 0
    steps: int = 300  # optimisation steps
    batch: int = 64  # episodes (each with its own budget) per step
    pool_per_mode: int = 128  # training episodes per generator mode
    episode_steps: int = 200  # T of the training episodes
    hidden: int = 32  # MLP width
    learning_rate: float = 0.03  # peak; linear warm-up for 10% of the steps, then cosine decay
    log_every: int = 25  # metrics every k steps
    min_log2_budget: float = 10.0  # 1 KB
    max_log2_budget: float = 20.0  # 1 MB
    small_log2_budget: float = 12.0  # half of each batch's budgets lie in [1 KB, 4 KB]
    byte_temperature: float = 32.0  # softness of the soft store's budget edge, bytes
    weight_decay: float = 0.0  # adamw decay
    reinforce_weight: float = 0.0  # weight of the self-critical REINFORCE term (exact F1) in the loss
    hindsight_weight: float = 1.0  # weight of the afford head's hindsight cross-entropy
    member_weight: float = 5.0  # class weight of hindsight members (see wpbjax.learn.hindsight)
    calibration_per_mode: int = 64  # held-back episodes per mode to calibrate the afford threshold
    fidelity_weight: float = 0.0  # weight of 1 - soft update fidelity in the loss (docs/integrity.md)
    coverage_weight: float = 0.0  # weight of 1 - soft history coverage in the loss
    f1_weight: float = 1.0  # weight of 1 - soft F1 in the loss (0: a gate trained on reads alone)
    read_weight: float = 0.0  # weight of 1 - soft read accuracy (generated probes, below; docs/reads.md)
    read_top_k: int = 5  # K of the soft retrieval (wpbjax.learn.soft_reads)
    credit_weight: float = 0.0  # weight of 1 - soft read credit (the weighted share of each probe's facts right)
    # the training episodes' generated probes: shares asking several facts and histories (the generator's
    # defaults, wpbjax.episodes.probes.ProbeConfig; 0 and 0: the one-fact probes the first read gate was trained on)
    read_multi_fact_rate: float = 0.4
    read_history_rate: float = 0.1

    def __post_init__(self):
        if self.track not in GATE_TRACKS:
            raise ArgumentError(f"{arg('track')} must be one of {', '.join(GATE_TRACKS)}; got {self.track!r}")
        if self.pool_per_mode > 5_000 or self.calibration_per_mode > 5_000:
            raise ArgumentError(
                f"{arg('pool_per_mode')} and {arg('calibration_per_mode')} must be <= 5000 (seed blocks stay disjoint)"
            )
        for name in ("steps", "batch", "pool_per_mode", "episode_steps", "hidden", "log_every", "calibration_per_mode"):
            if getattr(self, name) < 1:
                raise ArgumentError(f"{arg(name)} must be >= 1; got {getattr(self, name)}")
        if self.batch > 4 * self.pool_per_mode:
            raise ArgumentError(
                f"{arg('batch')} ({self.batch}) cannot exceed the pool (4 modes x "
                f"{arg('pool_per_mode')} = {4 * self.pool_per_mode} episodes)"
            )
        if self.seed < 0:
            raise ArgumentError(f"{arg('seed')} must be >= 0; got {self.seed}")
        if not 1 <= self.read_top_k <= 50:
            raise ArgumentError(f"{arg('read_top_k')} must be within 1..50; got {self.read_top_k}")
        for name in ("read_multi_fact_rate", "read_history_rate"):
            if not 0 <= getattr(self, name) <= 1:  # NaN fails too
                raise ArgumentError(f"{arg(name)} must be within [0, 1]; got {getattr(self, name)}")
        for name in ("fidelity_weight", "coverage_weight", "f1_weight", "read_weight", "credit_weight"):
            if not 0 <= getattr(self, name) < float("inf"):  # NaN fails too
                raise ArgumentError(f"{arg(name)} must be a finite number >= 0; got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise ArgumentError(f"{arg('learning_rate')} must be > 0; got {self.learning_rate}")
