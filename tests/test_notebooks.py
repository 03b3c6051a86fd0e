"""Every notebook in notebooks/ runs top to bottom (at small sizes) with its claims asserted, and is stored
without outputs."""

import ast
import warnings

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
def test_runs_top_to_bottom_and_its_claims_hold(path, tmp_path, monkeypatch):
    """The code cells run in order in one namespace, in this process (as a kernel would run them, without
    a kernel's start-up and its own compiles of programs this process already holds), at small sizes,
    from a scratch directory. What each notebook claims (a gate beats a baseline, a table has its rows)
    is an assert in its cells, so a claim that stops holding fails here."""
    import matplotlib

    from wpbjax.policies import registry

    monkeypatch.setenv("WPBJAX_NOTEBOOK_SMALL", "1")
    monkeypatch.chdir(tmp_path)
    matplotlib.use("Agg")  # no display; plt.show() is a no-op
    cells = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    claims = sum(isinstance(node, ast.Assert) for source in cells for node in ast.walk(ast.parse(source)))
    assert claims >= 3, f"{path.name}: its claims are asserts in its cells"
    registered = set(registry._REGISTRY)
    namespace = {"__name__": "__main__"}
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "FigureCanvasAgg is non-interactive", UserWarning)
            for index, source in enumerate(cells):
                code = compile(source, f"{path.name}, code cell {index + 1}", "exec")
                exec(code, namespace)  # noqa: S102 (the repository's own notebooks)
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
        for name in set(registry._REGISTRY) - registered:  # a policy the notebook registered
            del registry._REGISTRY[name]
