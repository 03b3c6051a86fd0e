"""A sweep whose results would not fit the free disk space is refused up front, with its size."""
import shutil
from collections import namedtuple

import pytest

from wpbjax import output_size
from wpbjax.cli import main


def test_size_estimate_and_refusal(tmp_path):
    assert output_size.table_bytes(1000, 0, "r.csv") == 1000 * output_size.CSV_BYTES_PER_ROW
    assert output_size.table_bytes(1000, 2, "r.parquet") == 1000 * (output_size.PARQUET_BYTES_PER_ROW + 40)
    output_size.check_disk_space(str(tmp_path / "r.csv"), 1000, free=10**6)
    # a Python caller reads the argument's name (``out``); the CLI test below, the flag
    with pytest.raises(ValueError, match=r"^out .*r.csv: the sweep's 10,000 rows need about 1.7 MiB, more than the 976.6 KiB free"):
        output_size.check_disk_space(str(tmp_path / "r.csv"), 10_000, free=10**6)


def test_cli_refuses_a_grid_past_the_free_space(tmp_path, monkeypatch, capsys):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 50_000, 50_000))
    out = tmp_path / "results.csv"
    out.write_text("an earlier table\n")
    argv = ["sweep", "--n-episodes", "2", "--modes", "default", "--steps", "20", "--budgets", "1024,2048",
            "--policies", "priority_threshold", "--tracks", "privileged", "--param", "threshold=0:1:1000",
            "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert f"error: --out {out}: the sweep's 4,000 rows need about 761.7 KiB, more than the 48.8 KiB free" in err
    assert "or --param values) or write elsewhere" in err and "\n" not in err
    assert out.read_text() == "an earlier table\n"
