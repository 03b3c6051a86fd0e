"""Results files: the streamed table writer, the reader and the sidecar, written atomically.

A sweep's table goes to a temporary file beside its destination (``results.csv.partial``), one
chunk at a time; :meth:`ResultsWriter.commit` closes it, writes the sidecar (``results.csv.meta.json``,
recording the row count and the table's SHA-256) to its own temporary file, and renames both into
place. Until then an existing results file and sidecar are untouched, byte for byte: a sweep that
fails or is killed never leaves a partial table under the results' name. ``os.replace`` is atomic
within one directory, which is why the temporary files live beside their destinations.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os

import numpy as np
import pandas as pd

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.files.atomic import atomic_file, destination, same_file, temporary_name

RESULT_SUFFIXES = (".csv", ".parquet")
PARTIAL_SUFFIX = ".partial"  # results.csv -> results.csv.partial while the sweep runs
SIDECAR_SUFFIX = ".meta.json"
SIDECAR_SCHEMA = "wpbjax.run-metadata/1"


def sidecar_path(results_path: str | os.PathLike) -> str:
    """``results.csv`` -> ``results.csv.meta.json``."""
    return os.fspath(results_path) + SIDECAR_SUFFIX


def partial_path(path: str | os.PathLike) -> str:
    """The temporary file a result or sidecar is written to before it is renamed to ``path``."""
    return os.fspath(path) + PARTIAL_SUFFIX


def results_format(path: str | os.PathLike, what: str = "file name") -> str:
    """``"csv"`` or ``"parquet"`` from ``path``'s extension, else a ValueError naming the file."""
    path = os.fspath(path)
    for suffix in RESULT_SUFFIXES:
        if path.endswith(suffix):
            return suffix[1:]
    raise ValueError(f"{path}: expected a .csv or .parquet {what}")


def sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    return _file_digest(path).hexdigest()


def _file_digest(path: str | os.PathLike):
    """A running ``hashlib.sha256`` of a file's bytes (more may be added)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest


def check_output(path: str | os.PathLike, inputs=(), command: str = "sweep") -> str:
    """Check, without touching anything, that a sweep may write ``path`` (and its sidecar): a .csv or
    .parquet name in an existing, writable directory that names none of ``inputs`` (episode files),
    nor does its sidecar or their temporary files. Returns the path as a string."""
    path = os.fspath(path)
    results_format(path)
    directory = os.path.dirname(os.path.abspath(destination(path)))
    if not os.path.isdir(directory):
        raise ValueError(f"{path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: directory {directory} is not writable")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory")
    ours = [path, sidecar_path(path), partial_path(destination(path))]
    for source in map(os.fspath, inputs):
        for target in ours:
            if same_file(source, target):
                raise ValueError(
                    f"{target} would overwrite {source}, an input of this {command}; choose another results file"
                )
    return path


def _csv_text(table, header: bool) -> list:
    """``table`` (a pyarrow Table) as CSV text, quoted where needed, the header first if ``header``:
    [buffers] for :meth:`ResultsWriter._write_text`."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink, write_options=pcsv.WriteOptions(quoting_style="needed", include_header=header))
    return [sink.getvalue()]


def use_jemalloc() -> bool:
    """Make Arrow's jemalloc pool this process's default where pyarrow has it (True if so). A sweep
    makes each chunk's CSV text and tables anew: Arrow's default pool (mimalloc) hands freed pages
    back to the system at once, so every chunk clears fresh ones again, where jemalloc keeps them a
    while for reuse, which saves kernel and wall time on large sweeps (docs/performance.md).
    A process-wide setting: the CLI makes it, a library caller may."""
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a build without jemalloc (ArrowNotImplementedError is one)
        return False
    return True


