"""``wpbjax report`` refuses a table that is incomplete or does not match its sidecar (one line
naming the file, exit status 2), and reports a complete one."""

import shutil

import pytest

from wpbjax.cli import main

SWEEP = [
    "sweep",
    "--n-episodes",
    "3",
    "--modes",
    "default,redundancy",
    "--steps",
    "30",
    "--budgets",
    "1024,4096",
    "--policies",
    "no_mem,fifo_store_all",
    "--tracks",
    "unprivileged",
    "--quiet",
]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("checks")
    assert main(SWEEP + ["--out", str(root / "results.csv")]) == 0
    return root / "results.csv"


def _copy(swept, tmp_path, name="results.csv", sidecar=True):
    path = tmp_path / name
    shutil.copy(swept, path)
    if sidecar:
        shutil.copy(str(swept) + ".meta.json", str(path) + ".meta.json")
    return path


def _refused(path, tmp_path, capsys, *extra) -> str:
    assert main(["report", str(path), "--out", str(tmp_path / "rep"), "--quiet", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err
    return err


def test_complete_table_is_reported(swept, tmp_path):
    assert main(["report", str(_copy(swept, tmp_path)), "--out", str(tmp_path / "rep"), "--quiet"]) == 0


def test_cut_table_is_refused(swept, tmp_path, capsys):
    """Killed after some chunks under the old writer: whole rows, ending on a newline."""
    path = _copy(swept, tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-4]))
    assert "20 rows, but its sidecar" in _refused(path, tmp_path, capsys)


def test_edited_table_is_refused(swept, tmp_path, capsys):
    path = _copy(swept, tmp_path)
    text = path.read_text()
    header, first, rest = text.split("\n", 2)
    path.write_text("\n".join([header, first.replace(",0,", ",1,", 1), rest]))
    assert "SHA-256 mismatch" in _refused(path, tmp_path, capsys)


def test_another_runs_sidecar_is_refused(swept, tmp_path, capsys):
    path = _copy(swept, tmp_path)
    other = tmp_path / "other.csv"
    assert main(SWEEP[:8] + ["1024"] + SWEEP[9:] + ["--out", str(other)]) == 0
    assert "rows, but its sidecar" in _refused(path, tmp_path, capsys, "--meta", str(other) + ".meta.json")


def test_duplicates_and_ragged_grids_are_refused_without_a_sidecar(swept, tmp_path, capsys):
    path = _copy(swept, tmp_path, "dup.csv", sidecar=False)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + lines[1:3]))  # two rows twice (e.g. a chunk written twice)
    assert "2 duplicate rows (the first: mode default, episode_id 0" in _refused(path, tmp_path, capsys)
    ragged = _copy(swept, tmp_path, "ragged.csv", sidecar=False)
    lines = ragged.read_text().splitlines(keepends=True)
    ragged.write_text("".join(lines[:-1]))  # the last chunk's last row lost
    assert "an incomplete or merged table" in _refused(ragged, tmp_path, capsys)
    glued = _copy(swept, tmp_path, "glued.csv", sidecar=False)
    lines = glued.read_text().splitlines(keepends=True)
    glued.write_text("".join(lines + [line.replace(",1024,", ",2048,") for line in lines[1:3]]))
    assert "at budget 2048 has 1 rows where the other runs have 6" in _refused(glued, tmp_path, capsys)
    partial = _copy(swept, tmp_path, "partial.csv", sidecar=False)
    partial.write_text("".join(line for line in lines if "fifo_store_all" not in line or ",4096," not in line))
    assert "unprivileged fifo_store_all ran 1 of the table's 2 budgets" in _refused(partial, tmp_path, capsys)
