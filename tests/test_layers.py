"""The architecture is checked, not described: the import-linter contracts in pyproject.toml (the layers of
DESIGN.md, no import cycles, argparse only in the CLI, ...) hold for the package, lazy imports included, and
an upward import breaks them."""

import os
import pathlib
import shutil
import subprocess
import sys

from importlinter.cli import lint_imports

REPO = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = str(REPO / "pyproject.toml")


def test_every_import_linter_contract_holds():
    assert lint_imports(config_filename=PYPROJECT, no_cache=True, no_logo=True) == 0


def test_an_upward_import_breaks_the_layers(tmp_path):
    """A lazy import of the API from the store (state layer -> api layer) in a copy of the package."""
    shutil.copytree(REPO / "wpbjax", tmp_path / "wpbjax", ignore=shutil.ignore_patterns("__pycache__"))
    store = tmp_path / "wpbjax" / "state" / "store.py"
    store.write_text(store.read_text() + "\n\ndef _upward():\n    from wpbjax import api\n\n    return api\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; "
            "sys.argv = ['lint-imports', '--config', sys.argv[1], '--no-cache', '--contract', 'layers']; "
            "lint_imports_command()",
            PYPROJECT,
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wpbjax.state.store -> wpbjax.api" in done.stdout and "BROKEN" in done.stdout
