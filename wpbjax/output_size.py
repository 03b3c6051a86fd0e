"""The size of a sweep's results file, known before any run: a grid whose table would not fit the
free space beside the output file is refused up front, with its size (rather than failing hours later
on a full disk, or, for a huge param grid, building its points first)."""
from __future__ import annotations

import os
import shutil

from wpbjax.argument_errors import ArgumentError, arg
from wpbjax.arguments import _size as human  # 1,234.5 MiB

# Bytes per row of the results table, measured on our sweeps (CSV: 174 for the published columns,
# 44,000 rows; each param_NAME column adds up to ~20); parquet compresses to about a third.
CSV_BYTES_PER_ROW = 175
PARQUET_BYTES_PER_ROW = 60
PARAM_COLUMN_BYTES = 20


def table_bytes(n_rows: int, n_param_columns: int, path: str) -> int:
    """About how many bytes ``n_rows`` rows take in ``path``'s format."""
    per_row = PARQUET_BYTES_PER_ROW if os.fspath(path).endswith(".parquet") else CSV_BYTES_PER_ROW
    return n_rows * (per_row + PARAM_COLUMN_BYTES * n_param_columns)


def check_disk_space(out: str, n_rows: int, n_param_columns: int = 0, free: int | None = None) -> None:
    """Raise an ArgumentError (naming ``out``, the row count and both sizes) if the table would not
    fit the free space of ``out``'s directory."""
    directory = os.path.dirname(os.path.abspath(out))
    free = shutil.disk_usage(directory).free if free is None else free
    needed = table_bytes(n_rows, n_param_columns, out)
    if needed > free:
        raise ArgumentError(f"{arg('out')} {out}: the sweep's {n_rows:,} rows need about {human(needed)}, more than "
                            f"the {human(free)} free in {directory}; sweep a smaller grid (fewer episodes, budgets, "
                            f"policies or {arg('params')} values) or write elsewhere")