def csv_rows(table):
    """``table`` (a pyarrow Table) as CSV text without a header, one row per value of a pyarrow
    ``large_binary`` array (each with its line end; the same bytes a whole-table write gives the
    row), so that rows made apart can be put in order by ``take``; None where a value spans lines
    (a quoted line break: rows are then not lines)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink, write_options=pcsv.WriteOptions(quoting_style="needed", include_header=False))
    text = sink.getvalue()
    ends = np.flatnonzero(np.frombuffer(text, np.uint8) == ord("\n")) + 1
    if len(ends) != table.num_rows:
        return None
    offsets = np.concatenate([[0], ends]).astype(np.int64)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), table.num_rows, [None, pa.py_buffer(offsets), text])


class ResultsWriter:
    """Streams result chunks to ``.csv`` or ``.parquet`` (by ``path``'s extension) through pyarrow
    (faster than pandas for CSV: docs/performance.md, "Figures behind choices in the code"; floats
    round-trip exactly, an integral float is written
    without its ".0"), into ``path``'s temporary file; :meth:`commit` puts table and sidecar in place,
    :meth:`abort` (or leaving a ``with`` block on an error) removes the temporary file.

    Chunks are written in the order given; ``rows`` counts them. Nothing touches ``path`` (or an
    existing temporary file) before the first :meth:`write`. A ``path`` that is a symbolic link is
    written through (its target replaced; the temporary file beside the target).
    """

    def __init__(self, path: str | os.PathLike, append_at: int | None = None):
        """``append_at``: continue an interrupted run's temporary CSV, cut back to its first
        ``append_at`` bytes (the header and whole chunks; see :mod:`wpbjax.files.resume`)."""
        self.path = os.fspath(path)
        self.format = results_format(self.path)
        self.temporary = partial_path(destination(self.path))
        if append_at is not None and self.format != "csv":
            raise ArgumentError(f"{arg('resume')}: {self.path}: only .csv results can be resumed")
        self.append_at = append_at
        self.rows, self.chunks, self._writer, self._sink, self._opened = 0, 0, None, None, False
        self._sidecar_temporary = None
        self._digest = None  # the CSV table's running SHA-256

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is not None:
            self.abort()

    def write(self, table: pd.DataFrame) -> None:
        """Append one chunk of rows (every chunk with the same columns)."""
        import pyarrow as pa

        batch = pa.Table.from_pandas(table, preserve_index=False)
        if self.format == "parquet":
            if self._writer is None:
                import pyarrow.parquet as pq

                self._opened = True
                self._writer = pq.ParquetWriter(self.temporary, batch.schema)
            self._writer.write_table(batch)
        else:
            self._write_text(_csv_text(batch, self._header_due()))
        self.rows += len(table)
        self.chunks += 1

    def write_csv_rows(self, rows, schema) -> None:
        """Append one chunk of rows already made CSV text (a .csv writer): ``rows`` a pyarrow binary
        array of one row's line each (:func:`csv_rows`, then put in order), ``schema`` the table's
        (its column names make the header)."""
        import pyarrow as pa

        if self.format != "csv":
            raise ValueError(f"{self.path}: CSV rows go to a .csv file")
        texts = _csv_text(pa.Table.from_batches([], schema), True) if self._header_due() else []
        offsets = np.frombuffer(rows.buffers()[1], np.int64, len(rows) + 1, rows.offset * 8)
        data = rows.buffers()[2]
        self._write_text(texts + [data[int(offsets[0]) : int(offsets[-1])]] if len(rows) else texts)
        self.rows += len(rows)
        self.chunks += 1

    def _header_due(self) -> bool:
        """Whether the next CSV text starts the file (so it begins with the header)."""
        return self._sink is None and self.append_at is None

    def _write_text(self, texts: list) -> None:
        """Append CSV text (buffers, in order) to the temporary file, opened (or cut back to
        ``append_at`` and reopened) at the first call; the running checksum follows."""
        import pyarrow as pa

        if self._sink is None:
            self._opened = True
            if self.append_at is not None:
                os.truncate(self.temporary, self.append_at)  # drop a chunk cut off by the kill
            # our own sink, so that each chunk reaches the file (and ``size``) when written
            self._sink = pa.OSFile(self.temporary, "ab" if self.append_at is not None else "wb")
            # the table's SHA-256 as it is written (on this thread, not at commit: the sweep's tail)
            self._digest = hashlib.sha256() if self.append_at is None else _file_digest(self.temporary)
        # the checksum on a thread of its own while the bytes go to the file (both leave the GIL)
        with concurrent.futures.ThreadPoolExecutor(1) as beside:
            hashed = beside.submit(lambda: [self._digest.update(text) for text in texts])
            for text in texts:
                self._sink.write(text)
            hashed.result()

    @property
    def size(self) -> int:
        """Bytes in the temporary file so far (every written chunk included)."""
        return os.path.getsize(self.temporary)

    def close(self) -> None:
        """Close the temporary file (idempotent)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def commit(self, meta: dict | None = None) -> str:
        """Finish: close the table, write the sidecar (``meta`` + ``rows`` and ``results`` = {file,
        format, rows, sha256}) and rename both into place. Returns the sidecar's path."""
        if not self._opened and self.append_at is not None:  # resumed with every chunk on disk
            os.truncate(self.temporary, self.append_at)
            self._opened = True
        if not self._opened:
            raise ValueError(f"{self.path}: no rows were written")
        self.close()
        meta = dict(meta or {}, schema=SIDECAR_SCHEMA, rows=self.rows)
        meta["results"] = {
            "file": os.path.basename(self.path),
            "format": self.format,
            "rows": self.rows,
            "sha256": sha256(self.temporary) if self._digest is None else self._digest.hexdigest(),
        }
        sidecar = sidecar_path(self.path)
        self._sidecar_temporary = temporary_name(destination(sidecar))
        _write_json(self._sidecar_temporary, meta)
        # results first, then its sidecar: a crash between the two leaves a sidecar whose checksum
        # does not match the table, which a reader detects
        os.replace(self.temporary, destination(self.path))
        os.replace(self._sidecar_temporary, destination(sidecar))
        return sidecar

    def abort(self) -> None:
        """Drop the temporary file (the destination was never touched)."""
        try:
            self.close()
        finally:
            if self._opened:
                for path in (self.temporary, self._sidecar_temporary):
                    if path is None:
                        continue
                    try:
                        os.remove(path)
                    except FileNotFoundError:
                        pass


def write_table(table: pd.DataFrame, path: str | os.PathLike, meta: dict) -> None:
    """``table`` and its sidecar (``meta`` + rows, sha256), renamed into place only once complete, as a
    sweep writes results (:class:`ResultsWriter`): a killed run leaves no table."""
    with ResultsWriter(path) as writer:
        writer.write(table)
        writer.commit(meta)


def _write_json(path: str, value: dict) -> None:
    with open(path, "w") as handle:
        _dump_json(handle, value)


def _dump_json(handle, value: dict) -> None:
    json.dump(value, handle, indent=2, sort_keys=False, default=_jsonable)
    handle.write("\n")


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) or hasattr(value, "tolist"):
        return np.asarray(value).tolist()
    return str(value)


