"""A sweep whose results would not fit the free disk space is refused up front, with its size."""

import shutil
from collections import namedtuple

import numpy as np
import pytest

from wpbjax.cli import main
from wpbjax.files import output_size
from wpbjax.files.results_io import ResultsWriter


def test_size_estimate_is_near_the_bytes_of_real_tables(paper_sweep_csv, paper_sweep, tmp_path):
    """The estimate against tables of real rows: the paper grid's 5,280 rows as `wpbjax sweep` wrote
    them, and the same rows through the results writer as parquet and with two param columns of a
    101-point grid (the values a `--param x=0:1:101` sweep writes)."""
    n_rows = len(paper_sweep)
    with_params = paper_sweep.assign(
        param_threshold=np.resize(np.linspace(0, 1, 101), n_rows),
        param_every_n=np.resize(np.arange(1, 102, dtype=float), n_rows),
    )
    written = {}
    for name, table in (("r.parquet", paper_sweep), ("p.csv", with_params), ("p.parquet", with_params)):
        writer = ResultsWriter(tmp_path / name)
        writer.write(table)
        writer.commit()
        written[name] = (tmp_path / name).stat().st_size
    written["r.csv"] = paper_sweep_csv.stat().st_size
    for name, actual in written.items():
        estimate = output_size.table_bytes(n_rows, 2 if name.startswith("p") else 0, name)
        # not under (a grid passed as fitting must fit), not far over (parquet compresses each column's
        # repeats, param columns most: 2.5x over for p.parquet); at cab8c87 the CSV estimate was 17% under;
        # the read columns (blank here) add ~11 more a row
        assert actual <= estimate <= 3 * actual, (name, actual, estimate)


def test_size_refusal(tmp_path):
    output_size.check_disk_space(str(tmp_path / "r.csv"), 1000, free=10**6)
    # a Python caller reads the argument's name (``out``); the CLI test below, the flag
    with pytest.raises(
        ValueError,
        match=r"^out .*r.csv: the sweep's 10,000 rows need about 3.1 MiB, more than the "
        r"976.6 KiB free",
    ):
        output_size.check_disk_space(str(tmp_path / "r.csv"), 10_000, free=10**6)


def test_cli_refuses_a_grid_past_the_free_space(tmp_path, monkeypatch, capsys):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 50_000, 50_000))
    out = tmp_path / "results.csv"
    out.write_text("an earlier table\n")
    argv = [
        "sweep",
        "--n-episodes",
        "2",
        "--modes",
        "default",
        "--steps",
        "20",
        "--budgets",
        "1024,2048",
        "--policies",
        "priority_threshold",
        "--tracks",
        "privileged",
        "--param",
        "threshold=0:1:1000",
        "--out",
        str(out),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    # 4,000 rows x (320 bytes a CSV row + 20 for the param column) = 1,360,000 bytes = 1.30 MiB
    assert f"error: --out {out}: the sweep's 4,000 rows need about 1.3 MiB, more than the 48.8 KiB free" in err
    assert "or --param values) or write elsewhere" in err and "\n" not in err
    assert out.read_text() == "an earlier table\n"
