"""Names of the package track (no heavy imports: the CLI builds its parser from these)."""

STRESS = (
    "density_trap",
    "update_chain",
    "scope_shift",
    "summary_tradeoff",
    "redundancy_heavy",
    "temporal_interval",
    "abstention_hard",
)
DISTRIBUTIONS = ("memaudit_small",) + STRESS

EXACT = ("opt", "no_tombstone_opt")
STREAMING = ("oracle_gvt", "density_only", "recency_raw", "reservoir_raw", "no_tombstone_gvt")
OFFLINE = ("greedy", "fact_only", "summary_only", "no_tombstone_greedy")
WRITERS = STREAMING + OFFLINE
METHODS = EXACT + WRITERS
LEARNED_PREFIX = "learned:"  # method learned:PATH runs a writer trained by `wpbjax packages train`
# The eight methods of the paper's base-sweep figure.
PAPER_METHODS = (
    "opt",
    "oracle_gvt",
    "greedy",
    "density_only",
    "recency_raw",
    "fact_only",
    "summary_only",
    "no_tombstone_opt",
)
