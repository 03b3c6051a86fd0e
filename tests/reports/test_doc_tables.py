"""The result tables in README.md and docs/ are pinned: each names the command that produced it, and
here the same code regenerates it (or the rows the suite's shared paper-grid sweep, ``paper_sweep``,
covers) and every regenerated row must appear in the doc, character for character.

The paper-grid sweep runs with the reference oracle; none of these tables reads an oracle column
(F1, recall, utility per KB, staleness and the integrity metrics do not depend on it), so its rows are
the rows of the docs' exact-oracle runs.
"""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from conftest import REPO

DOCS = REPO / "docs"


def load_experiment(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_rows(markdown: str) -> list[str]:
    """The body rows of every Markdown table in ``markdown`` (header and separator lines dropped)."""
    lines = [line.strip() for line in markdown.splitlines()]
    return [
        line
        for index, line in enumerate(lines)
        if line.startswith("|")
        and not re.fullmatch(r"[|:\- ]+", line)
        and not (index + 1 < len(lines) and re.fullmatch(r"\|[|:\- ]+", lines[index + 1]))
    ]


def sections(markdown: str, pattern: str) -> dict[str, str]:
    """Text under each heading matching ``pattern`` (its first group names it), up to the next heading."""
    found, name, lines = {}, None, []
    for line in markdown.splitlines():
        heading = re.match(r"#+ (.*)", line)
        if heading:
            if name is not None:
                found[name] = "\n".join(lines)
            match = re.fullmatch(pattern, heading.group(1))
            name, lines = (match.group(1) if match else None), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        found[name] = "\n".join(lines)
    return found


def assert_rows_in(rows: list[str], doc_rows: list[str], where: str) -> None:
    assert rows, f"nothing regenerated for {where}"
    missing = [row for row in rows if row not in doc_rows]
    assert not missing, f"{where}: regenerated rows the doc does not show:\n" + "\n".join(missing)


def test_readme_leaderboard(paper_sweep):
    """README "Results": `wpbjax sweep` then `wpbjax report` (leaderboard.md) at 10 KB, both tracks, whole."""
    from wpbjax.reports.tables import leaderboard, leaderboard_markdown

    readme = (REPO / "README.md").read_text()
    markdown = leaderboard_markdown(leaderboard(paper_sweep, 10240), 10240)
    blocks = re.findall(r"(?m)^\|.*\|\n(?:^\|.*\|\n?)+", markdown)
    assert len(blocks) == 2 and all(block.strip() in readme for block in blocks), markdown
    assert "`wpbjax report results.csv --out report/`" in readme


def test_policies_doc_table(paper_sweep):
    """docs/policies.md "Every policy on the paper episodes" (experiments/policy_table.py): the rows of the
    zoo policies the paper grid runs (uniform_sample, merge_aggressive, priority_threshold)."""
    script = load_experiment("policy_table")
    from wpbjax.policies.zoo import ZOO_NAMES

    doc = sections((DOCS / "policies.md").read_text(), r"(Every policy on the paper episodes)")
    assert "`python experiments/policy_table.py`" in doc["Every policy on the paper episodes"]
    rows = table_rows(script.to_markdown(script.policy_means(paper_sweep[paper_sweep.policy.isin(ZOO_NAMES)])))
    assert len(rows) == 5
    assert_rows_in(rows, table_rows(doc["Every policy on the paper episodes"]), "docs/policies.md")


def test_integrity_doc_tables(paper_sweep):
    """docs/integrity.md "Every policy's integrity on the paper episodes" (experiments/integrity_table.py):
    the rows of the 7 published policies on both tracks, at each of the three budgets."""
    script = load_experiment("integrity_table")
    from wpbjax.reports.integrity import scorecard, scorecard_markdown

    text = (DOCS / "integrity.md").read_text()
    assert "`python experiments/integrity_table.py`" in text
    doc = sections(text, r"Budget (\S+)")
    regenerated = sections(
        scorecard_markdown(scorecard(paper_sweep[paper_sweep.budget_bytes.isin(script.BUDGETS)])), r"Budget (\S+)"
    )
    assert list(regenerated) == list(doc) == ["1KB", "10KB", "100KB"]
    for budget, markdown in regenerated.items():
        rows = table_rows(markdown)
        assert len(rows) == 12
        assert_rows_in(rows, table_rows(doc[budget]), f"docs/integrity.md, budget {budget}")


@pytest.mark.parametrize("regime", ["decoy"])
def test_generators_doc_table(regime):
    """docs/generators.md "Baselines on the regimes" (experiments/new_regimes.py): one regime's rows,
    regenerated at the doc's size (100 episodes x 200 steps, seed 0)."""
    script = load_experiment("new_regimes")
    doc = sections((DOCS / "generators.md").read_text(), r"(Baselines on the regimes)")["Baselines on the regimes"]
    assert "`python experiments/new_regimes.py`" in doc
    rows = table_rows(
        script.privileged_markdown(
            script.regime_rows([regime], policies=list(script.TABLE_POLICIES), tracks=["privileged"])
        )
    )
    assert len(rows) == 3
    assert_rows_in(rows, table_rows(doc), "docs/generators.md")


def test_learning_doc_baseline_columns(paper_sweep):
    """docs/learning.md "Results" (experiments/train_gates.py), published episodes: the two columns that need
    no trained gate, regenerated: "best baseline @1 KB" (the best published policy's mean F1 per track and
    mode, from the paper-grid sweep, the policy named) and "F1-optimal @1 KB" (learn.evaluate.f1_optimal on
    the same episodes). The gate columns need the trained checkpoints (the script trains them)."""
    from wpbjax.learn.evaluate import evaluation_sets, f1_optimal

    doc = sections((DOCS / "learning.md").read_text(), r"(Results) .*")["Results"]
    assert "`experiments/train_gates.py`" in (DOCS / "learning.md").read_text()
    cells = {}
    for row in table_rows(doc.split("Held-out")[0]):
        track, mode, _, best, optimal, _ = (cell.strip() for cell in row.strip("|").split("|"))
        cells[track, mode] = best, optimal
    assert len(cells) == 8
    published = evaluation_sets()["published"]
    modes = np.asarray(published.mode)
    means = paper_sweep[paper_sweep.budget_bytes == 1024].groupby(["track", "mode", "policy"]).f1.mean()
    for track in ("unprivileged", "privileged"):
        optimal = f1_optimal(published, track, [1024])[:, 0]
        for mode in dict.fromkeys(published.mode):
            best, optimal_cell = cells[track, mode]
            value, named = re.match(r"(\S+) \((\w+)", best).groups()
            by_policy = means[track, mode]
            # the named policy is a best one (where two tie, the doc names either)
            assert value == f"{by_policy.max():.3f}" and by_policy[named] == by_policy.max(), (track, mode, best)
            assert optimal_cell == f"{optimal[modes == mode].mean():.3f}", (track, mode)
