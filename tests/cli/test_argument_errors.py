"""One check, two spellings: a library error names an argument as the caller wrote it, ``out`` /
``num_processes`` / ``params`` from Python and ``--out`` / ``--num-processes`` / ``--param`` from
the command line (wpbjax.common.argument_errors; the CLI renders the flags in wpbjax.cli.failures)."""

import argparse
import dataclasses
import inspect
import pickle
import re
import shutil
from collections import namedtuple

import pandas as pd
import pytest

import wpbjax as wj
from wpbjax import api
from wpbjax.cli import build_parser, main
from wpbjax.cli.failures import cli_message, flag
from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes.generators.jax_gen import JaxGenConfig
from wpbjax.files import resume as resume_lib
from wpbjax.files.results_io import partial_path
from wpbjax.learn.config import TrainConfig
from wpbjax.reports import checks
from wpbjax.runtime import distributed

A_FLAG = re.compile(r"--[a-z]")
TINY = dict(
    episodes=wj.Generate(n_episodes=1, modes=["default"], steps=20),
    grid=wj.Grid(
        [1024, 2048], policies=["priority_threshold"], tracks=["privileged"], params={"threshold": [0.25, 0.5]}
    ),
)
TINY_ARGV = [
    "--n-episodes",
    "1",
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
    "threshold=0.25,0.5",
    "--quiet",
]


def test_an_error_spells_its_arguments_for_each_caller():
    error = ArgumentError(f"{arg('process_id')}: expected 0..1 ({arg('num_processes')} 2), got 2; see {arg('params')}")
    assert str(error) == "process_id: expected 0..1 (num_processes 2), got 2; see params"
    assert cli_message(error) == "--process-id: expected 0..1 (--num-processes 2), got 2; see --param"
    assert error.arguments == ("process_id", "num_processes", "params") and isinstance(error, ValueError)
    assert cli_message(pickle.loads(pickle.dumps(error))) == cli_message(error)  # the marks survive pickling
    assert cli_message(ValueError("--plain: as raised")) == "--plain: as raised"


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def test_flag_of_every_api_argument_is_a_real_flag():
    sweep_names = set(inspect.signature(api.sweep).parameters) - {"grid", "reads", "tiers", "run"}
    for config in (wj.Generate, wj.Grid, wj.Reads, wj.Tiers, wj.Run):
        sweep_names |= {field.name for field in dataclasses.fields(config)}
    # Python values (devices, a log callback, the cluster initialize() returns, generator knobs: a flag each),
    # and the tier options only Python sets (a crash seed, the cost model's weights)
    sweep_names -= {"devices", "command", "cluster", "log", "knobs", "crash_seed", "costs"}
    sweep_names |= set(inspect.signature(distributed.initialize).parameters)
    sweep_names |= {field.name for field in dataclasses.fields(JaxGenConfig)} - {"mode"}  # generator knobs
    sweep_options = _options(_subcommand("sweep"))
    for name in sorted(sweep_names):
        assert flag(name) in sweep_options, name
    train_options = _options(_subcommand("train"))
    for action in _subcommand("train")._actions:  # TrainConfig fields the CLI sets: one flag each
        if action.dest in {field.name for field in dataclasses.fields(TrainConfig)}:
            assert flag(action.dest) in train_options, action.dest


def _interrupted(out, monkeypatch, run) -> None:
    """Leave ``out``'s temporary file and manifest as a run killed after its last chunk, before the
    rename, leaves them (``run`` sweeps into ``out``; the manifest is kept, the table copied back)."""
    with monkeypatch.context() as patch:
        patch.setattr(resume_lib, "finish", lambda out: None)
        run()
    shutil.copyfile(out, partial_path(out))


def test_python_resume_with_other_arguments_names_them_as_python_does(tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    _interrupted(out, monkeypatch, lambda: wj.sweep(**TINY, out=out))
    complete = out.read_bytes()
    with pytest.raises(ArgumentError) as caught:
        wj.sweep(
            TINY["episodes"],
            grid=dataclasses.replace(TINY["grid"], budgets=[1024], params={"threshold": [0.25]}),
            out=out,
            resume=True,
        )
    message = str(caught.value)
    assert message.startswith(
        f"resume: {out}: the interrupted run had other arguments (budgets was 1024,2048, now 1024; "
        "params was {'threshold': [0.25, 0.5]}, now {'threshold': [0.25]}); "
    )
    assert message.endswith("drop resume to start over") and not A_FLAG.search(message)
    assert wj.sweep(**TINY, out=out, resume=True).rows == 4 and out.read_bytes() == complete


def test_cli_resume_with_other_arguments_names_the_flags(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.csv"
    _interrupted(out, monkeypatch, lambda: main(["sweep", *TINY_ARGV, "--out", str(out)]))
    assert main(["sweep", *TINY_ARGV[:-3], "--param", "threshold=0.25", "--quiet", "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"wpbjax sweep: error: --resume: {out}: the interrupted run had other arguments (--param was " in err
    assert err.endswith("drop --resume to start over") and "\n" not in err


def test_python_disk_space_refusal_names_out_and_params(tmp_path, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 100, 100))
    with pytest.raises(ArgumentError) as caught:
        wj.sweep(**TINY, out=tmp_path / "r.csv")
    message = str(caught.value)
    # 4 rows x (320 B a CSV row + 20 B for the one param column) = 1,360 B = 1.3 KiB
    assert message.startswith(
        f"out {tmp_path / 'r.csv'}: the sweep's 4 rows need about 1.3 KiB, more than the 100.0 B free"
    )
    assert "fewer episodes, budgets, policies or params values" in message and not A_FLAG.search(message)
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize(
    "arguments, environment, message",
    [
        (
            dict(coordinator="h:1"),
            {},
            "num_processes, process_id: needed with coordinator (give all three: "
            "coordinator HOST:PORT, num_processes N, process_id I)",
        ),
        (
            dict(coordinator="nohost", num_processes=2, process_id=0),
            {},
            "coordinator: expected HOST:PORT, got 'nohost'",
        ),
        (dict(coordinator="h:1", num_processes=0, process_id=0), {}, "num_processes: expected an integer >= 1, got 0"),
        (
            dict(coordinator="h:1", num_processes=2, process_id=2),
            {},
            "process_id: expected 0..1 (num_processes 2), got 2",
        ),
        (
            dict(coordinator="h:1", num_processes=2),
            {"JAX_PROCESS_ID": "5"},
            "$JAX_PROCESS_ID: expected 0..1 (num_processes 2), got 5",
        ),  # a value from the environment names its variable
    ],
)
def test_python_distributed_arguments_are_named_as_python_does(arguments, environment, message, monkeypatch):
    for name in (
        "JAX_COORDINATOR_ADDRESS",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "SLURM_STEP_NUM_TASKS",
        "OMPI_COMM_WORLD_SIZE",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ArgumentError) as caught:
        distributed.initialize(**arguments)
    assert str(caught.value) == message


def test_cli_names_a_distributed_value_from_the_environment_by_its_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAX_PROCESS_ID", "5")
    assert (
        main(
            [
                "sweep",
                "--n-episodes",
                "1",
                "--out",
                str(tmp_path / "r.csv"),
                "--coordinator",
                "h:1",
                "--num-processes",
                "2",
            ]
        )
        == 2
    )
    assert (
        capsys.readouterr().err.strip()
        == "wpbjax sweep: error: $JAX_PROCESS_ID: expected 0..1 (--num-processes 2), got 5"
    )


def test_train_config_names_fields_as_python_does():
    with pytest.raises(ArgumentError) as caught:
        TrainConfig(batch=100, pool_per_mode=2)
    assert str(caught.value) == "batch (100) cannot exceed the pool (4 modes x pool_per_mode = 8 episodes)"
    assert cli_message(caught.value) == "--batch (100) cannot exceed the pool (4 modes x --pool-per-mode = 8 episodes)"
    with pytest.raises(ArgumentError, match="^seed must be >= 0; got -1$"):
        wj.train_gate(seed=-1)


def test_a_report_check_suggests_resume_as_each_caller_spells_it():
    rows = pd.DataFrame(
        {"track": ["privileged"] * 2, "policy": ["no_mem"] * 2, "budget_bytes": [1024] * 2, "episode_id": [0, 0]}
    )
    with pytest.raises(ArgumentError) as caught:
        checks.check_grid("r.csv", rows)
    assert str(caught.value).endswith("rerun the sweep (or finish it with the resume option)")
    assert cli_message(caught.value).endswith("rerun the sweep (or finish it with the --resume option)")
