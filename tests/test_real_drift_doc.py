"""docs/real_drift.md's tables are what experiments/real_drift.py computes: a few policies' F1 rows and integrity
rows (the whole zoo takes a minute; these runs take seconds) and the stream statistics of the real stream, one
synthetic mode and the fitted knob set, regenerated and found in the doc character for character."""

from __future__ import annotations

import importlib.util

import pandas as pd
from conftest import REPO

import wpbjax as wj
from wpbjax.budgets import PAPER_BUDGETS
from wpbjax.episodes import jax_gen
from wpbjax.episodes.stream_stats import stream_stats

DOC = (REPO / "docs" / "real_drift.md").read_text()


def _experiment():
    spec = importlib.util.spec_from_file_location("real_drift_experiment", REPO / "experiments" / "real_drift.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(markdown: str) -> list[str]:
    return markdown.splitlines()[2:]  # drop the header and separator


def _assert_in_doc(rows: list[str]) -> None:
    assert rows
    missing = [row for row in rows if row not in DOC.splitlines()]
    assert not missing, "docs/real_drift.md lacks regenerated rows:\n" + "\n".join(missing)


def test_zoo_rows_regenerate():
    experiment = _experiment()
    real = wj.episodes.real("stripe", steps=200)
    rows = wj.sweep(
        real,
        policies=["version_journal", "recency", "priority_threshold", "oracle_optimal"],
        tracks=list(experiment.TRACKS),
        budgets=list(PAPER_BUDGETS),
        oracle="exact",
    )
    _assert_in_doc(_rows(experiment.markdown(experiment.f1_table(rows))))
    _assert_in_doc(_rows(experiment.markdown(experiment.integrity_table(rows))))


def test_stream_statistics_rows_regenerate():
    experiment = _experiment()
    table = pd.DataFrame(
        {
            "real:stripe (28 windows)": stream_stats(wj.episodes.real("stripe", steps=200)),
            "jax default": stream_stats(
                jax_gen.generate_encoded([jax_gen.JaxGenConfig(mode="default", steps=200, seed=0)], 64)
            ),
            "jax stripe_like (fitted)": stream_stats(
                jax_gen.generate_encoded([jax_gen.knob_set("stripe_like", steps=200, seed=0)], 64)
            ),
        }
    ).T[list(experiment.STATS)]
    _assert_in_doc(_rows(experiment.markdown(table, index_names=["stream"])))
