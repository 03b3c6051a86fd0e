"""Sweeps: episodes × budgets × tracks × policies → one results table (the published columns).

:mod:`wpbjax.sweeps.plan` checks a sweep's arguments once and cuts its episodes into memory-capped
chunks of one padded shape (so each policy compiles once); :mod:`wpbjax.sweeps.run` runs a plan
chunk by chunk, sharded over the local devices. Scoring and the table's columns live in
:mod:`wpbjax.scoring.rows`, results files in :mod:`wpbjax.files.results_io`.

A sweep's settings are the typed configs of :mod:`wpbjax.sweeps.config`; the public entry point is
:func:`wpbjax.api.sweep` (``wj.sweep``).
"""

from wpbjax.common.budgets import PAPER_BUDGETS, check_budgets
from wpbjax.files.results_io import ResultsWriter
from wpbjax.scoring.rows import (
    COLUMNS,
    CONFUSION_COLUMNS,
    PUBLISHED_COLUMNS,
    confusion_counts,
    leaderboard,
    leaderboard_from_sums,
    leaderboard_sums,
)
from wpbjax.sweeps.plan import (
    BYTES_PER_EPISODE_STEP,
    BYTES_PER_RUN_STEP,
    DEFAULT_MEMORY_CAP,
    DEFAULT_TRACKS,
    PUBLISHED_LINEUP,
    RUNS_PER_CALL,
    Chunk,
    Layout,
    SweepPlan,
    check_params,
    check_sweep,
    chunk_size,
    grid_points,
    make_plan,
    param_grids,
    parse_param_values,
    points_per_slice,
    resolve_policies,
)
from wpbjax.sweeps.run import run_chunk, run_sweep, write_chunks

__all__ = [
    "PAPER_BUDGETS",
    "COLUMNS",
    "CONFUSION_COLUMNS",
    "PUBLISHED_COLUMNS",
    "DEFAULT_MEMORY_CAP",
    "DEFAULT_TRACKS",
    "PUBLISHED_LINEUP",
    "BYTES_PER_EPISODE_STEP",
    "BYTES_PER_RUN_STEP",
    "RUNS_PER_CALL",
    "Chunk",
    "Layout",
    "ResultsWriter",
    "SweepPlan",
    "check_budgets",
    "check_sweep",
    "chunk_size",
    "confusion_counts",
    "leaderboard",
    "leaderboard_from_sums",
    "leaderboard_sums",
    "check_params",
    "grid_points",
    "points_per_slice",
    "make_plan",
    "param_grids",
    "parse_param_values",
    "resolve_policies",
    "run_chunk",
    "run_sweep",
    "write_chunks",
]
