import os
import pathlib
import tempfile

import jax
import pandas as pd
import pytest

# One XLA CPU device per test process (the CLI would make one per core: wpbjax.runtime.devices.use_every_core).
# The suite runs as two pytest-xdist workers on two cores, and most of its time is compiling small programs:
# a program for one device compiles sooner than one sharded over two, and two workers of two devices each would
# put four devices' threads on two cores. The code paths of several devices keep their tests, in subprocesses
# that choose their device count (tests/core/test_compile.py, tests/sweeps/test_sweep.py,
# tests/runtime/test_devices.py, tests/runtime/test_distributed.py).
jax.config.update("jax_num_cpu_devices", 1)
# The suite keeps compiled programs in memory only: it never writes into the user's persistent cache
# (~/.cache/wpbjax/xla, which the CLI's commands turn on), and serializing every program of ~550 tests in
# one process crashed XLA:CPU (a segfault in Executable.serialize, jax 0.10.2). A test of the cache
# itself passes its own WPBJAX_CACHE_DIR.
os.environ["WPBJAX_CACHE_DIR"] = ""
# Encoded real windows (wpbjax.episodes.cache) go to a folder of the system's temporary directory, never
# the user's: its entries are keyed by the code that built them, so one left by an earlier run is never stale.
os.environ["WPBJAX_EPISODE_CACHE"] = os.path.join(tempfile.gettempdir(), "wpbjax-test-episodes")

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "reference"


def shared_path(*parts) -> pathlib.Path:
    """A file of the published reference data; skips the test where ../shared is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"published reference data not found at {path}")
    return path


@pytest.fixture(scope="session")
def paper_sweep_csv(tmp_path_factory) -> pathlib.Path:
    """The paper grid run through the CLI exactly as a user would (reference oracle): its results file."""
    from wpbjax.cli import main

    out = tmp_path_factory.mktemp("paper") / "results.csv"
    assert main(["sweep", "--oracle", "published_rule", "--out", os.fspath(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="session")
def paper_sweep(paper_sweep_csv) -> pd.DataFrame:
    """The paper grid's 5,280 rows (:func:`paper_sweep_csv`), shared by every test that reads them."""
    return pd.read_csv(paper_sweep_csv)
