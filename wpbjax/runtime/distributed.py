"""Several processes (hosts) on JAX's own runtime: ``jax.distributed`` joins them, each sweeps its
share of every chunk's episodes, and process 0 gathers the rows and writes the one results file.

A chunk is planned exactly as one process would plan it; its episodes are split into contiguous
shares, one per process, each padded to one shape (so every process compiles each policy once).
The rows come back to process 0 through ``jax.experimental.multihost_utils.process_allgather`` (on
CPU over gloo collectives), as Arrow IPC bytes, and are put in the single-process order there.
Every episode's random key is folded from its own index, so the rows do not depend on the split:
the file is byte-identical to a one-process run with the same devices per process.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from wpbjax.common.argument_errors import ArgumentError, arg

ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"  # JAX reads this one itself too
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"
# Launchers whose environment JAX's cluster detection reads (jax._src.clusters): a task of an
# ``srun`` step with several tasks, or of ``mpirun``.
LAUNCHER_TASKS = ("SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE")
INIT_TIMEOUT_S = int(os.environ.get("WPBJAX_DISTRIBUTED_TIMEOUT", "300"))


@dataclasses.dataclass(frozen=True)
class Cluster:
    """This process's place among ``num_processes`` (``process_id`` 0 writes the results)."""

    process_id: int
    num_processes: int

    @property
    def writes(self) -> bool:
        return self.process_id == 0

    def share(self, episodes: np.ndarray) -> np.ndarray:
        """This process's contiguous share of a chunk's episode indices ([n] -> [~n/P])."""
        return np.array_split(episodes, self.num_processes)[self.process_id]

    def share_size(self, chunk_episodes: int, n_devices: int) -> int:
        """Episodes each process runs per chunk (its share, padded): the largest share, rounded up
        to a multiple of the local device count."""
        largest = -(-chunk_episodes // self.num_processes)
        return -(-largest // n_devices) * n_devices

    def broadcast(self, value: int) -> int:
        """Process 0's ``value`` on every process (a collective)."""
        from jax.experimental import multihost_utils

        return int(multihost_utils.broadcast_one_to_all(np.asarray(value, np.int64)))

    def gather(self, table: pd.DataFrame) -> pd.DataFrame | None:
        """Every process's rows of one chunk, concatenated in process order on process 0 (None on the
        others). Every process must call it once per chunk (a collective)."""
        from jax.experimental import multihost_utils

        payload = _to_bytes(table)
        sizes = multihost_utils.process_allgather(np.asarray([payload.size], np.int64))[:, 0]
        # one padded length per power of two, so that a sweep compiles the gather a few times at most
        padded = np.zeros(1 << max(int(sizes.max()) - 1, 1023).bit_length(), np.uint8)
        padded[: payload.size] = payload
        parts = multihost_utils.process_allgather(padded)
        if not self.writes:
            return None
        tables = [_from_bytes(part[:size]) for part, size in zip(parts, sizes) if size]
        return pd.concat(tables, ignore_index=True) if tables else table


def _to_bytes(table: pd.DataFrame) -> np.ndarray:
    """[bytes] uint8 Arrow IPC stream of ``table`` (empty for no rows); floats and strings exact."""
    if table is None or len(table) == 0:
        return np.zeros(0, np.uint8)
    import pyarrow as pa

    batch = pa.Table.from_pandas(table, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_table(batch)
    return np.frombuffer(sink.getvalue(), np.uint8)


def _from_bytes(payload: np.ndarray) -> pd.DataFrame:
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(payload.tobytes())).read_all().to_pandas()


def _env_int(name: str) -> int | None:
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"${name}: expected an integer, got {text!r}") from None


def _env_text(name: str) -> str | None:
    return os.environ.get(name) or None


def _setting(argument: str, value, variable: str, read) -> tuple:
    """(value, how an error names it): the argument's ``value`` (named by :func:`arg`), else the
    environment ``variable``'s (read by ``read``; named ``$VARIABLE``), else (None, the argument)."""
    if value is not None:
        return value, arg(argument)
    value = read(variable)
    return value, arg(argument) if value is None else f"${variable}"


def _launched_by_cluster() -> bool:
    """A task of a multi-task ``srun`` step or of ``mpirun``: JAX's detection fills in the rest."""
    return any((_env_int(name) or 1) > 1 for name in LAUNCHER_TASKS)


def resolve(coordinator: str | None, num_processes: int | None, process_id: int | None) -> dict | None:
    """The ``jax.distributed.initialize`` arguments from these, else ``$JAX_COORDINATOR_ADDRESS``
    / ``$JAX_NUM_PROCESSES`` / ``$JAX_PROCESS_ID``, else a cluster launcher's environment (SLURM,
    Open MPI: ``{}``, JAX detects them); None for a single process. An ArgumentError names where
    a bad value came from: the argument (``num_processes``; ``--num-processes`` from the CLI) or
    the environment variable."""
    given = {
        "coordinator": _setting("coordinator", coordinator or None, ENV_COORDINATOR, _env_text),
        "num_processes": _setting("num_processes", num_processes, ENV_NUM_PROCESSES, _env_int),
        "process_id": _setting("process_id", process_id, ENV_PROCESS_ID, _env_int),
    }
    if all(value is None for value, _ in given.values()):
        return {} if _launched_by_cluster() else None
    missing = [name for value, name in given.values() if value is None]
    if missing:
        present = ", ".join(name for value, name in given.values() if value is not None)
        raise ArgumentError(
            f"{', '.join(missing)}: needed with {present} (give all three: {arg('coordinator')} "
            f"HOST:PORT, {arg('num_processes')} N, {arg('process_id')} I)"
        )
    (coordinator, coordinator_at), (num_processes, num_processes_at), (process_id, process_id_at) = given.values()
    host, sep, port = coordinator.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ArgumentError(f"{coordinator_at}: expected HOST:PORT, got {coordinator!r}")
    if num_processes < 1:
        raise ArgumentError(f"{num_processes_at}: expected an integer >= 1, got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ArgumentError(
            f"{process_id_at}: expected 0..{num_processes - 1} ({num_processes_at} {num_processes}), got {process_id}"
        )
    return {"coordinator_address": coordinator, "num_processes": num_processes, "process_id": process_id}


def initialize(
    coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None
) -> Cluster | None:
    """Join the other processes (``jax.distributed.initialize``; call it before any JAX computation)
    and return this process's place, or None when run as a single process. CPU collectives go over
    gloo (the cross-process implementation JAX ships for CPU)."""
    arguments = resolve(coordinator, num_processes, process_id)
    if arguments is None or arguments.get("num_processes") == 1:
        return None
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(**arguments, initialization_timeout=INIT_TIMEOUT_S)
    except (RuntimeError, ValueError) as err:  # unreachable coordinator, timeout, bad detection
        where = arguments.get("coordinator_address", "the cluster's coordinator")
        raise ArgumentError(f"{arg('coordinator')}: could not join {where}: {str(err).splitlines()[0]}") from None
    if jax.process_count() == 1:
        return None
    return Cluster(process_id=jax.process_index(), num_processes=jax.process_count())
