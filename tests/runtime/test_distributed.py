"""Several processes on JAX's own runtime (wpbjax.runtime.distributed): two processes on localhost, joined by
jax.distributed over gloo, write the same bytes as one process."""

import os
import socket
import subprocess
import sys

import pytest

from tests.conftest import REPO
from wpbjax.runtime.distributed import Cluster, resolve

# 2 modes x 3 episodes, 2 budgets, no_mem on 2 tracks and priority_greedy on one (3 runs per episode and budget); a 64K
# memory cap makes chunks of one episode per device, so several chunks are split and gathered.
SWEEP = [
    "sweep",
    "--n-episodes",
    "3",
    "--modes",
    "default,redundancy",
    "--steps",
    "40",
    "--budgets",
    "1024,4096",
    "--policies",
    "no_mem,priority_greedy",
    "--memory-cap",
    "64K",
    "--quiet",
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wpbjax(args, **kwargs) -> subprocess.Popen:
    # the same devices in every process (chunks, and so row order, follow the device count; alone, a
    # sweep this small would start on one core)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "WPBJAX_CACHE_DIR": "",
        "WPBJAX_DISTRIBUTED_TIMEOUT": "60",
        "JAX_NUM_CPU_DEVICES": "2",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "wpbjax.cli", *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_two_processes_write_the_rows_of_one(tmp_path):
    one = _wpbjax(SWEEP + ["--out", str(tmp_path / "one.csv")])
    port = _free_port()
    processes = [
        _wpbjax(
            SWEEP
            + [
                "--out",
                str(tmp_path / f"two{rank}.csv"),
                "--coordinator",
                f"127.0.0.1:{port}",
                "--num-processes",
                "2",
                "--process-id",
                str(rank),
            ]
        )
        for rank in (0, 1)
    ]
    for process in [one] + processes:
        _, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
    single = (tmp_path / "one.csv").read_bytes()
    assert single.count(b"\n") == 1 + 6 * 2 * 3
    assert (tmp_path / "two0.csv").read_bytes() == single
    assert not (tmp_path / "two1.csv").exists()  # only process 0 writes
    assert (tmp_path / "two0.csv.meta.json").exists()


def test_shares_cover_a_chunk_in_order():
    episodes = list(range(7))
    shares = [Cluster(rank, 3).share(episodes).tolist() for rank in range(3)]
    assert shares == [[0, 1, 2], [3, 4], [5, 6]]
    assert Cluster(0, 3).share_size(7, 2) == 4  # the largest share, a multiple of the device count
    assert Cluster(1, 4).share([0, 1]).tolist() == [1] and Cluster(3, 4).share([0, 1]).tolist() == []


def test_resolve_from_flags_and_environment(monkeypatch):
    for name in (
        "JAX_COORDINATOR_ADDRESS",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "SLURM_STEP_NUM_TASKS",
        "OMPI_COMM_WORLD_SIZE",
    ):
        monkeypatch.delenv(name, raising=False)
    assert resolve(None, None, None) is None
    assert resolve("10.0.0.1:1234", 4, 3) == {
        "coordinator_address": "10.0.0.1:1234",
        "num_processes": 4,
        "process_id": 3,
    }
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "node1:5000")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("JAX_PROCESS_ID", "1")
    assert resolve(None, None, None) == {"coordinator_address": "node1:5000", "num_processes": 2, "process_id": 1}
    for name in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "8")  # a task of `srun -n 8`: JAX's SLURM detection
    assert resolve(None, None, None) == {}
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "1")
    assert resolve(None, None, None) is None


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--coordinator", "127.0.0.1:9"], "--num-processes, --process-id: needed with --coordinator"),
        (["--coordinator", "nohost", "--num-processes", "2", "--process-id", "0"], "--coordinator: expected HOST:PORT"),
        (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"], "--process-id: expected 0..1"),
    ],
)
def test_bad_distributed_flags_are_one_line(flags, message, tmp_path, capsys):
    from wpbjax.cli import main

    assert main(["sweep", "--n-episodes", "1", "--out", str(tmp_path / "r.csv"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
