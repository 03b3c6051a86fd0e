"""Byte budgets: the paper's grid and the one check every entry point applies."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PAPER_BUDGETS = (1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400, 262144, 1048576)


def check_budgets(budgets: Sequence[int]) -> np.ndarray:
    """``budgets`` as [B] int64, each a whole number of bytes in 1 .. 2^31-1 (int32 on device)."""
    budgets = np.asarray(budgets)
    if budgets.ndim != 1:
        raise ValueError(f"budgets must be a 1-D list of byte counts; got shape {budgets.shape}")
    if budgets.size == 0:
        raise ValueError("budgets: give at least one budget")
    if (
        budgets.dtype == object
        or not np.issubdtype(budgets.dtype, np.integer)
        or (budgets < 1).any()
        or (budgets >= 2**31).any()
    ):
        raise ValueError(f"budgets must be whole numbers of bytes between 1 and 2^31-1; got {budgets.tolist()}")
    return budgets.astype(np.int64)
