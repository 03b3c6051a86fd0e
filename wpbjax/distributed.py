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
        padded[:payload.size] = payload
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


def _launched_by_cluster() -> bool:
    """A task of a multi-task ``srun`` step or of ``mpirun``: JAX's detection fills in the rest."""
    return any((_env_int(name) or 1) > 1 for name in LAUNCHER_TASKS)


def resolve(coordinator: str | None, num_processes: int | None, process_id: int | None) -> dict | None:
    """The ``jax.distributed.initialize`` arguments from the flags, else ``$JAX_COORDINATOR_ADDRESS``
    / ``$JAX_NUM_PROCESSES`` / ``$JAX_PROCESS_ID``, else a cluster launcher's environment (SLURM,
    Open MPI: ``{}``, JAX detects them); None for a single process. Errors name the flag."""
    coordinator = coordinator or os.environ.get(ENV_COORDINATOR) or None
    num_processes = num_processes if num_processes is not None else _env_int(ENV_NUM_PROCESSES)
    process_id = process_id if process_id is not None else _env_int(ENV_PROCESS_ID)
    given = {"--coordinator": coordinator, "--num-processes": num_processes, "--process-id": process_id}
    if all(value is None for value in given.values()):
        return {} if _launched_by_cluster() else None
    missing = [flag for flag, value in given.items() if value is None]
    if missing:
        raise ValueError(f"{', '.join(missing)}: needed with {', '.join(f for f in given if f not in missing)} "
                         f"(give --coordinator HOST:PORT --num-processes N --process-id I)")
    host, sep, port = coordinator.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--coordinator: expected HOST:PORT, got {coordinator!r}")
    if num_processes < 1:
        raise ValueError(f"--num-processes: expected an integer >= 1, got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id: expected 0..{num_processes - 1} (--num-processes {num_processes}), got {process_id}")
    return {"coordinator_address": coordinator, "num_processes": num_processes, "process_id": process_id}


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> Cluster | None:
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
        raise ValueError(f"--coordinator: could not join {where}: {str(err).splitlines()[0]}") from None
    if jax.process_count() == 1:
        return None
    return Cluster(process_id=jax.process_index(), num_processes=jax.process_count())
