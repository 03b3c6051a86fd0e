"""experiments/device_check.py at its tiny size: every figure measured, on a machine without the packages a
bare accelerator machine lacks (rapidyaml, scikit-learn, evosax are made unimportable for every process)."""

import json
import os
import subprocess
import sys
import textwrap

import jax
from conftest import REPO

SCRIPT = os.fspath(REPO / "experiments" / "device_check.py")
ABSENT = ("ryml", "sklearn", "evosax")

# Loaded by every Python process started with this folder on PYTHONPATH (the check's children too).
BLOCKER = textwrap.dedent(
    f"""
    import sys

    class _Absent:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {ABSENT!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}} (absent on a bare accelerator machine)")
            return None

    sys.meta_path.insert(0, _Absent())
    """
)


def _environment(tmp_path) -> dict:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {key: value for key, value in os.environ.items() if key not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env.update(PYTHONPATH=os.fspath(site), JAX_PLATFORMS="cpu")
    return env


def test_tiny_check_measures_every_figure_without_the_missing_packages(tmp_path):
    env = _environment(tmp_path)
    blocked = subprocess.run([sys.executable, "-c", "import ryml"], env=env, capture_output=True, text=True)
    assert blocked.returncode != 0 and "bare accelerator machine" in blocked.stderr  # the blocker is live
    out = tmp_path / "check"
    done = subprocess.run(
        [sys.executable, SCRIPT, "--out", os.fspath(out), "--size", "tiny"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "device_check.json").read_text())
    assert report["complete"] and report["backend"] == "cpu" and report["jax_version"] == jax.__version__
    names = [figure["figure"] for figure in report["figures"]]
    assert names == [
        "bench 8x40 fifo_store_all",
        "bench 8x40 last_kb",
        "bench 8x40 one pass last_kb",
        "paper grid (cold)",
        "100x grid (cold)",
        "real drift (cold)",
    ]
    runs = {figure["figure"]: figure["runs"] for figure in report["figures"]}
    # bench: 8 episodes x 3 budgets; paper grid: 4 modes x 1 episode x 2 budgets x 2 policies x 2 tracks;
    # 100x grid: twice the episodes; real drift: one row per window of the history (1 budget, 1 policy)
    assert runs["bench 8x40 last_kb"] == 24 and runs["paper grid (cold)"] == 32 and runs["100x grid (cold)"] == 64
    assert runs["real drift (cold)"] >= 1
    # one device (JAX_PLATFORMS=cpu, no device flags: the CLI makes one per core): the one-pass bench's pass
    # holds every episode of a device, the default's as many as episodes_per_pass allows of them
    passes = {figure["figure"]: figure["per_pass"] for figure in report["figures"] if "per_pass" in figure}
    assert passes["bench 8x40 one pass last_kb"] == 8 // report["devices"]
    for figure in report["figures"]:
        assert figure["wall_s"] > 0 and figure["backend"] == "cpu" and figure["jax_version"] == jax.__version__
        expected = figure["runs"] * figure["steps"] / figure["wall_s"]
        assert abs(figure["episode_steps_per_s"] - expected) <= 1e-3 * expected  # wall_s: 4 digits or more
    table = (out / "device_check.md").read_text()
    assert "| figure | runs x steps |" in table and "real drift (cold)" in table and "INCOMPLETE" not in table


def test_a_file_as_the_output_folder_is_refused(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("keep")
    done = subprocess.run(
        [sys.executable, SCRIPT, "--out", os.fspath(taken), "--quick"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "is not a folder" in done.stderr and taken.read_text() == "keep"
