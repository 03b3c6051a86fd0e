"""The policy zoo: the spec's baselines and the write-policy literature's, beside the published seven.

Twenty names (docs/policies.md, docs/integrity.md, docs/reads.md): always_write, never_write, uniform_sample, priority_threshold,
recency, utility_greedy, random, epsilon_greedy, bandit_ucb, merge_aggressive, expire_oldest,
oracle_optimal, dedupe_gate, memorybank_decay, token_bucket, deferred_batch, novelty_gate, supersede,
version_journal, add_only.
uniform_sample, priority_threshold and merge_aggressive are the published policies (published.py).
Each policy's record stands beside its ``act`` in its family's module; this module lists them.
"""

from __future__ import annotations

import wpbjax.policies.feedback as feedback
import wpbjax.policies.hindsight as hindsight
import wpbjax.policies.history as history
import wpbjax.policies.literature as literature
import wpbjax.policies.spec as spec
import wpbjax.policies.versions as versions
from wpbjax.policies.common import FEEDBACK_ONLY, ORACLE_ONLY  # noqa: F401 (old import path)

ZOO_POLICIES = (
    spec.ALWAYS_WRITE,
    spec.NEVER_WRITE,
    spec.RECENCY,
    spec.RANDOM,
    spec.EXPIRE_OLDEST,
    feedback.EPSILON_GREEDY,
    feedback.BANDIT_UCB,
    hindsight.UTILITY_GREEDY,
    hindsight.ORACLE_OPTIMAL,
    literature.DEDUPE_GATE,
    literature.MEMORYBANK_DECAY,
    literature.TOKEN_BUCKET,
    literature.DEFERRED_BATCH,
    literature.NOVELTY_GATE,
    history.SUPERSEDE,
    history.VERSION_JOURNAL,
    versions.ADD_ONLY,
)

SPEC_NAMES = (
    "always_write",
    "never_write",
    "uniform_sample",
    "priority_threshold",
    "recency",
    "utility_greedy",
    "random",
    "epsilon_greedy",
    "bandit_ucb",
    "merge_aggressive",
    "expire_oldest",
    "oracle_optimal",
)
LITERATURE_NAMES = ("dedupe_gate", "memorybank_decay", "token_bucket", "deferred_batch", "novelty_gate")
HISTORY_NAMES = ("supersede", "version_journal")  # write integrity (policies/history.py, docs/integrity.md)
READS_NAMES = ("add_only",)  # the reads trade-off (policies/versions.py, docs/reads.md)
ZOO_NAMES = SPEC_NAMES + LITERATURE_NAMES + HISTORY_NAMES + READS_NAMES
