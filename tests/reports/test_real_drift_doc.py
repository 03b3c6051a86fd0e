"""docs/real_drift.md's tables are what experiments/real_drift.py computes. Per shipped vendor (one not shipped
yet is skipped): its row of the histories table (from its sidecar); two policies' rows of the F1, integrity
and read tables (the whole zoo takes minutes; one policy's runs take seconds); the stream statistics of the
vendor's windows, one synthetic mode and every fitted knob set; all regenerated and found in the doc
character for character."""

from __future__ import annotations

import importlib.util
import os
import sys

import pandas as pd
import pytest
from conftest import REPO

import wpbjax as wj
from wpbjax.episodes.generators import jax_gen
from wpbjax.episodes.generators.stream_stats import STATS, stream_stats
from wpbjax.episodes.importers import real_drift

DOC = (REPO / "docs" / "real_drift.md").read_text()
LINES = set(DOC.splitlines())


def _experiment():
    spec = importlib.util.spec_from_file_location("real_drift_experiment", REPO / "experiments" / "real_drift.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while the module runs
    spec.loader.exec_module(module)
    return module


EXPERIMENT = _experiment()


def _vendor(vendor: str) -> str:
    if not os.path.isfile(real_drift.history_path(vendor)):
        pytest.skip(f"real:{vendor} is not shipped")
    return vendor


def _rows(markdown: str) -> list[str]:
    return markdown.splitlines()[2:]  # drop the header and separator


def _assert_in_doc(rows: list[str]) -> None:
    assert rows
    missing = [row for row in rows if row not in LINES]
    assert not missing, "docs/real_drift.md lacks regenerated rows:\n" + "\n".join(missing)


def test_the_page_keeps_the_leads_sections_and_every_generated_block():
    assert (
        DOC.index("\n## Labels\n")
        < DOC.index("\n## Agreement with vendors' changelogs\n")
        < DOC.index("\n## Results\n")
    )
    for block in ("histories", "zoo", "integrity", "reads", "transfer", "statistics", "fit"):
        assert EXPERIMENT.BEGIN.format(block) in DOC, block
    # a block rewritten in place keeps the text around it
    text = f"a\n{EXPERIMENT.BEGIN.format('zoo')}\nold\n{EXPERIMENT.END}\nb\\1"
    assert EXPERIMENT.rewrite_blocks(text, {"zoo": "new \\1"}) == (
        f"a\n{EXPERIMENT.BEGIN.format('zoo')}\n\nnew \\1\n\n{EXPERIMENT.END}\nb\\1"
    )
    with pytest.raises(ValueError, match="no block"):
        EXPERIMENT.rewrite_blocks(text, {"fit": "x"})


@pytest.mark.parametrize("vendor", EXPERIMENT.VENDORS)
def test_histories_row_regenerates(vendor):
    _assert_in_doc(_rows(EXPERIMENT.markdown(EXPERIMENT.histories_table([_vendor(vendor)]), index_names=["vendor"])))


@pytest.mark.parametrize("vendor", EXPERIMENT.VENDORS)
def test_zoo_integrity_and_read_rows_regenerate(vendor):
    settings = EXPERIMENT.Settings(
        policies=("version_journal", "oracle_optimal"), budgets=tuple(EXPERIMENT.TABLE_BUDGETS)
    )
    rows = EXPERIMENT.shown(EXPERIMENT.zoo_rows(_vendor(vendor), settings))
    assert set(zip(rows.track, rows.policy)) == {("unprivileged", "version_journal"), ("oracle", "oracle_optimal")}
    _assert_in_doc(_rows(EXPERIMENT.markdown(EXPERIMENT.f1_table(rows))))
    _assert_in_doc(_rows(EXPERIMENT.markdown(EXPERIMENT.integrity_table(rows))))
    _assert_in_doc(_rows(EXPERIMENT.markdown(EXPERIMENT.read_table(rows))))


@pytest.mark.parametrize("vendor", EXPERIMENT.VENDORS)
def test_stream_statistics_rows_regenerate(vendor):
    real = wj.episodes.real(_vendor(vendor), steps=EXPERIMENT.STEPS)
    table = {EXPERIMENT.real_row(vendor, real.n_episodes): stream_stats(real)}
    table["jax default"] = stream_stats(
        jax_gen.generate_encoded([jax_gen.JaxGenConfig(mode="default", steps=200, seed=0)], 64)
    )
    for name in jax_gen.KNOB_SETS:
        config = jax_gen.knob_set(name, steps=200, seed=0)
        table[f"jax {name} (fitted)"] = stream_stats(jax_gen.generate_encoded([config], 64))
    _assert_in_doc(_rows(EXPERIMENT.markdown(pd.DataFrame(table).T[list(STATS)], index_names=["stream"])))
