"""The public Python API (`import wpbjax as wj`): the CLI's rows and files from Python, checked inputs,
episode sources that rebuild the same episodes, and a library that never imports its CLI."""

import dataclasses
import importlib
import inspect
import json
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import wpbjax as wj
from wpbjax.cli import build_parser, main
from wpbjax.episodes import EpisodeSource
from wpbjax.files.results_io import read_sidecar, sha256, sidecar_path

PACKAGE = pathlib.Path(wj.__file__).parent
SMALL = dict(
    episodes=wj.Generate(n_episodes=2, steps=40, modes=["default", "burst_drift"]), grid=wj.Grid([1024, 10240])
)
SMALL_ARGV = ["--budgets", "1024,10240", "--n-episodes", "2", "--steps", "40", "--modes", "default,burst_drift"]


def test_public_names_resolve_and_import_wpbjax_is_light():
    for name in wj.__all__:
        assert getattr(wj, name) is not None, name
    assert isinstance(wj.__version__, str) and wj.__version__ in (PACKAGE.parent / "pyproject.toml").read_text()
    done = subprocess.run(
        [sys.executable, "-c", "import sys, wpbjax; print('jax' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_public_functions_are_plain_functions_named_unlike_any_module():
    """wj.simulate, wj.sweep, ... are functions (what inspect, IDEs and docs tools see), and no module of
    the package shares a public function's name (importing it would shadow the function)."""
    import pkgutil

    public = {name for name in wj.__all__ if inspect.isfunction(getattr(wj, name))}
    assert {"simulate", "sweep", "report", "leaderboard", "train_gate"} <= public
    for name in ("simulate", "sweep", "report"):
        importlib.import_module("wpbjax.api")  # importing the API's modules must not rebind the names
        assert inspect.isfunction(getattr(wj, name)) and getattr(wj, name).__module__ == "wpbjax.api", name
    modules = {info.name.rpartition(".")[2] for info in pkgutil.walk_packages([str(PACKAGE)], "wpbjax.")}
    assert not public & modules, public & modules


def test_sweep_takes_a_few_typed_configs():
    """wj.sweep: at most 8 parameters, each config a frozen dataclass with a default for every field."""
    parameters = inspect.signature(wj.sweep).parameters
    assert list(parameters) == ["episodes", "grid", "reads", "tiers", "run", "out", "resume"]
    for config in (wj.Generate, wj.Grid, wj.Reads, wj.Tiers, wj.Run):
        assert dataclasses.is_dataclass(config) and config.__dataclass_params__.frozen, config
        config()  # every field has a default
        with pytest.raises(dataclasses.FrozenInstanceError):
            config().__setattr__(dataclasses.fields(config)[0].name, None)


def test_cli_sweep_defaults_are_the_api_defaults():
    args = vars(build_parser().parse_args(["sweep"]))
    defaults = {
        **vars(wj.Generate()),
        **vars(wj.Grid()),
        **vars(wj.Reads()),
        "memory_cap": wj.Run().memory_cap,
        **{name: value for name, value in vars(wj.Tiers()).items() if name != "journal_budgets"},
    }
    for name in ("modes", "n_episodes", "steps", "seed", "budgets", "policies", "tracks", "oracle", "memory_cap",
                 "top_k", "probes", "probe_rate", "crash_rate", "calls_per_step", "call_burst", "engine"):  # fmt: skip
        expected = list(defaults[name]) if isinstance(defaults[name], tuple) else defaults[name]
        assert args[name] == expected, name
    assert args["journal_budgets"] is None and args["retriever"] is None and args["param"] is None


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "results.csv"
    assert main(["sweep", *SMALL_ARGV, "--out", str(out), "--quiet"]) == 0
    return out


def test_sweep_from_python_gives_the_cli_rows(cli_run):
    table = wj.sweep(**SMALL)
    pd.testing.assert_frame_equal(table, pd.read_csv(cli_run, dtype={"mode": str}), check_dtype=False)


def test_sweep_to_a_file_writes_what_the_cli_writes(cli_run, tmp_path):
    done = wj.sweep(**SMALL, out=tmp_path / "results.csv")
    assert (tmp_path / "results.csv").read_bytes() == cli_run.read_bytes()
    ours, theirs = read_sidecar(sidecar_path(done.path)), read_sidecar(sidecar_path(cli_run))
    for key in ("budgets", "tracks", "policy_params", "oracle", "episodes", "rows", "results", "seeds"):
        assert ours[key] == theirs[key], key
    assert done.rows == ours["rows"] == len(pd.read_csv(cli_run)) and ours["results"]["sha256"] == sha256(cli_run)
    assert list(done.leaderboard.columns) == [1024, 10240]


def test_report_from_python(cli_run, tmp_path):
    written = wj.report(cli_run, tmp_path / "rep", budget=1024)
    assert str(tmp_path / "rep" / "leaderboard.md") in written and (tmp_path / "rep" / "regret_curve.csv").exists()


def test_simulate_returns_the_sweep_metrics():
    episodes = wj.episodes.generate(modes=["default"], n_episodes=3, steps=40)
    metrics = wj.simulate("priority_greedy", episodes, [1024, 10240], track="privileged")
    rows = wj.sweep(episodes, grid=wj.Grid([1024, 10240], policies=["priority_greedy"], tracks=["privileged"]))
    for name in ("f1", "regret", "bytes_used", "tp", "tn", "merge_actions"):
        assert metrics[name].shape == (3, 2)
        np.testing.assert_array_equal(
            metrics[name].T.ravel(), rows[name].to_numpy(), err_msg=name
        )  # rows: budget-major
    tuned = wj.simulate(wj.policies.get("priority_threshold", threshold=2.0), episodes, [10240], track="privileged")
    assert (tuned["write_actions"] == 0).all()  # no priority exceeds 2


def test_simulate_checks_its_inputs():
    episodes = wj.episodes.generate(modes=["default"], n_episodes=2, steps=20)
    with pytest.raises(ValueError, match="budgets must be whole numbers"):
        wj.simulate("no_mem", episodes, [0])
    with pytest.raises(ValueError, match="budgets must be a 1-D list"):
        wj.simulate("no_mem", episodes, [[1024]])
    with pytest.raises(ValueError, match="episodes: expected encoded episodes"):
        wj.simulate("no_mem", [{"steps": []}], [1024])
    with pytest.raises(ValueError, match="track: policy 'priority_greedy' runs on tracks privileged"):
        wj.simulate("priority_greedy", episodes, [1024], track="unprivileged")

    class Corrupt:  # encoded episodes whose write costs came out as floats
        def __getattr__(self, name):
            return getattr(episodes, name)

        def host_batch(self, track):
            batch = episodes.host_batch(track)
            return dataclasses.replace(batch, write_cost=np.asarray(batch.write_cost, np.float32))

    with pytest.raises(ValueError, match=r"episodes\.write_cost"):
        wj.simulate("no_mem", Corrupt(), [1024])
    with pytest.raises(ValueError, match="policy 'priority_threshold' has no param treshold"):
        wj.policies.get("priority_threshold", treshold=0.5)


def test_sweep_refuses_repeats_that_would_duplicate_rows():
    """The CLI drops repeated --budgets/--policies with a warning; the library refuses them (both
    before any episode is made), so no caller ever gets duplicate rows."""
    with pytest.raises(ValueError, match="budgets lists 1024 more than once"):
        wj.sweep(wj.Generate(n_episodes=1), grid=wj.Grid([1024, 2048, 1024]))
    with pytest.raises(ValueError, match="policies lists no_mem more than once"):
        wj.sweep(wj.Generate(n_episodes=1), grid=wj.Grid([1024], policies=["no_mem", "fifo_store_all", "no_mem"]))


@pytest.mark.parametrize("engine", ["python", "jax"])
def test_episode_source_round_trips(engine):
    source = EpisodeSource.generated(
        ["default", "redundancy"], n_episodes=2, engine=engine, steps=30, seed=5, drift_prob=0.2
    )
    again = EpisodeSource.from_dict(json.loads(json.dumps(source.to_dict())))
    assert again == source
    first, second = source.load(), again.load()
    np.testing.assert_array_equal(first.track_costs("privileged"), second.track_costs("privileged"))
    assert list(first.episode_id) == list(second.episode_id) and first.n_episodes == 4


def test_episode_source_files_and_no_old_names(tmp_path):
    path = tmp_path / "ep.jsonl"
    with pytest.raises(ValueError, match="engine: unknown generator engine 'reference'"):
        wj.episodes.write_generated(
            path, "burst_drift", 3, steps=25, engine="reference"
        )  # the python engine's old name
    with pytest.raises(ValueError, match="unknown oracle mode 'reference'"):
        wj.sweep(wj.Generate(n_episodes=1), grid=wj.Grid(oracle="reference"))  # published_rule's old name
    with pytest.raises(ValueError, match="policy 'reference'"):
        wj.sweep(wj.Generate(n_episodes=1), grid=wj.Grid(policies="reference"))  # the published line-up's old name
    assert wj.episodes.write_generated(path, "burst_drift", 3, steps=25, engine="python") == 3
    record = EpisodeSource.from_files(path).to_dict()
    assert record == {"source": "files", "files": [{"path": str(path), "sha256": sha256(path)}]}
    encoded, sets = EpisodeSource.from_dict(record).load_sets()
    assert encoded.n_episodes == 3 and sets.tolist() == [0, 0, 0]
    path.write_text(path.read_text().replace('"t": 0', '"t": 0 ', 1))
    with pytest.raises(ValueError, match="changed since the sweep"):
        EpisodeSource.from_dict(record).load()
    with pytest.raises(ValueError, match="unknown mode 'rollback' for the python engine.*need the jax engine"):
        EpisodeSource.generated(["rollback"])
    with pytest.raises(ValueError, match="unknown generator setting drift"):
        wj.episodes.generate(drift=0.1)


def test_a_users_policy_sweeps_from_python_and_the_cli(tmp_path):
    """A policy written against the docs (act returns an Action and the state), registered, sweeps."""
    from wpbjax.state import actions, store

    def act(params, state, store_state, episode, pos, budget):
        fits = episode.write_cost[pos] <= store.remaining(store_state, budget)
        return actions.write_if(fits & (episode.priority[pos] >= params["floor"])), state

    wj.policies.register(
        wj.policies.Policy("test_api_floor", act, params={"floor": 0.5}, emits={"write"}, layout=()), replace=True
    )
    table = wj.sweep(SMALL["episodes"], grid=wj.Grid([1024, 10240], policies=["test_api_floor"], tracks=["privileged"]))
    assert len(table) == 4 * 2 and set(table.policy) == {"test_api_floor"}
    out = tmp_path / "mine.csv"
    assert (
        main(
            [
                "sweep",
                *SMALL_ARGV,
                "--policies",
                "test_api_floor",
                "--tracks",
                "privileged",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_csv(out, dtype={"mode": str}), table, check_dtype=False)