def write_sidecar(results_path: str | os.PathLike, meta: dict) -> str:
    """Write ``meta`` as ``results_path``'s sidecar (through a temporary file and a rename)."""
    path = sidecar_path(results_path)
    with atomic_file(path, "w") as handle:
        _dump_json(handle, dict(meta, schema=meta.get("schema", SIDECAR_SCHEMA)))
    return path


def read_sidecar(path: str | os.PathLike) -> dict:
    """A run-metadata sidecar, checked to be one (ValueError naming the file otherwise)."""
    try:
        with open(path) as handle:
            meta = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise ValueError(f"{path}: not a JSON run-metadata file ({err})") from None
    if not isinstance(meta, dict) or meta.get("schema") != SIDECAR_SCHEMA:
        raise ValueError(f"{path}: not a wpbjax run-metadata file (expected schema {SIDECAR_SCHEMA!r})")
    return meta


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """A results table from ``.csv`` or ``.parquet`` as the writer wrote it (the ``mode`` column as
    text, empty cells as NaN). Not checked: see :func:`wpbjax.reports.load_results`."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such results file")
    try:
        if results_format(path) == "parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"mode": str})
    except (ValueError, TypeError) as err:  # empty, cut, not a table (pandas and pyarrow name no file)
        raise ValueError(f"{path}: not a readable results table ({' '.join(str(err).split())})") from None
