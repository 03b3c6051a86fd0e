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


def test_bench_reports_the_pass_it_ran():
    """``--per-pass`` sets the episodes per pass on each device (capped at a device's share, one pass: see
    tests/runtime/test_device_check.py); the default is the rollout's cache-sized pass
    (wpbjax.core.rollout.episodes_per_pass: at T = 200 and 3 budgets, 8 MiB / (200 x 40 bytes) = 1,048 runs,
    so 349 episodes)."""
    from wpbjax.bench import run_bench
    from wpbjax.core.rollout import episodes_per_pass

    bench = dict(n_episodes=400, n_steps=200, policies=["no_mem"], repeats=1)  # one device (conftest)
    assert episodes_per_pass(200, 3) == 349
    assert run_bench(**bench)["per_pass"] == 349
    assert run_bench(**bench, per_pass=30)["per_pass"] == 30
