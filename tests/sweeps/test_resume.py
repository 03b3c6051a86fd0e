"""``wpbjax sweep --resume``: SIGKILLed at several points of a multi-chunk sweep, resumed runs end
with the bytes of an uninterrupted run; a resume with other arguments is refused."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from wpbjax.cli.failures import flag
from wpbjax.common.argument_errors import ArgumentError
from wpbjax.files import resume as resume_lib
from wpbjax.files.results_io import partial_path

# 2 modes x 8 episodes at 40 steps; a 64K memory cap makes chunks of one episode per device (8 chunks
# on 2 devices), so the kills below land between and inside chunks
SWEEP = [
    "sweep",
    "--n-episodes",
    "8",
    "--modes",
    "default,redundancy",
    "--steps",
    "40",
    "--budgets",
    "1024,4096",
    "--policies",
    "no_mem,fifo_store_all",
    "--memory-cap",
    "64K",
    "--quiet",
]


def _env(cache) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "WPBJAX_CACHE_DIR": str(cache)}


def _chunks_on_disk(out) -> int:
    try:
        with open(resume_lib.manifest_path(out)) as handle:
            return json.load(handle)["chunks"]
    except (OSError, ValueError, KeyError):
        return -1  # no manifest (yet), or being replaced


def _sweep(out, env, extra=(), kill_after_chunks=None, kill_after_s=None) -> int:
    """Run the CLI; SIGKILL it once the manifest records ``kill_after_chunks`` chunks (or after
    ``kill_after_s`` seconds). Returns the exit status (-9 when killed)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "wpbjax.cli", *SWEEP, "--out", str(out), *extra],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    while process.poll() is None and (kill_after_chunks is not None or kill_after_s is not None):
        if (kill_after_chunks is not None and _chunks_on_disk(out) >= kill_after_chunks) or (
            kill_after_s is not None and time.monotonic() - started >= kill_after_s
        ):
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    _, err = process.communicate(timeout=300)
    assert process.returncode in (0, -signal.SIGKILL), err
    return process.returncode


def test_killed_sweeps_resume_to_the_uninterrupted_rows(tmp_path):
    env = _env(tmp_path / "cache")
    reference, out = tmp_path / "reference.csv", tmp_path / "results.csv"
    assert _sweep(reference, env) == 0
    expected = reference.read_bytes()
    assert expected.count(b"\n") == 1 + 16 * 2 * 4

    # 1. killed while starting up (nothing on disk yet): --resume runs from the start
    _sweep(out, env, kill_after_s=0.5)
    # 2.-4. killed after 1, 3 and 5 chunks, each time in a resumed run
    for chunks in (1, 3, 5):
        assert _sweep(out, env, ["--resume"], kill_after_chunks=chunks) == -signal.SIGKILL
        assert _chunks_on_disk(out) >= chunks
        assert not out.exists()  # the results name only ever holds a complete table
    # 5. killed in the middle of writing a chunk: bytes past the manifest's count are cut off
    with open(partial_path(out), "ab") as handle:
        handle.write(b"half a row,0.5,1")
    # 6. a resume with other arguments is refused, saying what differs, and changes nothing
    with open(partial_path(out), "rb") as handle:
        partial = handle.read()
    refused = subprocess.run(
        [sys.executable, "-m", "wpbjax.cli", *SWEEP[:8], "1024", *SWEEP[9:], "--out", str(out), "--resume"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2
    assert "--budgets was 1024,4096, now 1024" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    with open(partial_path(out), "rb") as handle:
        assert handle.read() == partial

    assert _sweep(out, env, ["--resume"]) == 0
    assert out.read_bytes() == expected
    assert not os.path.exists(partial_path(out)) and not os.path.exists(resume_lib.manifest_path(out))
    meta = json.loads((tmp_path / "results.csv.meta.json").read_text())
    assert meta["rows"] == 16 * 2 * 4


def test_differences_name_each_changed_argument():
    before = {
        "budgets": [1024, 4096],
        "seed": 0,
        "episode_file_sha256": ["a"],
        "devices": 2,
        "params": {"threshold": [0.5]},
    }
    now = {"budgets": [1024], "seed": 1, "episode_file_sha256": ["b"], "devices": 4, "params": {}}
    error = ArgumentError("; ".join(resume_lib.differences(before, now)))
    assert str(error) == (
        "budgets was 1024,4096, now 1024; seed was 0, now 1; an episodes file's contents changed; "
        "devices was 2, now 4 (they set the chunk plan); params was {'threshold': [0.5]}, now {}"
    )
    assert error.render(flag) == (
        "--budgets was 1024,4096, now 1024; --seed was 0, now 1; an --episodes file's contents "
        "changed; devices was 2, now 4 (they set the chunk plan); --param was {'threshold': "
        "[0.5]}, now {}"
    )


def test_resume_of_parquet_is_refused(tmp_path):
    from wpbjax.files.results_io import ResultsWriter

    with pytest.raises(ValueError, match="only .csv results can be resumed"):
        ResultsWriter(tmp_path / "r.parquet", append_at=10)
