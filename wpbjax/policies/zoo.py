"""The policy zoo: the spec's baselines and the write-policy literature's, beside the published seven.

Seventeen names (docs/policies.md): always_write, never_write, uniform_sample, priority_threshold,
recency, utility_greedy, random, epsilon_greedy, bandit_ucb, merge_aggressive, expire_oldest,
oracle_optimal, dedupe_gate, memorybank_decay, token_bucket, deferred_batch, novelty_gate.
uniform_sample, priority_threshold and merge_aggressive are the published policies (reference.py).
"""
from __future__ import annotations

from wpbjax.policies import feedback, hindsight, literature, spec
from wpbjax.policies.base import Policy
from wpbjax.policies.common import RECENCY_KINDS
from wpbjax.policies.reference import UNPRIVILEGED, WRITES

FEEDBACK_ONLY, ORACLE_ONLY = ("feedback",), ("oracle",)

ZOO_POLICIES = (
    Policy("always_write", spec.always_write_act, UNPRIVILEGED, kinds=WRITES,
           doc="writes every step; the store rejects what does not fit"),
    Policy("never_write", spec.never_write_act, UNPRIVILEGED, kinds=frozenset(), doc="never writes"),
    Policy("recency", spec.recency_act, UNPRIVILEGED, init=spec.recency_init, multi_action=True, kinds=RECENCY_KINDS,
           doc="expires the oldest items until the write fits, then writes (the spec's RecencyBias)"),
    Policy("random", spec.random_act, UNPRIVILEGED, {"p": 0.2}, init=spec.random_init, kinds=WRITES,
           doc="writes with probability p (per-episode PRNG key); the store rejects what does not fit"),
    Policy("expire_oldest", spec.expire_oldest_act, UNPRIVILEGED, {"max_age": 50}, multi_action=True,
           kinds=spec.EXPIRE_OLDEST_KINDS, doc="expires items older than max_age steps, then writes if it fits"),
    Policy("epsilon_greedy", feedback.epsilon_greedy_act, FEEDBACK_ONLY, {"epsilon": 0.1},
           init=feedback.epsilon_greedy_init, multi_action=True, kinds=RECENCY_KINDS,
           doc="per step-type utility estimates from revealed utility; explores with probability epsilon"),
    Policy("bandit_ucb", feedback.bandit_ucb_act, FEEDBACK_ONLY, {"c": 1.0}, init=feedback.bandit_ucb_init,
           multi_action=True, kinds=RECENCY_KINDS, doc="per step-type UCB on revealed utility; recency eviction"),
    Policy("utility_greedy", hindsight.utility_greedy_act, ORACLE_ONLY, init=hindsight.utility_greedy_init,
           multi_action=True, kinds=frozenset({"write", "expire"}),
           doc="priority_greedy on the hidden utility (cheating reference)"),
    Policy("oracle_optimal", hindsight.oracle_optimal_act, ORACLE_ONLY, kinds=WRITES, plan=hindsight.oracle_optimal_plan,
           doc="writes an exact knapsack solution chosen in hindsight (regret 0)"),
    Policy("dedupe_gate", literature.dedupe_gate_act, UNPRIVILEGED, init=literature.dedupe_gate_init,
           multi_action=True, kinds=RECENCY_KINDS,
           doc="skips exact repeats of the latest stored item of the same api; else recency"),
    Policy("memorybank_decay", literature.memorybank_decay_act, UNPRIVILEGED, {"strength0": 10.0, "growth": 10.0},
           init=literature.memorybank_init, multi_action=True, kinds=frozenset({"write", "expire"}),
           doc="writes every step; evicts the lowest retention exp(-age/S), S growing on recall"),
    Policy("token_bucket", literature.token_bucket_act, UNPRIVILEGED, {"rate": 0.25, "burst": 4.0},
           init=literature.token_bucket_init, multi_action=True, kinds=RECENCY_KINDS,
           doc="admits steps at most at `rate` per step with bursts of `burst`; recency eviction"),
    Policy("deferred_batch", literature.deferred_batch_act, UNPRIVILEGED, {"window": 10},
           init=literature.deferred_init, multi_action=True, kinds=frozenset({"write_past"}),
           doc="at each window's end writes the best-scoring buffered steps that fit"),
    Policy("novelty_gate", literature.novelty_gate_act, UNPRIVILEGED, init=literature.novelty_gate_init,
           multi_action=True, kinds=RECENCY_KINDS, doc="writes steps whose api was not seen before; recency eviction"),
)

SPEC_NAMES = ("always_write", "never_write", "uniform_sample", "priority_threshold", "recency", "utility_greedy",
              "random", "epsilon_greedy", "bandit_ucb", "merge_aggressive", "expire_oldest", "oracle_optimal")
LITERATURE_NAMES = ("dedupe_gate", "memorybank_decay", "token_bucket", "deferred_batch", "novelty_gate")
ZOO_NAMES = SPEC_NAMES + LITERATURE_NAMES
