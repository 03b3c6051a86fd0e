"""Every notebook in notebooks/ runs top to bottom (at small sizes), and is stored without outputs."""
import os
import sys

import nbformat
import pytest

from conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    names = {path.name for path in NOTEBOOKS}
    assert {"01_quickstart.ipynb", "03_budget_sweeps.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_stored_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_runs_top_to_bottom(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    # the kernel is a child process: it inherits this environment. Small sizes, this checkout's
    # wpbjax first on the path, no display, and the interpreter running the tests (jupyter_client
    # maps the kernelspec's "python" to sys.executable).
    monkeypatch.setenv("WPBJAX_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    check = nbformat.v4.new_code_cell(
        f"import sys, wpbjax\nassert wpbjax.__file__.startswith({str(REPO)!r}), wpbjax.__file__\n"
        f"assert sys.executable == {sys.executable!r} or sys.prefix == {sys.prefix!r}, sys.executable")
    notebook.cells.insert(0, check)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails
