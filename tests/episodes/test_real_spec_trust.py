"""What a user can trust of ``import-openapi`` and ``real:`` specs: an output never overwrites an input nor leaves
a history beside another history's sidecar, a bad flag or spec is one line and status 2, Ctrl-C is one line
and status 130 with no worker traceback, a killed importer's workers end quietly; real: windows have
distinct, truthful ids and a split that follows the stream; a bad history file is named with its line."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from wpbjax.cli import main
from wpbjax.episodes.importers import openapi_import, real_drift
from wpbjax.episodes.jsonl import EpisodeFormatError
from wpbjax.episodes.source import EpisodeSource

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _one_line_error(capsys, *needles) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


# --- a repository of many versions, made at once with git fast-import -------------------------------------


def _spec(version: int, n_paths: int) -> bytes:
    """A spec of ``n_paths`` endpoints; version v renames one query parameter of endpoint v % n_paths."""
    paths = {
        f"/things{index}": {
            "get": {
                "parameters": [
                    {"name": f"p{index}_{version if index == version % n_paths else 0}", "in": "query"},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                ]
            },
            "post": {"parameters": [{"name": "id", "in": "query", "required": True, "schema": {"type": "string"}}]},
        }
        for index in range(n_paths)
    }
    return json.dumps({"openapi": "3.0.0", "info": {"title": "many", "version": str(version)}, "paths": paths}).encode()


def many_versions(repo, n_versions: int, n_paths: int) -> None:
    subprocess.run(["git", "init", "-q", repo], check=True)
    stream = []
    for version in range(n_versions):
        data = _spec(version, n_paths)
        stream.append(
            b"commit refs/heads/main\ncommitter t <t@t> %d +0000\ndata 1\nv\nM 100644 inline spec.json\ndata %d\n%s\n"
            % (1577880000 + 3600 * version, len(data), data)
        )
    subprocess.run(["git", "-C", repo, "fast-import", "--quiet"], input=b"".join(stream), check=True)
    subprocess.run(["git", "-C", repo, "symbolic-ref", "HEAD", "refs/heads/main"], check=True)


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("many") / "api"
    many_versions(repo, 400, 150)
    return repo


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("few") / "api"
    many_versions(repo, 3, 2)
    return repo


# --- --out ---------------------------------------------------------------------------------------------------


def test_out_inside_the_source_is_refused(small_repo, tmp_path, capsys):
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", small_repo, bare], check=True)
    dated = tmp_path / "dated"
    (dated / "2021-01-01").mkdir(parents=True)
    (dated / "2021-01-01" / "api.json").write_text(_spec(0, 1).decode())
    outside = tmp_path / "elsewhere.jsonl"
    os.symlink(small_repo / "spec.json", tmp_path / "elsewhere.jsonl.meta.json")  # the sidecar would land inside
    cases = [
        (small_repo, small_repo / "spec.json"),  # a spec file of the work tree
        (small_repo, small_repo / "new.jsonl.gz"),  # a new file in the work tree
        (small_repo, small_repo / ".git" / "description"),
        (bare, bare / "config"),
        (dated, dated / "2021-01-01" / "api.json"),
        (small_repo, outside),
    ]
    for source, out in cases:
        before = {path: path.read_bytes() for path in (small_repo / "spec.json", bare / "config") if path.exists()}
        code = main(["import-openapi", os.fspath(source), "--spec", "spec.json,api.json", "--out", os.fspath(out)])
        assert code == 2, out
        _one_line_error(capsys, "inside the source")
        assert {path: path.read_bytes() for path in before} == before
    assert not (small_repo / "new.jsonl.gz").exists() and not outside.exists()
    assert (dated / "2021-01-01" / "api.json").read_text() == _spec(0, 1).decode()


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_keeps_the_old_pair(small_repo, tmp_path, monkeypatch, failure):
    out = tmp_path / "h.jsonl.gz"
    lines, meta = openapi_import.import_history(os.fspath(small_repo), "spec.json", processes=1)
    openapi_import.write_history(out, lines, meta)
    sidecar = tmp_path / "h.jsonl.gz.meta.json"
    old = (out.read_bytes(), sidecar.read_bytes())
    real_replace = os.replace

    def failing_replace(source, destination):
        if os.fspath(destination).endswith(".meta.json"):
            raise failure
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(type(failure)):
        openapi_import.write_history(out, lines[:-1], meta)  # another history: its table is renamed in first
    monkeypatch.undo()
    assert (out.read_bytes(), sidecar.read_bytes()) == old
    assert sorted(os.listdir(tmp_path)) == ["h.jsonl.gz", "h.jsonl.gz.meta.json"]
    # a first write that fails leaves nothing
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(type(failure)):
        openapi_import.write_history(tmp_path / "new.jsonl", lines, meta)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["h.jsonl.gz", "h.jsonl.gz.meta.json"]


def test_negative_processes(small_repo, tmp_path, capsys):
    out = tmp_path / "h.jsonl"
    with pytest.raises(SystemExit) as exited:  # an argument error: argparse exits
        main(["import-openapi", os.fspath(small_repo), "--spec", "spec.json", "--out", os.fspath(out), "--processes", "-1"])  # fmt: skip
    assert exited.value.code == 2
    _one_line_error(capsys, "--processes", "-1")
    with pytest.raises(ValueError, match="processes: expected 0"):
        openapi_import.import_history(os.fspath(small_repo), "spec.json", processes=-1)
    assert not out.exists()


# --- Ctrl-C and a killed importer --------------------------------------------------------------------------------


class _Running:
    """``python -m wpbjax.cli import-openapi`` in a subprocess, its stderr collected by a thread."""

    def __init__(self, repo, out, processes: int):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wpbjax.cli", "import-openapi", os.fspath(repo), "--spec", "spec.json",
             "--out", os.fspath(out), "--processes", str(processes)],
            stderr=subprocess.PIPE,
            process_group=0,  # its own group, as a terminal's foreground job: Ctrl-C goes to the whole group
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=ROOT),
        )  # fmt: skip
        self.err = b""
        self.reader = threading.Thread(target=self._collect, daemon=True)
        self.reader.start()

    def _collect(self) -> None:
        while chunk := os.read(self.process.stderr.fileno(), 65536):
            self.err += chunk

    def wait_for_progress(self, timeout: float = 60) -> None:
        """Until the progress bar shows versions read (the pool is at work)."""
        deadline = time.monotonic() + timeout
        while b" versions" not in self.err or b"| 0/" in self.err.rsplit(b"\r", 1)[-1]:
            assert self.process.poll() is None, self.err.decode()
            assert time.monotonic() < deadline, self.err.decode()
            time.sleep(0.02)

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        code = self.process.wait(timeout)
        self.reader.join(timeout)  # EOF: every process holding stderr (workers, git) has ended
        assert not self.reader.is_alive(), "a worker or git process outlived the importer"
        return code, self.err.decode("utf-8", "replace")


@pytest.mark.parametrize("processes", [2, 1])
def test_ctrl_c_is_one_line(big_repo, tmp_path, processes):
    """Interrupted at a few moments of the read (SIGINT to the job's process group, as a terminal sends it):
    status 130, 'interrupted', no traceback, nothing written, no process left."""
    for delay in (0.0, 0.2, 0.5):
        out = tmp_path / "h.jsonl.gz"
        running = _Running(big_repo, out, processes)
        running.wait_for_progress()
        time.sleep(delay)
        assert running.process.poll() is None, "the import ended before the interrupt: make the repository bigger"
        os.killpg(running.process.pid, signal.SIGINT)  # as Ctrl-C at a terminal: every process of the job
        code, err = running.finish()
        assert code == 130, err
        assert "Traceback" not in err and "BrokenPipe" not in err and "KeyboardInterrupt" not in err, err
        assert err.rstrip().endswith("wpbjax import-openapi: interrupted"), err
        assert os.listdir(tmp_path) == []


def test_killed_importer_workers_end_quietly(big_repo, tmp_path):
    for delay in (0.0, 0.3):
        running = _Running(big_repo, tmp_path / "h.jsonl.gz", 2)
        running.wait_for_progress()
        time.sleep(delay)
        running.process.kill()
        code, err = running.finish()
        assert code == -signal.SIGKILL
        assert "Traceback" not in err and "BrokenPipe" not in err, err


# --- real: specs -------------------------------------------------------------------------------------------------


def _sweep(*episodes, out) -> int:
    return main(
        ["sweep", "--episodes", *episodes, "--budgets", "10240", "--policies", "fifo_store_all",
         "--tracks", "unprivileged", "--out", os.fspath(out), "--quiet"]
    )  # fmt: skip


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("real:stripe:0", "at least 1"),
        ("real:stripe:200:0", "at least 1"),
        ("real:stripe:200:100:50", "STEPS and STRIDE at most"),
        ("real:stripe:train:test", "one split at most"),
        ("real:stripe:test:200", "comes last"),
    ],
)
def test_bad_real_specs(tmp_path, capsys, spec, needle):
    assert _sweep(spec, out=tmp_path / "r.csv") == 2
    _one_line_error(capsys, spec, needle, "real:NAME[:STEPS[:STRIDE]][:train|:test]")
    assert not (tmp_path / "r.csv").exists()


def _history_line(version: int, date: str, endpoint: str = "GET /a", breaking: bool = False) -> dict:
    kind = "endpoint_removed" if breaking else ("endpoint_added" if version == 0 else "request_added")
    level = "breaking" if breaking else "info"
    query = {"name": "q", "in": "query", "type": "string", "required": False, "enum": [], "deprecated": False}
    return {
        "version": version,
        "date": date,
        "commit": f"c{version}",
        "api_version": "",
        "endpoint": endpoint,
        "request": [] if breaking else [query],
        "response": [],
        "deprecated": False,
        "removed": breaking,
        "changes": [
            {
                "kind": kind,
                "field": "" if kind.startswith("endpoint") else "query.q",
                "level": level,
                "glitch": False,
                "detail": "",
            }
        ],
        "level": level,
        "breaking": breaking,
    }


def _write_history(path, dates, endpoint="GET /a") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [_history_line(index, date, f"{endpoint}{index}") for index, date in enumerate(dates)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return os.fspath(path)


def test_the_same_windows_twice_are_refused(tmp_path, capsys, monkeypatch):
    assert _sweep("real:stripe", "real:stripe:200", out=tmp_path / "r.csv") == 2
    _one_line_error(capsys, "real:stripe:200", "same windows as real:stripe")
    _write_history(tmp_path / "h.jsonl", [f"2019-01-{day:02d}T00:00:00Z" for day in range(1, 11)])
    monkeypatch.chdir(tmp_path)
    assert _sweep("real:h.jsonl:4", "real:./h.jsonl:4:2", out=tmp_path / "r.csv") == 2
    _one_line_error(capsys, "same windows as real:h.jsonl:4")
    # one history cut two ways whose windows differ: both run
    assert _sweep("real:h.jsonl:4", "real:h.jsonl:5", out=tmp_path / "r.csv") == 0


def test_files_of_one_name_get_distinct_ids(tmp_path):
    dates = [f"2019-01-{day:02d}T00:00:00Z" for day in range(1, 7)]
    first = _write_history(tmp_path / "v1" / "h.history.jsonl", dates)
    second = _write_history(tmp_path / "v2" / "h.history.jsonl", dates, endpoint="GET /b")
    specs = [f"real:{first}:3", f"real:{second}:3"]
    ids = list(EpisodeSource.from_files(specs).load().episode_id)
    assert ids == [f"{folder}/h:3:{start}" for folder in ("v1", "v2") for start in range(4)]  # stride 3 // 2
    third = _write_history(tmp_path / "x" / "v1" / "h.jsonl", dates)  # its folder's name agrees too
    labels = real_drift.labels([f"real:{first}", f"real:{third}", "real:stripe"])
    assert labels["real:stripe"] == "stripe" and len(set(labels.values())) == 3
    assert all(label.startswith("v1/h-") for spec, label in labels.items() if spec != "real:stripe")
    # alone, a file keeps its plain name
    assert real_drift.labels([f"real:{first}"]) == {f"real:{first}": "h"}


def test_a_window_longer_than_the_history_says_its_length(tmp_path):
    path = _write_history(tmp_path / "x.jsonl", [f"2019-01-{day:02d}T00:00:00Z" for day in range(1, 8)])
    (episode,) = real_drift.load_spec(f"real:{path}:1000")
    assert episode["labels"]["episode_id"] == "x:7:0" and len(episode["steps"]) == 7


def test_the_split_follows_the_stream(tmp_path):
    """Dates 2019, 2019, 2020, 2019 (a commit dated back), 2020, 2020: the stream is cut at line 2, the first
    on or after 2020-01-01; line 3 is on the test side though dated 2019. Windows of 2, stride 1: [0,2) train,
    [1,3) across the cut (neither), [2,4) [3,5) [4,6) test. (The old rule put [2,4) in both.)"""
    dates = ["2019-06-01", "2019-07-01", "2020-02-01", "2019-08-01", "2020-03-01", "2020-04-01"]
    path = _write_history(tmp_path / "back.jsonl", [f"{date}T00:00:00Z" for date in dates])
    train = real_drift.episodes(path, steps=2, stride=1, split="train", split_date="2020-01-01")
    test = real_drift.episodes(path, steps=2, stride=1, split="test", split_date="2020-01-01")
    assert [episode["labels"]["episode_id"] for episode in train] == ["back:2:0"]
    assert [episode["labels"]["episode_id"] for episode in test] == ["back:2:2", "back:2:3", "back:2:4"]


def test_bad_history_files_are_named_with_their_line(tmp_path, capsys):
    good = _history_line(0, "2019-01-01T00:00:00Z", "GET /café")
    utf8 = tmp_path / "utf8.jsonl"
    utf8.write_text(json.dumps(good, ensure_ascii=False) + "\n", encoding="utf-8")
    (episode,) = real_drift.load_spec(f"real:{utf8}")
    assert episode["steps"][0]["observation"]["api"] == "GET /café"
    gz = tmp_path / "utf8.jsonl.gz"
    gz.write_bytes(gzip.compress(utf8.read_bytes()))
    assert real_drift.load_spec(f"real:{gz}")[0]["steps"][0]["observation"]["api"] == "GET /café"
    cases = {
        "notjson.jsonl": (json.dumps(good) + "\n{not json\n").encode(),
        "badbytes.jsonl": json.dumps(good).encode() + b"\n" + b'{"endpoint": "\xff"}\n',
        "empty.jsonl": b"",
        "blank.jsonl": b"\n\n",
        "array.jsonl": b"[1, 2]\n",
        "keys.jsonl": b'{"endpoint": "GET /a"}\n',
    }
    needles = {
        "notjson.jsonl": ":2: not valid JSON",
        "badbytes.jsonl": ":2: not UTF-8",
        "empty.jsonl": "empty history",
        "blank.jsonl": "empty history",
        "array.jsonl": ":1: not a history line",
        "keys.jsonl": "not an imported OpenAPI history",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(EpisodeFormatError, match=needles[name]):
            real_drift.load_spec(f"real:{path}")
        assert _sweep(f"real:{path}", out=tmp_path / "r.csv") == 2
        _one_line_error(capsys, os.fspath(path), needles[name])
