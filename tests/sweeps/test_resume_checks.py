"""``--resume`` trusts nothing: each finished chunk's SHA-256 is in the manifest and the partial table is
checked against them before a run continues it; a damaged manifest is refused in one line; a sweep
that fails or is interrupted (Ctrl-C) leaves neither temporary table nor manifest behind."""

import json
import os
import pathlib

import pytest

from wpbjax.cli import main
from wpbjax.files import resume as resume_lib
from wpbjax.files.output_lock import lock_path
from wpbjax.files.results_io import ResultsWriter, partial_path
from wpbjax.sweeps import run as sweep_run

# 8 episodes under a 64K memory cap: chunks of one episode per device (4 chunks on 2 devices, 8 on 1)
SWEEP = [
    "sweep",
    "--n-episodes",
    "8",
    "--modes",
    "default",
    "--steps",
    "20",
    "--budgets",
    "1024,4096",
    "--policies",
    "no_mem,fifo_store_all",
    "--tracks",
    "unprivileged",
    "--memory-cap",
    "64K",
    "--quiet",
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The table of an uninterrupted run."""
    out = tmp_path_factory.mktemp("reference") / "r.csv"
    assert main([*SWEEP, "--out", str(out)]) == 0
    return out.read_bytes()


def _killed_after(out, chunks: int, monkeypatch) -> dict:
    """Run the sweep until its manifest records ``chunks`` chunks, then stop it as ``kill -9`` would:
    temporary table and manifest stay. Returns the manifest."""
    record, calls = resume_lib.record, []

    def record_then_die(*args):
        record(*args)
        calls.append(1)
        if len(calls) == chunks:
            raise SystemExit("killed")

    with monkeypatch.context() as patch:
        patch.setattr(resume_lib, "record", record_then_die)
        patch.setattr(ResultsWriter, "abort", ResultsWriter.close)  # a killed process removes nothing
        patch.setattr(resume_lib, "finish", lambda out: None)
        with pytest.raises(SystemExit):
            main([*SWEEP, "--out", str(out)])
    with open(resume_lib.manifest_path(out)) as handle:
        return json.load(handle)


def _refused(out, capsys) -> str:
    partial = pathlib.Path(partial_path(out)).read_bytes()
    assert main([*SWEEP, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert pathlib.Path(partial_path(out)).read_bytes() == partial  # refused before touching anything
    return err


def test_resume_verifies_every_chunk_and_the_manifest(tmp_path, monkeypatch, capsys, reference):
    out = tmp_path / "r.csv"
    manifest = _killed_after(out, 3, monkeypatch)
    assert manifest["chunks"] == 3 and len(manifest["chunk_sha256"]) == 3
    path = resume_lib.manifest_path(out)

    # one byte edited inside the second chunk: refused, naming it
    first, second = manifest["chunk_ends"][:2]
    temporary = pathlib.Path(partial_path(out))
    original = temporary.read_bytes()
    edited = bytearray(original)
    edited[(first + second) // 2] ^= 0x01
    temporary.write_bytes(edited)
    assert f"chunk 2 of 3 (bytes {first}..{second - 1}) differs" in _refused(out, capsys)
    temporary.write_bytes(original)

    # damaged manifests: one line naming the field, status 2
    for damage, message in [
        (lambda m: m.pop("identity"), "'identity' missing"),
        (lambda m: m.update(size=str(m["size"])), "'size' must be a whole number >= 0"),
        (lambda m: m.update(size=m["size"] - 7), "'chunk_ends' must list 3 increasing"),
        (lambda m: m.update(chunk_sha256=m["chunk_sha256"][:2]), "'chunk_sha256' must list 3"),
        (lambda m: m.update(schema="wpbjax.resume-manifest/1"), "expected schema"),
    ]:
        damaged = json.loads(json.dumps(manifest))
        damage(damaged)
        with open(path, "w") as handle:
            json.dump(damaged, handle)
        assert message in _refused(out, capsys)
    with open(path, "w") as handle:
        json.dump(manifest, handle)

    # intact: the resumed run ends with the uninterrupted run's bytes, and cleans up
    assert main([*SWEEP, "--out", str(out), "--resume"]) == 0
    assert out.read_bytes() == reference
    assert sorted(os.listdir(tmp_path)) == ["r.csv", "r.csv.meta.json"]


def test_ctrl_c_after_the_first_chunk_leaves_no_orphan_manifest(tmp_path, monkeypatch, capsys, reference):
    out = tmp_path / "r.csv"
    chunk_rows, calls = sweep_run.chunk_rows, []

    def interrupted_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # chunk 1 is written (and recorded) before chunk 3 starts
            assert os.path.exists(resume_lib.manifest_path(out))
            raise KeyboardInterrupt
        return chunk_rows(*args, **kwargs)

    monkeypatch.setattr(sweep_run, "chunk_rows", interrupted_on_third)
    assert main([*SWEEP, "--out", str(out)]) == 130
    assert capsys.readouterr().err == "wpbjax sweep: interrupted\n"
    assert os.listdir(tmp_path) == []  # no table, temporary table, manifest or lock
    assert not os.path.exists(lock_path(out))
