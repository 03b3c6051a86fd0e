"""Bad input gets one clear line naming the argument, or the file and line, and exit status 2;
Ctrl-C one line and status 130; never a traceback."""

import argparse
import gzip
import json
import os
import pathlib
import signal
import subprocess
import sys

import pandas as pd
import pytest
from helpers import make_episode

from wpbjax.cli import failures, main
from wpbjax.cli.arguments import check_generator_size, drop_repeats
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.jsonl import EpisodeFormatError, load_jsonl
from wpbjax.reports.tables import REQUIRED

REPO = pathlib.Path(__file__).resolve().parents[2]
GOOD = '{"labels": {}, "steps": [{"t": 0, "observation": {"api": "a"}, "metadata": {}}]}'
CAFE_COLUMN = GOOD.index('"a"') + 5  # where "café" (latin-1, so byte 0xe9) stands in line 2 of the file below


def _labelled(utility=None, priority=None, **labels) -> str:
    """A two-step episode (t = 0 and 5) with the given utilities, priority and labels."""
    steps = [{"t": 0, "metadata": {} if priority is None else {"priority": priority}}, {"t": 5}]
    labels = {"utility_by_step": utility or {"0": 1.0, "5": 2.0}, **labels}
    return json.dumps({"labels": labels, "steps": steps})


@pytest.mark.parametrize(
    "second_line, message",
    [
        ("{not json", r"episodes.jsonl:2: not valid JSON"),
        ('{"labels": {}}', r"episodes.jsonl:2: missing 'steps'"),
        ('{"steps": [{"observation": 1}]}', r"episodes.jsonl:2: step 0: missing 't'"),
        ('{"steps": [{"t": "3"}]}', r"episodes.jsonl:2: step 0: 't' must be an integer"),
        ('{"steps": [{"t": 1.0}]}', r"episodes.jsonl:2: step 0: 't' must be an integer"),
        ('{"steps": [{"t": 2}, {"t": 2}]}', r"episodes.jsonl:2: step 1: 't' must increase strictly"),
        ('{"steps": []}', r"episodes.jsonl:2: 'steps' is empty"),
        ("[1, 2]", r"episodes.jsonl:2: an episode must be a JSON object"),
        (
            '{"steps": [{"t": 0, "metadata": {"priority": "high"}}]}',
            r"episodes.jsonl:2: step 0 \(t=0\): metadata 'priority' must be a number",
        ),
        ('{"labels": {"critical_steps": [0.5]}, "steps": [{"t": 0}]}', r"episodes.jsonl:2: labels 'critical_steps'"),
        # numbers the engine would turn into inf/NaN metrics or a JAX traceback (json reads these as floats)
        (
            _labelled({"0": 1.0, "5": float("inf")}),
            r"episodes.jsonl:2: step 1 \(t=5\): labels 'utility_by_step'\['5'\] must be finite",
        ),
        (_labelled({"0": float("-inf")}), r"step 0 \(t=0\): labels 'utility_by_step'\['0'\] must be finite .*got -inf"),
        (_labelled({"0": float("nan")}), r"step 0 \(t=0\): labels 'utility_by_step'\['0'\] must be finite .*got nan"),
        (
            _labelled({"0": 1e308}),
            r"'utility_by_step'\['0'\] must be finite and within float32 range",
        ),  # inf in float32
        (
            _labelled({"0": 3.5e38}),
            r"'utility_by_step'\['0'\] must be finite and within float32 range",
        ),  # just past float32
        (_labelled({"0": 3e38, "5": 3e38}), r"step 1 \(t=5\).*the episode's utilities sum past float32 range"),
        (_labelled({"0": "1"}), r"'utility_by_step'\['0'\] must be a number"),
        (_labelled(priority=float("nan")), r"episodes.jsonl:2: step 0 \(t=0\): metadata 'priority' must be finite"),
        (_labelled(priority=float("inf")), r"step 0 \(t=0\): metadata 'priority' must be finite"),
        (_labelled(priority=-1e39), r"step 0 \(t=0\): metadata 'priority' must be finite"),
        # labels naming steps the episode lacks would silently count as misses or zero utility
        (
            _labelled(critical_steps=[999, -5]),
            r"episodes.jsonl:2: labels 'critical_steps' names t = 999, -5, which the episode has no step for",
        ),
        (
            _labelled({"0": 1.0, "7": 2.0}),
            r"episodes.jsonl:2: labels 'utility_by_step'\['7'\]: the episode has no step with t = 7",
        ),
        (_labelled({"0": 1.0, "05": 2.0}), r"labels 'utility_by_step'\['05'\]: the episode has no step"),
        (_labelled(total_drift_events=-1), r"labels 'total_drift_events' must be an integer in 0..2\^31-1"),
        (_labelled(episode_id=[1]), r"labels 'episode_id' must be a string or an int64"),
        ('{"labels": [], "steps": [{"t": 0}]}', r"episodes.jsonl:2: 'labels' must be an object"),
        # nesting past what the parser or the encoder's recursion can take
        (
            '{"steps": [{"t": 0, "observation": ' + "[" * 150 + "]" * 150 + "}]}",
            r"episodes.jsonl:2: nested more than 100 levels deep",
        ),
        ("[" * 5000 + "]" * 5000, r"episodes.jsonl:2: not valid JSON \(nested too deeply"),
        (
            '{"steps": [{"t": 0}], "labels": {"episode_id": ' + "9" * 5000 + "}}",
            r"episodes.jsonl:2: not valid JSON \(Exceeds the limit",
        ),
    ],
)
def test_loader_names_file_and_line(tmp_path, second_line, message):
    path = tmp_path / "episodes.jsonl"
    path.write_text(GOOD + "\n" + second_line + "\n")
    with pytest.raises(EpisodeFormatError, match=message):
        load_jsonl(path)


