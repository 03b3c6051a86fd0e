"""Atomic, checked output: a sweep writes its table and sidecar only when complete, never over an input."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.files.results_io import ResultsWriter, check_output, partial_path, read_sidecar, sha256, sidecar_path

SMALL = [
    "sweep",
    "--n-episodes",
    "2",
    "--steps",
    "30",
    "--modes",
    "default",
    "--budgets",
    "700,9000",
    "--policies",
    "fifo_store_all",
    "--tracks",
    "unprivileged",
    "--quiet",
]


def _snapshot(*paths):
    return {str(path): open(path, "rb").read() for path in paths}


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A finished sweep's results and sidecar, to be left byte-identical by failing sweeps."""
    out = tmp_path_factory.mktemp("kept") / "keep.csv"
    assert main(SMALL + ["--out", str(out)]) == 0
    return out


def test_sidecar_records_rows_and_checksum(kept):
    meta = read_sidecar(sidecar_path(kept))
    assert meta["rows"] == len(pd.read_csv(kept)) == 2 * 2  # 2 episodes x 2 budgets x 1 policy
    assert meta["results"] == {"file": "keep.csv", "format": "csv", "rows": 4, "sha256": sha256(kept)}
    assert not os.path.exists(partial_path(kept)) and not os.path.exists(partial_path(sidecar_path(kept)))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--budgets", "0"], "budgets must be whole numbers of bytes"),
        (["--policies", "no_such_policy"], "unknown policy 'no_such_policy'"),
        (["--param", "threshold=0.5"], "no selected policy has a param 'threshold'"),
        (["--episodes", "/nonexistent/episodes.jsonl"], "/nonexistent/episodes.jsonl"),
    ],
)
def test_a_failing_sweep_leaves_existing_results_byte_identical(kept, argv, message, capsys):
    before = _snapshot(kept, sidecar_path(kept))
    assert main(SMALL + ["--out", str(kept)] + argv) == 2
    assert message in capsys.readouterr().err
    assert _snapshot(kept, sidecar_path(kept)) == before
    assert not os.path.exists(partial_path(kept))


def test_a_sweep_failing_mid_way_leaves_existing_results_byte_identical(kept, monkeypatch, capsys):
    """The second chunk's write fails (a full disk): the first chunk went to the temporary file only,
    which is removed; the old table and sidecar stay as they were."""
    original, calls = ResultsWriter._write_text, []

    def write(self, texts):  # each chunk's bytes, whichever way they were made
        calls.append(len(texts))
        if len(calls) == 2:
            raise OSError(f"{self.path}: No space left on device")
        original(self, texts)

    monkeypatch.setattr(ResultsWriter, "_write_text", write)
    before = _snapshot(kept, sidecar_path(kept))
    assert main(SMALL[:2] + ["6"] + SMALL[3:] + ["--memory-cap", "64K", "--out", str(kept)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert len(calls) == 2
    assert _snapshot(kept, sidecar_path(kept)) == before
    assert not os.path.exists(partial_path(kept))


@pytest.mark.parametrize(
    "name, out",
    [
        ("same.csv", "same.csv"),  # --out is the episode file
        ("X.csv.meta.json", "X.csv"),  # --out's sidecar is the episode file
        ("ep.jsonl", "ep.jsonl.partial"),  # not even a .csv/.parquet name
    ],
)
def test_out_naming_an_input_is_refused(tmp_path, name, out, capsys):
    episodes = tmp_path / name
    assert main(["generate", "--steps", "20", "--episodes", "1", "--out", str(episodes), "--quiet"]) == 0
    before = _snapshot(episodes)
    code = main(SMALL + ["--episodes", str(episodes), "--out", str(tmp_path / out)])
    assert code == 2
    err = capsys.readouterr().err
    assert str(episodes) in err or "expected a .csv or .parquet file name" in err
    assert _snapshot(episodes) == before


def test_check_output_names_the_clash(tmp_path):
    source = tmp_path / "r.csv.meta.json"
    source.write_text("{}")
    with pytest.raises(ValueError, match=r"r\.csv\.meta\.json would overwrite .*an input of this sweep"):
        check_output(tmp_path / "r.csv", inputs=[source])
    with pytest.raises(ValueError, match="does not exist"):
        check_output(tmp_path / "missing" / "r.csv")
    assert check_output(tmp_path / "other.parquet", inputs=[source]) == str(tmp_path / "other.parquet")


def test_writer_commits_only_when_complete(tmp_path):
    path = tmp_path / "t.parquet"
    with ResultsWriter(path) as writer:
        writer.write(pd.DataFrame({"a": [1, 2]}))
        writer.write(pd.DataFrame({"a": [3]}))
        assert not path.exists() and os.path.exists(partial_path(path))
        writer.commit({"note": "x"})
    assert pd.read_parquet(path)["a"].tolist() == [1, 2, 3]
    meta = json.loads(open(sidecar_path(path)).read())
    assert meta["note"] == "x" and meta["rows"] == 3 and meta["results"]["sha256"] == sha256(path)
    with pytest.raises(RuntimeError):
        with ResultsWriter(path) as writer:
            writer.write(pd.DataFrame({"a": [9]}))
            raise RuntimeError("interrupted")
    assert pd.read_parquet(path)["a"].tolist() == [1, 2, 3] and not os.path.exists(partial_path(path))


def test_csv_chunks_table_or_lines_are_one_table_and_the_running_checksum_matches(tmp_path):
    """Chunks written as a table (``write``) and as CSV lines put in order (``write_csv_rows``) make
    one pyarrow write of the whole table, and the SHA-256 kept as the bytes are written is the
    file's, also when a run is continued from a cut file."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from wpbjax.files import results_io

    first = pd.DataFrame({"a": np.arange(7), "b": np.linspace(0.1, 0.7, 7), "s": list("abcdefg")})
    second = first.assign(a=first.a + 7)
    second_table = pa.Table.from_pandas(second, preserve_index=False)
    reversed_lines = results_io.csv_rows(second_table.take(np.arange(6, -1, -1)))
    second_lines = reversed_lines.take(np.arange(6, -1, -1))  # put back in order, as a sweep's chunk
    whole = pa.BufferOutputStream()
    pcsv.write_csv(
        pa.Table.from_pandas(pd.concat([first, second]), preserve_index=False),
        whole,
        write_options=pcsv.WriteOptions(quoting_style="needed"),
    )
    path = tmp_path / "t.csv"
    with ResultsWriter(path) as writer:
        writer.write(first)
        cut = writer.size
        writer.write_csv_rows(second_lines, second_table.schema)
        writer.commit()
    assert path.read_bytes() == whole.getvalue().to_pybytes()
    assert read_sidecar(sidecar_path(path))["results"]["sha256"] == sha256(path)
    # continued after a kill that left the first chunk and part of the second
    with open(partial_path(path), "wb") as handle:
        handle.write(path.read_bytes()[: cut + 5])
    with ResultsWriter(path, append_at=cut) as writer:
        writer.write_csv_rows(second_lines, second_table.schema)
        writer.commit()
    assert path.read_bytes() == whole.getvalue().to_pybytes()
    assert read_sidecar(sidecar_path(path))["results"]["sha256"] == sha256(path)
