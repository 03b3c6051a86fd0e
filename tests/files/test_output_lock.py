"""One live sweep per output (:mod:`wpbjax.files.output_lock`): a second run on the same ``--out`` is refused
in one line naming the first's pid (``--resume`` too), a dead run's lock file is taken over, and
the table of two racing commands is the table of a lone run."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from wpbjax.cli import main
from wpbjax.files import resume as resume_lib
from wpbjax.files.output_lock import lock_path, output_lock

# 8 episodes under a 64K memory cap: several chunks, so a run can be caught between two of them
SWEEP = [
    "sweep",
    "--n-episodes",
    "8",
    "--modes",
    "default",
    "--steps",
    "20",
    "--budgets",
    "1024,4096",
    "--policies",
    "no_mem,fifo_store_all",
    "--tracks",
    "unprivileged",
    "--memory-cap",
    "64K",
    "--quiet",
]


@pytest.fixture(scope="module")
def lone(tmp_path_factory):
    """The table of a run with the output to itself."""
    out = tmp_path_factory.mktemp("lone") / "r.csv"
    assert main([*SWEEP, "--out", str(out)]) == 0
    return out.read_bytes()


def test_a_live_lock_refuses_and_a_dead_one_is_taken_over(tmp_path, capsys, lone):
    out = tmp_path / "r.csv"
    with output_lock(out):
        for extra in ([], ["--resume"]):
            assert main([*SWEEP, "--out", str(out), *extra]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"another wpbjax run (pid {os.getpid()}) is writing it" in err, err
    assert os.listdir(tmp_path) == []
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(lock_path(out), "w") as handle:  # what a run killed with -9 leaves
        handle.write(f"{dead.pid}\n")
    assert main([*SWEEP, "--out", str(out)]) == 0
    assert out.read_bytes() == lone
    assert sorted(os.listdir(tmp_path)) == ["r.csv", "r.csv.meta.json"]


def _chunks_on_disk(out) -> int:
    try:
        with open(resume_lib.manifest_path(out)) as handle:
            return json.load(handle)["chunks"]
    except (OSError, ValueError, KeyError):
        return 0


def test_two_processes_on_one_output(tmp_path):
    """The first is stopped (SIGSTOP) after its first chunk, so the second surely starts while it is
    alive: refused in one line, resuming or not; the first then finishes the table a lone run writes
    (a lone process like it: the rows' order follows the chunks, and so the process's device count, which
    in this process depends on the tests that ran before)."""
    out = tmp_path / "r.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "wpbjax.cli", *SWEEP, "--out", str(out)]
    lone_out = tmp_path / "lone" / "r.csv"
    lone_out.parent.mkdir()
    subprocess.run([*command[:-1], str(lone_out)], env=env, check=True, timeout=120)
    lone = lone_out.read_bytes()
    first = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while _chunks_on_disk(out) < 1 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        first.send_signal(signal.SIGSTOP)
        assert first.poll() is None and _chunks_on_disk(out) >= 1, "the first run ended before it could be caught"
        assert pathlib.Path(lock_path(out)).read_text().strip() == str(first.pid)
        for extra in ([], ["--resume"]):
            second = subprocess.run(
                [*command, *extra], env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert second.returncode == 2, second.stderr
            assert second.stderr.count("\n") == 1 and f"another wpbjax run (pid {first.pid})" in second.stderr
        first.send_signal(signal.SIGCONT)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
    finally:
        first.send_signal(signal.SIGCONT)
        first.kill()
    assert out.read_bytes() == lone
    assert sorted(os.listdir(tmp_path)) == ["lone", "r.csv", "r.csv.meta.json"]