def test_numbers_at_the_edge_of_float32_load(tmp_path):
    path = tmp_path / "edge.jsonl"
    path.write_text(_labelled({"0": 3e38, "5": -1e37}, priority=-3e38) + "\n")
    assert load_jsonl(path)[0]["labels"]["utility_by_step"]["0"] == 3e38


@pytest.mark.parametrize(
    "content, message",
    [
        (
            (GOOD + "\n" + GOOD.replace('"a"', '"caf\u00e9"') + "\n").encode("latin-1"),
            rf"bad.jsonl:2: not UTF-8 text \(byte 0xe9 at column {CAFE_COLUMN}\)",
        ),
        (bytes(range(128, 256)) * 4, r"bad.jsonl:1: not UTF-8 text"),
        (b"\x00\x01\x02binary\n", r"bad.jsonl:1: not valid JSON"),
        (
            gzip.compress(((GOOD + "\n") * 50).encode(), mtime=0)[:40],
            r"bad.jsonl:1: cannot read episode file",
        ),  # a cut gzip stream (mtime=0 everywhere here: a timestamp in the header would give each xdist
        # worker its own test id, and xdist refuses workers that collect different tests)
        (b"\x1f\x8bnot really gzip", r"bad.jsonl:1: cannot read episode file"),
        (gzip.compress(b"\xff\xfe{}\n", mtime=0), r"bad.jsonl:1: not UTF-8 text"),
    ],
)
def test_files_that_are_not_utf8_json_lines_name_themselves(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(EpisodeFormatError, match=message):
        load_jsonl(path)


def test_gzip_and_bom_files_read_like_plain_text(tmp_path):
    plain, packed, bom = tmp_path / "e.jsonl", tmp_path / "e.jsonl.gz", tmp_path / "bom.jsonl"
    text = GOOD + "\n" + _labelled() + "\n"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_jsonl(packed) == load_jsonl(plain) == load_jsonl(bom)


def test_generate_writes_gzip_when_asked(tmp_path):
    from wpbjax.episodes.jsonl import save_jsonl

    episodes = load_jsonl(_write(tmp_path / "e.jsonl", GOOD + "\n" + _labelled() + "\n"))
    save_jsonl(episodes, tmp_path / "a.jsonl.gz")
    first = (tmp_path / "a.jsonl.gz").read_bytes()
    assert load_jsonl(tmp_path / "a.jsonl.gz") == episodes
    save_jsonl(episodes, tmp_path / "a.jsonl.gz")
    assert (tmp_path / "a.jsonl.gz").read_bytes() == first  # no timestamp in the header


def _write(path, text):
    path.write_text(text)
    return path


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(EpisodeFormatError, match="empty.jsonl: no episodes"):
        load_jsonl(empty)
    with pytest.raises(EpisodeFormatError, match="missing.jsonl: cannot open"):
        load_jsonl(tmp_path / "missing.jsonl")


def test_encoder_rejects_non_json_values():
    with pytest.raises(EpisodeFormatError, match="episode 0, step 1"):
        encode_episodes([make_episode([{"api": "a"}, {"api": object()}])])


@pytest.mark.parametrize(
    "episode, message",
    [
        (
            make_episode([{"api": "a"}], utilities=[float("inf")]),
            r"episode 0: step 0 \(t=0\): labels 'utility_by_step'\['0'\] must be finite",
        ),
        (
            make_episode([{"api": "a"}], metadata=[{"priority": float("nan")}]),
            r"episode 0: step 0 \(t=0\): metadata 'priority' must be finite",
        ),
        (make_episode([{"api": "a"}], critical=[3]), r"episode 0: labels 'critical_steps' names t = 3"),
        ({"labels": {"utility_by_step": {0: 1.0, "0": 2.0}}, "steps": [{"t": 0}]}, r"names some t twice"),
        (make_episode([{"api": "a", "deep": json.loads("[" * 120 + "]" * 120)}]), r"nested more than 100 levels deep"),
    ],
)
def test_encoder_validates_dict_episodes(episode, message):
    """Episodes built in Python pass the same checks as loaded ones before any array is made."""
    with pytest.raises(EpisodeFormatError, match=message):
        encode_episodes([make_episode([{"api": "b"}]), episode][1:])


def _results_csv(path, rows=2, edit=None) -> str:
    """A hand-built results table with the columns the report needs (``edit`` changes its text)."""
    table = pd.DataFrame({column: [0.5] * rows for column in REQUIRED})
    table = table.assign(
        track="unprivileged", policy="no_mem", mode="default", budget_bytes=1024, episode_id=range(rows)
    )
    text = table.to_csv(index=False)
    path.write_text(edit(text) if edit else text)
    return str(path)


def _file(name, content):
    """argv builder: ``content`` (text or bytes) written to ``tmp_path / name``, its path returned."""

    def write(tmp_path):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(path)

    return write


SWEEP = ["sweep", "--budgets", "1024", "--policies", "no_mem", "--n-episodes", "1", "--steps", "5", "--quiet"]
# (argv: strings and builders of tmp_path, message on the one stderr line)
CLI_CASES = {
    "budget 0": (["sweep", "--budgets", "0,1024"], "budgets must be whole numbers"),
    "unknown policy": (["sweep", "--policies", "nope"], "unknown policy 'nope'"),
    "unknown track": (["sweep", "--tracks", "sideways"], "unknown track 'sideways'"),
    "unknown mode": (["sweep", "--modes", "calm"], "unknown mode 'calm' for the python engine"),
    "policy off its tracks": (["sweep", "--policies", "priority_greedy", "--tracks", "unprivileged"], "runs on tracks"),
    "missing file": (["sweep", "--episodes", "/no/such/file.jsonl"], "/no/such/file.jsonl: cannot open"),
    "empty --policies": (
        SWEEP + ["--policies", ""],
        "argument --policies: expected 'published' or comma-separated policy names",
    ),
    "blank --policies": (SWEEP + ["--policies", " , "], "argument --policies: expected 'published'"),
    "corrupt gate": (
        SWEEP + ["--policies", lambda tmp: "learned_gate:" + _file("gate.npz", b"PK\x03\x04junk")(tmp)],
        "gate.npz' is malformed (BadZipFile",
    ),
    "JSON nested 5,000 deep": (
        SWEEP + ["--episodes", _file("deep.jsonl", "[" * 5000 + "]" * 5000)],
        "deep.jsonl:1: not valid JSON (nested too deeply",
    ),
    "--memory-cap infG": (SWEEP + ["--memory-cap", "infG"], "argument --memory-cap: expected a size like 2G"),
    "--memory-cap nan": (SWEEP + ["--memory-cap", "nan"], "argument --memory-cap: expected a size like 2G"),
    # generated a block at a time (wpbjax.sweeps.blocks), so refused only for its table's size
    "--n-episodes 1e9": (
        SWEEP + ["--n-episodes", "1000000000", "--steps", "200"],
        "the sweep's 8,000,000,000 rows need about",
    ),
    "--n-episodes 1e9 --engine jax": (
        SWEEP + ["--n-episodes", "1000000000", "--steps", "200", "--engine", "jax"],
        "--n-episodes 1000000000: 4 modes x 1,000,000,000 episodes x 200 steps need about",
    ),
    "generate --episodes 1e9": (
        ["generate", "--episodes", "1000000000", "--out", lambda tmp: str(tmp / "e.jsonl")],
        "--episodes 1,000,000,000 x --steps 200 need about",
    ),
    "--api-pool 1e12": (
        SWEEP + ["--api-pool", "999999999999"],
        "--api-pool 999,999,999,999 x --max-params 6 need about",
    ),
    "generate --max-params 1e12": (
        ["generate", "--max-params", "999999999999", "--out", lambda tmp: str(tmp / "e.jsonl")],
        "--api-pool 8 x --max-params 999,999,999,999 need about",
    ),
    "bench --episodes 1e9": (
        ["bench", "--episodes", "1000000000", "--steps", "1000"],
        "--episodes 1,000,000,000 x --steps 1,000 need about",
    ),
    "--param nan": (SWEEP + ["--param", "threshold=0,nan"], "argument --param: threshold: expected finite numbers"),
    "--param inf stop": (
        SWEEP + ["--param", "threshold=0:inf:3"],
        "argument --param: threshold: expected start:stop:count",
    ),
    "--param repeats": (SWEEP + ["--param", "threshold=0.5:0.5:3"], "threshold: values repeat in '0.5:0.5:3'"),
    "train --learning-rate nan": (
        ["train", "--learning-rate", "nan"],
        "argument --learning-rate: expected a finite number > 0",
    ),
    "--budgets 1k": (["sweep", "--budgets", "1k"], "argument --budgets: expected comma-separated integers"),
    "unknown flag": (SWEEP + ["--frobnicate"], "unrecognized arguments: --frobnicate"),
    "unknown command": (["frobnicate"], "argument command: invalid choice: 'frobnicate'"),
    "Latin-1 file": (
        SWEEP + ["--episodes", _file("latin.jsonl", GOOD.replace('"a"', '"\u00e9"').encode("latin-1"))],
        "latin.jsonl:1: not UTF-8 text",
    ),
    "binary file": (
        SWEEP + ["--episodes", _file("noise.jsonl", bytes(range(256)) * 8)],
        "noise.jsonl:1: not valid JSON",
    ),
    "corrupt gzip": (
        SWEEP + ["--episodes", _file("cut.jsonl.gz", gzip.compress(GOOD.encode() * 40)[:30])],
        "cut.jsonl.gz:1: cannot read episode file",
    ),
    "utility Infinity": (
        SWEEP + ["--episodes", _file("inf.jsonl", _labelled({"0": 1, "5": float("inf")}))],
        "inf.jsonl:1: step 1 (t=5): labels 'utility_by_step'['5'] must be finite",
    ),
    "priority NaN": (
        SWEEP + ["--episodes", _file("nan.jsonl", _labelled(priority=float("nan")))],
        "nan.jsonl:1: step 0 (t=0): metadata 'priority' must be finite",
    ),
    "critical [999, -5]": (
        SWEEP + ["--episodes", _file("crit.jsonl", _labelled(critical_steps=[999, -5]))],
        "crit.jsonl:1: labels 'critical_steps' names t = 999, -5",
    ),
    "ids int and str": (
        SWEEP + ["--episodes", _file("a.jsonl", _labelled(episode_id=3)), _file("b.jsonl", _labelled(episode_id="x"))],
        "b.jsonl: episode 0: labels 'episode_id' 'x' is a string but",
    ),
    "report empty CSV": (
        ["report", _file("empty.csv", ""), "--out", lambda tmp: str(tmp / "rep")],
        "empty.csv: not a readable results table",
    ),
    "report cut CSV": (
        [
            "report",
            lambda tmp: _results_csv(tmp / "cut.csv", edit=lambda text: text[:-20]),
            "--out",
            lambda tmp: str(tmp / "rep"),
        ],
        "cut.csv: column",
    ),
    "report non-numeric column": (
        [
            "report",
            lambda tmp: _results_csv(tmp / "words.csv", edit=lambda text: text.replace("0.5", "abc", 1)),
            "--out",
            lambda tmp: str(tmp / "rep"),
        ],
        "words.csv: column",
    ),
    "report corrupt parquet": (
        ["report", _file("bad.parquet", b"PAR1 not parquet"), "--out", lambda tmp: str(tmp / "rep")],
        "bad.parquet: not a readable results table",
    ),
    # an --out that names an input is refused before any work (issue 25)
    "import-writ --out its input": (
        ["import-writ", _file("s.json", "{}"), "--out", lambda tmp: str(tmp / "s.json")],
        "s.json, an input of this command; choose another --out",
    ),
    "import-writ --out a scenario of its directory": (
        [
            "import-writ",
            lambda tmp: _file("in/a.json", "{}")(tmp) and str(tmp / "in"),
            "--out",
            lambda tmp: str(tmp / "in" / "a.json"),
        ],
        "a.json, an input of this command",
    ),
    "import-writ --out in no directory": (
        ["import-writ", _file("s.json", "{}"), "--out", "/no/such/dir/w.jsonl"],
        "/no/such/dir/w.jsonl: directory /no/such/dir does not exist",
    ),
    "report --out the results' directory": (
        ["report", lambda tmp: _results_csv(tmp / "res.csv"), "--out", str],
        "res.csv, an input of this report",
    ),
    "report --out a directory of other files": (
        [
            "report",
            lambda tmp: _results_csv(tmp / "res.csv"),
            "--out",
            lambda tmp: _file("notes/a.txt", "mine")(tmp) and str(tmp / "notes"),
        ],
        "exists and holds other files than a previous report",
    ),
    "packages score --out its store": (
        [
            "packages",
            "score",
            "--package",
            str,
            "--store",
            _file("store.csv", ""),
            "--budget",
            "10",
            "--out",
            lambda tmp: str(tmp / "store.csv"),
        ],
        "store.csv, an input of this command",
    ),
    "packages train --out its --init": (
        ["packages", "train", "--init", _file("w.npz", b"PK"), "--out", lambda tmp: str(tmp / "w.npz")],
        "w.npz, an input of this command",
    ),
}


@pytest.mark.parametrize("case", CLI_CASES)
def test_every_failure_is_one_line_with_status_2(case, capsys, tmp_path):
    argv, message = CLI_CASES[case]
    argv = [arg(tmp_path) if callable(arg) else arg for arg in argv]
    if argv[0] == "sweep" and "--out" not in argv:
        argv += ["--out", str(tmp_path / "r.csv"), "--quiet"]
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's errors
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert message in err
    assert not (tmp_path / "r.csv").exists()


def test_numeric_column_error_names_column_row_and_value(tmp_path):
    from wpbjax.reports import load_results

    path = _results_csv(tmp_path / "f1.csv", rows=3)
    table = pd.read_csv(path).astype({"f1": object})
    table.loc[2, "f1"] = "high"
    table.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"f1.csv: column 'f1' must hold finite numbers; data row 3 holds 'high'"):
        load_results(path)
    table.loc[2, "f1"] = "inf"
    table.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"f1.csv: column 'f1' must hold finite numbers; data row 3 holds inf"):
        load_results(path)


def test_repeated_values_are_dropped_with_one_warning_each(tmp_path):
    episodes = tmp_path / "e.jsonl"
    episodes.write_text(GOOD + "\n")
    args = argparse.Namespace(
        budgets=[1024, 2048, 1024],
        tracks=["privileged", "privileged"],
        modes=["default"],
        policies="no_mem,fifo_store_all,no_mem",
        episodes=[str(episodes), f"{tmp_path}/./e.jsonl"],
    )
    warnings = []
    drop_repeats(args, warnings.append)
    assert (args.budgets, args.tracks, args.policies, args.episodes) == (
        [1024, 2048],
        ["privileged"],
        "no_mem,fifo_store_all",
        [str(episodes)],
    )
    assert warnings == [
        "--budgets lists 1024 more than once; each runs once",
        "--tracks lists privileged more than once; each runs once",
        "--policies lists no_mem more than once; each runs once",
        f"--episodes lists {tmp_path}/./e.jsonl more than once; each runs once",
    ]


def test_generated_sets_past_memory_are_refused_up_front():
    args = argparse.Namespace(
        command="sweep",
        episodes=None,
        modes=["default", "redundancy"],
        n_episodes=1000,
        steps=200,
        api_pool=8,
        max_params=6,
        engine="jax",
    )  # (python: made in blocks)
    check_generator_size(args, memory=2000 * 200 * 87)  # exactly fits
    with pytest.raises(
        ValueError, match=r"--n-episodes 1000: 2 modes x 1,000 episodes x 200 steps need about 33.2 MiB"
    ):
        check_generator_size(args, memory=2000 * 200 * 87 - 1)
    args.max_params = 10**12
    with pytest.raises(ValueError, match=r"--api-pool 8 x --max-params 1,000,000,000,000 need about 465.7 TiB"):
        check_generator_size(args, memory=1 << 40)


def _raise(error):
    raise error


def test_interrupts_and_bugs_end_in_one_line(capsys, monkeypatch):
    for _ in range(2):  # in-process (no SIGINT handler): each interrupted command says so
        assert failures.run_command("wpbjax sweep", lambda: _raise(KeyboardInterrupt())) == 130
        assert capsys.readouterr().err == "wpbjax sweep: interrupted\n"
    assert failures.run_command("wpbjax sweep", lambda: _raise(MemoryError("Unable to allocate 3.27 TiB"))) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert (
        failures.run_command("wpbjax sweep", lambda: _raise(RuntimeError("RESOURCE_EXHAUSTED: Out of memory\n" * 99)))
        == 2
    )
    assert capsys.readouterr().err.startswith("wpbjax sweep: error: out of memory (RESOURCE_EXHAUSTED: Out of memory")
    assert failures.run_command("wpbjax sweep", lambda: _raise(BrokenPipeError())) == 141  # `wpbjax ... | head`
    assert capsys.readouterr().err == ""
    monkeypatch.delenv("WPBJAX_TRACEBACK", raising=False)
    assert failures.run_command("wpbjax report", lambda: _raise(TypeError("a\nb"))) == 1
    assert capsys.readouterr().err.startswith("wpbjax report: internal error: TypeError: a b (a bug")
    monkeypatch.setenv("WPBJAX_TRACEBACK", "1")
    with pytest.raises(TypeError):
        failures.run_command("wpbjax report", lambda: _raise(TypeError("shown")))


def test_ctrl_c_mid_sweep_ends_in_one_line_with_status_130(tmp_path):
    """SIGINT once the sweep has started: the interrupted line, status 130, no traceback, no output
    file, within the grace period even while XLA work is running."""
    env = dict(os.environ, PYTHONPATH=str(REPO), WPBJAX_CACHE_DIR="")
    out = tmp_path / "r.csv"
    sweep = subprocess.Popen(
        [sys.executable, "-m", "wpbjax.cli", "sweep", "--n-episodes", "64", "--steps", "100", "--out", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        before = [sweep.stderr.readline()]  # the header: printed once the episodes are generated, before any run
        while before[-1] and not before[-1].startswith("wpbjax sweep: "):  # (past any warning of the platform's)
            before.append(sweep.stderr.readline())
        assert before[-1], "".join(before)
        sweep.send_signal(signal.SIGINT)
        rest = sweep.stderr.read()
        assert sweep.wait(timeout=30) == 130
    finally:
        sweep.kill()
    assert rest.split("\r")[-1] == "wpbjax sweep: interrupted\n" and rest.count("\n") == 1, rest
    assert not out.exists()


def test_an_interrupt_landing_in_a_gc_callback_reaches_the_command():
    """Ctrl-C can land in a callback whose exceptions Python only reports ("Exception ignored in ...": JAX's
    garbage-collection callback). The CLI raises it again in the main thread instead, so the command still
    sees KeyboardInterrupt and nothing more is printed. Here a gc callback stands in for JAX's."""
    script = """
import gc, sys
from wpbjax.cli.failures import exit_promptly_on_interrupt, _interrupt_reported
exit_promptly_on_interrupt(lambda: "wpbjax test")
_interrupt_reported.set()  # the interrupted line was printed: this is the KeyboardInterrupt it raised
armed = [True]
def callback(phase, info):
    if armed[0]:
        armed[0] = False
        raise KeyboardInterrupt
gc.callbacks.append(callback)
try:
    gc.collect()
    for _ in range(10**8):  # the re-raised interrupt arrives at the main thread's next check
        pass
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted in main")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))  # fmt: skip
    assert done.stdout == "interrupted in main\n" and done.stderr == "", (done.stdout, done.stderr)
