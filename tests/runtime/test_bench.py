"""`wpbjax bench` from the command line: its JSON report and the devices it runs on."""

import json
import os
import subprocess
import sys

import pytest

BENCH = [
    sys.executable,
    "-m",
    "wpbjax.cli",
    "bench",
    "--episodes",
    "8",
    "--steps",
    "20",
    "--policies",
    "fifo_store_all,last_kb",
    "--repeats",
    "1",
    "--json",
]


def _bench(**env_changes):
    env = {key: value for key, value in os.environ.items() if key not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env.update(WPBJAX_CACHE_DIR="", JAX_PLATFORMS="cpu", **env_changes)
    done = subprocess.run(BENCH, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_bench_json_reports_four_forced_devices():
    report = _bench(XLA_FLAGS="--xla_force_host_platform_device_count=4")
    assert report["devices"] == 4 and report["platform"] == "cpu"
    assert [row["policy"] for row in report["policies"]] == ["fifo_store_all", "last_kb"]
    for row in report["policies"]:
        assert set(row) == {"policy", "compile_s", "run_s", "episode_steps_per_s"}
        assert row["run_s"] > 0
        # runs x steps / wall: 8 episodes x 3 default budgets x 20 steps
        assert row["episode_steps_per_s"] == pytest.approx(8 * 3 * 20 / row["run_s"], rel=0.001)  # run_s: 4 digits


def test_cli_makes_one_cpu_device_per_core():
    # Nothing the CLI imports may start JAX before it splits the CPU (a module-level jnp constant did).
    assert _bench()["devices"] == len(os.sched_getaffinity(0))
