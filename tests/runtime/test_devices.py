"""Where a sweep runs: a sweep of few runs per call starts JAX on one core (devices.start_on_one_core),
with the rows of a sweep on every core; the commands that ask for it compile loops whole."""

import filecmp
import os
import subprocess
import sys

import wpbjax as wj

START = """
import os, threading, jax
from wpbjax.runtime import devices
cores = os.sched_getaffinity(0)
devices.use_every_core()
devices.local_devices(runs_per_call={runs})
seen = []
thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
thread.start(); thread.join()
print(len(jax.local_devices()), os.sched_getaffinity(0) == cores == seen[0], devices.start_on_one_core())
"""


def _run(code: str, **env) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "WPBJAX_CACHE_DIR": "", **env}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_few_runs_start_jax_on_one_core_and_every_thread_keeps_every_core():
    cores = len(os.sched_getaffinity(0))
    # one device; this thread and later ones keep every core; a second start does nothing
    assert _run(START.format(runs=2)) == "1 True False"
    assert _run(START.format(runs=64 * cores)) == f"{cores} True False"  # many runs: a device per core
    assert _run(START.format(runs=2), XLA_FLAGS="--xla_force_host_platform_device_count=3") == "3 True False"


LOOP = """
import jax, jax.numpy as jnp
from wpbjax.runtime import devices
devices.use_every_core(whole_loops={whole})
program = jax.jit(lambda x: jax.lax.fori_loop(0, 10, lambda i, x: x * 3 + 1, x))
print("xla_cpu_small_call" in program.lower(jnp.ones(100_000, jnp.int32)).compile().as_text())
"""


def test_loops_compiled_whole_where_asked_and_a_users_backend_options_stand():
    # a loop over 400 kB: over XLA's own bound (1 kB), under WHOLE_LOOP_BELOW_BYTES
    assert _run(LOOP.format(whole=True)) == "True"
    assert _run(LOOP.format(whole=False)) == "False"
    users = "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=1024"
    assert _run(LOOP.format(whole=True), XLA_FLAGS=users) == "False"


def test_a_cli_sweep_on_one_core_writes_the_rows_of_one_on_every_core(tmp_path):
    generate = wj.Generate(modes=["default"], n_episodes=1, steps=60)
    grid = wj.Grid([1024, 4096], policies=["merge_aggressive", "priority_greedy"])
    wj.sweep(generate, grid=grid, out=tmp_path / "here.csv")  # this process: JAX started, a device per core
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "wpbjax.cli",
            "sweep",
            "--modes",
            "default",
            "--n-episodes",
            "1",
            "--steps",
            "60",
            "--budgets",
            "1024,4096",
            "--policies",
            "merge_aggressive,priority_greedy",
            "--out",
            str(tmp_path / "cli.csv"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "WPBJAX_CACHE_DIR": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "runs on 1 x cpu" in done.stderr
    assert filecmp.cmp(tmp_path / "here.csv", tmp_path / "cli.csv", shallow=False)
