"""The policy zoo: the spec's baselines and the write-policy literature's, beside the published seven.

Nineteen names (docs/policies.md, docs/integrity.md): always_write, never_write, uniform_sample, priority_threshold,
recency, utility_greedy, random, epsilon_greedy, bandit_ucb, merge_aggressive, expire_oldest,
oracle_optimal, dedupe_gate, memorybank_decay, token_bucket, deferred_batch, novelty_gate, supersede,
version_journal.
uniform_sample, priority_threshold and merge_aggressive are the published policies (published.py).
Each policy's record stands beside its ``act`` in its family's module; this module lists them.
"""
from __future__ import annotations

from wpbjax.policies import feedback, hindsight, history, literature, spec
from wpbjax.policies.common import FEEDBACK_ONLY, ORACLE_ONLY  # noqa: F401 (old import path)

ZOO_POLICIES = (spec.ALWAYS_WRITE, spec.NEVER_WRITE, spec.RECENCY, spec.RANDOM, spec.EXPIRE_OLDEST, feedback.EPSILON_GREEDY,
                feedback.BANDIT_UCB, hindsight.UTILITY_GREEDY, hindsight.ORACLE_OPTIMAL, literature.DEDUPE_GATE,
                literature.MEMORYBANK_DECAY, literature.TOKEN_BUCKET, literature.DEFERRED_BATCH, literature.NOVELTY_GATE,
                history.SUPERSEDE, history.VERSION_JOURNAL)

SPEC_NAMES = ("always_write", "never_write", "uniform_sample", "priority_threshold", "recency", "utility_greedy",
              "random", "epsilon_greedy", "bandit_ucb", "merge_aggressive", "expire_oldest", "oracle_optimal")
LITERATURE_NAMES = ("dedupe_gate", "memorybank_decay", "token_bucket", "deferred_batch", "novelty_gate")
HISTORY_NAMES = ("supersede", "version_journal")  # write integrity (policies/history.py, docs/integrity.md)
ZOO_NAMES = SPEC_NAMES + LITERATURE_NAMES + HISTORY_NAMES
