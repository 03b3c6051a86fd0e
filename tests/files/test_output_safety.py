"""Every command's output is written atomically through one writer (:mod:`wpbjax.files.atomic`): a failed or
interrupted command leaves an existing output as it was and no half-written file; a symbolic link is
written through; import-writ runs without JAX; Ctrl-C ends any command in "wpbjax COMMAND: interrupted"."""

import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.conftest import REPO
from wpbjax.cli import main
from wpbjax.files import atomic
from wpbjax.files.results_io import read_sidecar, sha256, sidecar_path

SCENARIOS = REPO.parent / "shared" / "writ" / "scenarios"


def _scenario():
    path = SCENARIOS / "abstention-001-never-mentioned.json"
    if not path.exists():
        pytest.skip(f"WRIT scenarios not found at {SCENARIOS}")
    return path


def _only(directory, *names):
    assert sorted(os.listdir(directory)) == sorted(names)  # no temporary file left behind


def test_the_atomic_writer_keeps_the_old_file_on_any_failure(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    for error in (OSError("No space left on device"), KeyboardInterrupt()):
        with pytest.raises(type(error)), atomic.atomic_file(out) as handle:
            handle.write("half")
            raise error
        assert out.read_text() == "old"
        _only(tmp_path, "out.txt")
    atomic.write_text(out, "new")
    assert out.read_text() == "new"
    _only(tmp_path, "out.txt")


def test_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "real.txt"
    target.write_text("old")
    (tmp_path / "link.txt").symlink_to(target)
    atomic.write_text(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and target.read_text() == "new"
    _only(tmp_path / "data", "real.txt")


def test_generate_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch, capsys):
    from wpbjax.episodes import jsonl

    out = tmp_path / "e.jsonl"
    assert main(["generate", "--episodes", "3", "--steps", "10", "--out", str(out), "--quiet"]) == 0
    before = out.read_bytes()
    written = []

    def dumps(episode):
        written.append(episode)
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        return "{}"

    monkeypatch.setattr(jsonl, "dumps_episode", dumps)
    assert main(["generate", "--episodes", "3", "--steps", "10", "--seed", "1", "--out", str(out), "--quiet"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_bytes() == before
    _only(tmp_path, "e.jsonl")


def test_sweep_and_import_write_through_a_symbolic_link(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "w.jsonl").symlink_to(tmp_path / "data" / "writ.jsonl")
    assert main(["import-writ", str(_scenario()), "--out", str(tmp_path / "w.jsonl"), "--quiet"]) == 0
    (tmp_path / "r.csv").symlink_to(tmp_path / "data" / "results.csv")
    assert (
        main(
            [
                "sweep",
                "--episodes",
                str(tmp_path / "w.jsonl"),
                "--policies",
                "no_mem",
                "--budgets",
                "1024",
                "--tracks",
                "unprivileged",
                "--out",
                str(tmp_path / "r.csv"),
                "--quiet",
            ]
        )
        == 0
    )
    assert (tmp_path / "w.jsonl").is_symlink() and (tmp_path / "r.csv").is_symlink()
    meta = read_sidecar(sidecar_path(tmp_path / "r.csv"))
    assert meta["results"]["sha256"] == sha256(tmp_path / "data" / "results.csv") and meta["rows"] == 1
    _only(tmp_path / "data", "writ.jsonl", "results.csv")
    _only(tmp_path, "data", "w.jsonl", "r.csv", "r.csv.meta.json")


def test_training_interrupted_leaves_no_file(tmp_path, monkeypatch, capsys):
    """``packages train`` and ``train`` touch their output only once the trained weights exist (they
    wrote a 0-byte file first)."""
    from wpbjax.learn import train
    from wpbjax.packages import learned_train

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(learned_train, "train_writer", interrupted)
    monkeypatch.setattr(train, "train_gate", interrupted)
    assert main(["packages", "train", "--out", str(tmp_path / "w.npz"), "--quiet"]) == 130
    assert capsys.readouterr().err == "wpbjax packages train: interrupted\n"
    assert main(["train", "--out", str(tmp_path / "gate.npz"), "--quiet"]) == 130
    assert capsys.readouterr().err == "wpbjax train: interrupted\n"
    _only(tmp_path)


def test_import_writ_imports_no_jax(tmp_path):
    code = (
        "import sys\nfrom wpbjax.cli import main\n"
        f"assert main(['import-writ', {str(_scenario())!r}, '--out', {str(tmp_path / 'w.jsonl')!r}, '--quiet']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "w.jsonl").stat().st_size > 0


def test_ctrl_c_in_import_writ_names_the_command_and_keeps_the_old_output(tmp_path):
    """The scenario is a FIFO the test holds open after half a file: SIGINT lands while import-writ
    reads it. One line naming the subcommand, status 130, the old output byte for byte."""
    fifo, out = tmp_path / "slow.json", tmp_path / "w.jsonl"
    os.mkfifo(fifo)
    out.write_text("old episodes\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "wpbjax.cli", "import-writ", str(fifo), "--out", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    opened = threading.Event()
    holder = {}

    def feed():
        holder["pipe"] = open(fifo, "w")  # noqa: SIM115 (closed by the test) returns once import-writ opened the scenario for reading
        holder["pipe"].write('{"scenario_id": "half')
        holder["pipe"].flush()
        opened.set()

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        assert opened.wait(60), "import-writ never opened its input"
        process.send_signal(signal.SIGINT)
        err = process.stderr.read()
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
        if "pipe" in holder:
            holder["pipe"].close()
    assert err.split("\r")[-1] == "wpbjax import-writ: interrupted\n", err
    assert out.read_text() == "old episodes\n"
    _only(tmp_path, "slow.json", "w.jsonl")


def test_gitignore_covers_what_the_documented_commands_write():
    """After the README's and docs' commands, ``git status`` shows none of their outputs."""
    outputs = [
        "results.csv",
        "results.csv.meta.json",
        "results.parquet",
        "results.parquet.meta.json",
        "results.csv.partial",
        "results.csv.partial.manifest.json",
        "results.csv.lock",
        "writ.jsonl",
        "episodes.jsonl",
        "episodes.jsonl.gz",
        "gate.npz",
        "writer.npz",
        "report/leaderboard.md",
        ".partial-1234-0a1b2c3d-results.csv.meta.json",
    ]
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "check-ignore", "--no-index", *outputs],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("git not found")
    if done.returncode == 128:
        pytest.skip(f"not a git checkout: {done.stderr.strip()}")
    assert sorted(done.stdout.split()) == sorted(outputs)
