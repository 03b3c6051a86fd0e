"""experiments/reproduce_paper.py: its tables match the embedded paper figures, and it catches a mismatch."""

import importlib.util

from conftest import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("reproduce_paper", REPO / "experiments" / "reproduce_paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tables_match_the_printed_figures(paper_sweep, capsys):
    script = load_script()
    f1 = script.f1_digits(11)
    assert (
        script.compare("t2", ["b"] * 11, script.f1_table(paper_sweep, "unprivileged"), script.PAPER_TABLE_2, f1, 2) == 0
    )
    assert (
        script.compare("t3", ["b"] * 11, script.f1_table(paper_sweep, "privileged"), script.PAPER_TABLE_3, f1, 2) == 0
    )
    digits = list(script.DIAGNOSTIC_DIGITS.values())
    assert script.compare("t4", ["d"] * 5, script.diagnostics_table(paper_sweep), script.PAPER_TABLE_4, digits, 3) == 0
    # every row of the paper grid is printed: 4 modes x 5 (unprivileged) / 7 (privileged) policies
    assert (
        len(script.parse_rows(script.PAPER_TABLE_2, 2)) == 20 and len(script.parse_rows(script.PAPER_TABLE_3, 2)) == 28
    )
    assert len(script.parse_rows(script.PAPER_TABLE_4, 3)) == 48


def test_a_changed_figure_is_a_mismatch(paper_sweep, capsys):
    script = load_script()
    rows = script.f1_table(paper_sweep, "privileged")
    _, values = rows[8]  # bump the first printed occurrence of one of its figures by one unit
    printed = script.PAPER_TABLE_3.replace(f"{values[0]:>7.3f}", f"{values[0] + 0.001:>7.3f}", 1)
    assert printed != script.PAPER_TABLE_3
    assert script.compare("t3", ["b"] * 11, rows, printed, script.f1_digits(11), 2) >= 1
    assert "!" in capsys.readouterr().out
