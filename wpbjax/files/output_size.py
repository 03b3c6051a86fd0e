"""The size of a sweep's results file, known before any run: a grid whose table would not fit the
free space beside the output file is refused up front, with its size (rather than failing hours later
on a full disk, or, for a huge param grid, building its points first)."""

from __future__ import annotations

import os
import shutil

from wpbjax.common.argument_errors import ArgumentError, arg

# Bytes per row of the results table: upper bounds of what our sweeps write with every read column filled
# (the larger, so that a grid passed as fitting fits), per param_NAME column, and in parquet
# (docs/performance.md, "Figures behind choices in the code"). tests/files/test_output_size.py writes real tables.
CSV_BYTES_PER_ROW = 320
PARQUET_BYTES_PER_ROW = 80
PARAM_COLUMN_BYTES = 20


def human_size(n_bytes: float) -> str:
    """``n_bytes`` for a reader: ``1,234.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024


def table_bytes(
    n_rows: int,
    n_param_columns: int,
    path: str,
    row_bytes: tuple[int, int] = (CSV_BYTES_PER_ROW, PARQUET_BYTES_PER_ROW),
) -> int:
    """About how many bytes ``n_rows`` rows take in ``path``'s format; ``row_bytes``: (CSV, parquet)
    bytes per row of the table (a sweep's results by default)."""
    per_row = row_bytes[1] if os.fspath(path).endswith(".parquet") else row_bytes[0]
    return n_rows * (per_row + PARAM_COLUMN_BYTES * n_param_columns)


def check_disk_space(
    out: str,
    n_rows: int,
    n_param_columns: int = 0,
    free: int | None = None,
    row_bytes: tuple[int, int] = (CSV_BYTES_PER_ROW, PARQUET_BYTES_PER_ROW),
    smaller: str | None = None,
) -> None:
    """Raise an ArgumentError (naming ``out``, the row count and both sizes) if the table would not
    fit the free space of ``out``'s directory. ``row_bytes`` as for :func:`table_bytes`; ``smaller``:
    how to sweep a smaller grid (default: a sweep's episodes, budgets, policies and params)."""
    directory = os.path.dirname(os.path.abspath(out))
    free = shutil.disk_usage(directory).free if free is None else free
    needed = table_bytes(n_rows, n_param_columns, out, row_bytes)
    smaller = smaller or f"fewer episodes, budgets, policies or {arg('params')} values"
    if needed > free:
        raise ArgumentError(
            f"{arg('out')} {out}: the sweep's {n_rows:,} rows need about {human_size(needed)}, more than "
            f"the {human_size(free)} free in {directory}; sweep a smaller grid ({smaller}) or write "
            "elsewhere"
        )
