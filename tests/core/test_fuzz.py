"""Fuzzing: random malformed episode files, package directories, exported stores, WRIT scenarios and random
argument lists get a successful run or one error line with exit status 2, never a traceback (an internal
error, status 1, fails the test).

Examples are derandomised so CI is repeatable; ``WPBJAX_FUZZ_EXAMPLES=2000`` explores further.
"""

import json
import os

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from wpbjax.cli import main
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.jsonl import EpisodeFormatError, load_jsonl
from wpbjax.scoring import oracle as oracle_lib

SCALE = int(os.environ.get("WPBJAX_FUZZ_EXAMPLES", "0")) or 1


def fuzz_settings(examples: int):
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


# --- episode files ---------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.sampled_from([2**31, -(2**31), 2**63, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, 3.5e38, -3e38, 5e-324, 0.5]),
    st.text(max_size=6),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=12,
)


def valid_episode(n_steps: int) -> dict:
    steps = [
        {"t": 2 * t, "observation": {"api": f"api.v{t % 3}.e{t % 2}", "n": t}, "metadata": {"priority": t / 8}}
        for t in range(n_steps)
    ]
    labels = {
        "episode_id": 0,
        "mode": "fuzz",
        "critical_steps": [0],
        "total_drift_events": 1,
        "utility_by_step": {str(2 * t): 1.0 + t for t in range(n_steps)},
    }
    return {"labels": labels, "steps": steps}


# paths inside a valid episode where a random value is planted
PLANT_AT = [
    ("labels",),
    ("labels", "critical_steps"),
    ("labels", "utility_by_step"),
    ("labels", "utility_by_step", "0"),
    ("labels", "utility_by_step", "2"),
    ("labels", "total_drift_events"),
    ("labels", "episode_id"),
    ("labels", "mode"),
    ("steps",),
    ("steps", 0),
    ("steps", 1, "t"),
    ("steps", 0, "metadata"),
    ("steps", 1, "metadata", "priority"),
    ("steps", 0, "observation"),
    ("steps", 1, "observation", "api"),
    ("steps", 2, "observation", "n"),
    ("labels", "crashes"),
    ("labels", "probes"),
]


def _plant(draw, tree, paths):
    """Replace the value at one of ``paths`` in ``tree`` by a random JSON value, or drop that key."""
    *parents, last = draw(st.sampled_from(paths))
    node = tree
    for key in parents:
        node = node[key]
    if draw(st.booleans()) and isinstance(node, dict):
        node.pop(last, None)
    else:
        node[last] = draw(json_values)


@st.composite
def mutated_episode(draw, n_steps=st.integers(3, 6)) -> str:
    """A valid episode with one value replaced (or a key dropped), as one JSON line."""
    episode = valid_episode(draw(n_steps))
    _plant(draw, episode, PLANT_AT)
    return json.dumps(episode)


episode_lines = st.one_of(
    mutated_episode(),
    mutated_episode(),
    st.builds(json.dumps, json_values),
    st.text(max_size=40),
    st.just(json.dumps(valid_episode(4))),
)
episode_files = st.one_of(
    st.lists(episode_lines, min_size=0, max_size=4).map(
        lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=64),
)


@fuzz_settings(150)
@given(content=episode_files)
def test_loader_accepts_or_names_the_problem(tmp_path_factory, content):
    """load_jsonl returns episodes the encoder and the oracle take without inf/NaN, or the loader or the
    encoder raises EpisodeFormatError naming the file, in one line."""
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.jsonl"
    path.write_bytes(content)
    try:
        episodes = load_jsonl(path)
    except EpisodeFormatError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err)
        return
    try:  # the labels the loader leaves to the encoder (probes, crashes: they name steps) fail here
        encoded = encode_episodes(episodes, source=str(path), validate=False)
    except EpisodeFormatError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err)
        return
    assert np.isfinite(encoded.utility64).all() and np.isfinite(encoded.arrays.utility).all()
    assert np.isfinite(encoded.arrays.priority).all()
    for costs, utility, length in zip(encoded.track_costs("privileged"), encoded.utility64, encoded.arrays.length):
        assert np.isfinite(oracle_lib.published_rule(costs[:length], utility[:length], [64, 1024, 1 << 20])).all()


# --- the command line ------------------------------------------------------------------------


def _one_error_line(err: str) -> bool:
    lines = [line for line in err.splitlines() if ": warning: " not in line]
    return len(lines) == 1 and ": error: " in lines[0] and "Traceback" not in err


def _run(argv, capsys) -> int:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's errors (and --help)
        code = exit_info.code
    err = capsys.readouterr().err
    assert code in (0, 2), f"{argv}: status {code}: {err}"
    assert code == 0 or _one_error_line(err), f"{argv}: {err!r}"
    return code


@fuzz_settings(12)
@given(content=st.lists(mutated_episode(st.just(4)), min_size=1, max_size=2).map("\n".join))
def test_sweep_on_fuzzed_files(tmp_path_factory, capsys, content):
    """Through the whole sweep (one small shape, so that one compiled program serves most examples)."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "e.jsonl").write_text(content)
    _run(
        [
            "sweep",
            "--episodes",
            str(root / "e.jsonl"),
            "--budgets",
            "256",
            "--policies",
            "fifo_store_all",
            "--tracks",
            "privileged",
            "--out",
            str(root / "r.csv"),
            "--quiet",
        ],
        capsys,
    )


garbage = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["", ",", "-1", "0", "inf", "nan", "1e400", "1k", "1,,2", "999999999999", " ", "--quiet", "\x00"]),
)
small_ints = st.integers(-2, 12).map(str)
SWEEP_FLAGS = {
    "--budgets": st.one_of(
        garbage, st.lists(st.integers(-5, 5000), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v)))
    ),
    "--policies": st.one_of(
        garbage,
        st.sampled_from(
            ["no_mem", "no_mem,no_mem", "fifo_store_all", "priority_greedy", "nope", "learned_gate:missing.npz"]
        ),
    ),
    "--tracks": st.one_of(garbage, st.sampled_from(["privileged", "unprivileged,unprivileged", "oracle", "feedback"])),
    "--modes": st.one_of(garbage, st.sampled_from(["default", "redundancy,redundancy", "rollback", "calm"])),
    "--n-episodes": st.one_of(garbage, st.integers(-1, 2).map(str), st.just("1000000000")),
    "--steps": st.one_of(garbage, small_ints, st.just("2000000000")),
    "--seed": st.one_of(garbage, st.integers(-(2**70), 2**70).map(str)),
    "--memory-cap": st.one_of(garbage, st.sampled_from(["64K", "1G", "infG", "-1G", "2T"])),
    "--oracle": st.one_of(garbage, st.sampled_from(["exact", "published_rule"])),
    "--param": st.one_of(garbage, st.sampled_from(["threshold=0:1:3", "threshold=1:0:0", "p=nan", "=1", "x=1,2"])),
    "--drift-prob": st.one_of(garbage, st.sampled_from(["0.5", "1.5", "-0.1"])),
    "--api-pool": st.one_of(garbage, small_ints),
    "--max-params": st.one_of(garbage, small_ints),
    "--burst-len": st.one_of(garbage, small_ints),
    "--burst-interval": st.one_of(garbage, small_ints),
    "--out": st.one_of(garbage, st.sampled_from(["OUT/r.txt", "OUT", "/no/such/dir/r.csv", "OUT/r.parquet"])),
    "--episodes": st.sampled_from(["OUT/missing.jsonl", "OUT", "OUT/r.csv"]),
    "--engine": st.one_of(garbage, st.just("python")),
}
GENERATE_FLAGS = {
    name: SWEEP_FLAGS[name]
    for name in (
        "--seed",
        "--drift-prob",
        "--api-pool",
        "--max-params",
        "--burst-len",
        "--burst-interval",
        "--engine",
        "--steps",
    )
}
GENERATE_FLAGS.update(
    {"--mode": SWEEP_FLAGS["--modes"], "--episodes": st.one_of(garbage, small_ints), "--out": SWEEP_FLAGS["--out"]}
)
REPORT_FLAGS = {
    "--budget": st.one_of(garbage, small_ints),
    "--curve-budget": st.one_of(garbage, small_ints),
    "--meta": st.sampled_from(["OUT/missing.json", "OUT/bad.json"]),
    "--out": SWEEP_FLAGS["--out"],
}


@st.composite
def command_lines(draw) -> list:
    """A command and random flags with random values; sizes stay small so that a run that succeeds is fast."""
    command = draw(st.sampled_from(["sweep", "sweep", "sweep", "generate", "report", "nonsense"]))
    flags = {"sweep": SWEEP_FLAGS, "generate": GENERATE_FLAGS, "report": REPORT_FLAGS}.get(command, SWEEP_FLAGS)
    argv = [command]
    if command == "report":
        argv.append(draw(st.sampled_from(["OUT/missing.csv", "OUT/bad.json", "OUT", "OUT/r.csv"])))
    for name in draw(st.lists(st.sampled_from(sorted(flags)), max_size=4)):
        argv += [name, draw(flags[name])]
    if command == "sweep":  # what the random flags did not set: small, fast values
        argv = (
            argv[:1]
            + [
                "--n-episodes",
                "1",
                "--steps",
                "6",
                "--budgets",
                "512",
                "--policies",
                "no_mem",
                "--modes",
                "default",
                "--out",
                "OUT/r.csv",
            ]
            + argv[1:]
        )
    if command == "generate":
        argv = argv[:1] + ["--steps", "6", "--episodes", "1", "--out", "OUT/e.jsonl"] + argv[1:]
    argv += draw(st.lists(st.one_of(st.text(max_size=10), st.sampled_from(sorted(flags))), max_size=2))  # stray tokens
    return argv + (["--quiet"] if draw(st.booleans()) else [])


@fuzz_settings(60)
@given(argv=command_lines())
def test_random_command_lines(tmp_path_factory, capsys, argv):
    root = tmp_path_factory.mktemp("fuzz")
    (root / "bad.json").write_text("{")
    (root / "r.csv").write_text("policy,f1\nx,abc\n")
    here = os.getcwd()
    os.chdir(root)  # a random relative path (`--out 0`) lands in the example's directory, not the repo
    try:
        _run([arg.replace("OUT", str(root)) for arg in argv], capsys)
    finally:
        os.chdir(here)


# --- packages (MEMAUDIT export layout) and exported stores -----------------------------------


def valid_package() -> dict:
    """The files of a small package and a store scored against it, as JSON values (file name -> rows or object)."""
    candidates = [
        {"candidate_id": "a", "experience_id": "e1", "representation_type": "atomic_fact", "cost": 2,
         "coverage": {"u1": 1.0}},
        {"candidate_id": "b", "experience_id": "e1", "representation_type": "raw_span", "cost": {"total": 4},
         "coverage": [{"unit_id": "u1", "fidelity": 1.0}, {"unit_id": "u2", "fidelity": 0.5}]},
    ]  # fmt: skip
    instance = {"instance_id": "fuzz", "unit_weights": {"u1": 2.0, "u2": 1.0}, "invalidation_units": ["u2"]}
    store = [{"memory_id": "m1", "cost": 1, "coverage": {"u2": 1.0}}, {"memory_id": "m2", "cost": 3, "coverage": {}}]
    return {"candidate_memories.jsonl": candidates, "instance.json": instance, "store.jsonl": store}


PACKAGE_PLANT_AT = [
    ("candidate_memories.jsonl", 0),
    ("candidate_memories.jsonl", 0, "candidate_id"),
    ("candidate_memories.jsonl", 0, "experience_id"),
    ("candidate_memories.jsonl", 0, "representation_type"),
    ("candidate_memories.jsonl", 0, "cost"),
    ("candidate_memories.jsonl", 1, "cost", "total"),
    ("candidate_memories.jsonl", 0, "coverage"),
    ("candidate_memories.jsonl", 0, "coverage", "u1"),
    ("candidate_memories.jsonl", 1, "coverage", 1, "fidelity"),
    ("candidate_memories.jsonl", 1, "coverage", 0, "unit_id"),
    ("instance.json", "unit_weights"),
    ("instance.json", "unit_weights", "u1"),
    ("instance.json", "invalidation_units"),
    ("instance.json", "instance_id"),
    ("store.jsonl", 0, "cost"),
    ("store.jsonl", 0, "coverage"),
    ("store.jsonl", 0, "coverage", "u2"),
    ("store.jsonl", 1, "memory_id"),
]


@st.composite
def mutated_package(draw) -> dict:
    files = valid_package()
    _plant(draw, files, PACKAGE_PLANT_AT)
    return files


def _write_files(directory, files: dict) -> None:
    for name, value in files.items():
        if name.endswith(".jsonl"):
            text = "\n".join(json.dumps(row) for row in value) if isinstance(value, list) else json.dumps(value)
        else:
            text = json.dumps(value)
        (directory / name).write_text(text + "\n")


@fuzz_settings(40)
@given(files=mutated_package())
def test_packages_score_on_fuzzed_packages_and_stores(tmp_path_factory, capsys, files):
    """`packages score` reads the package and the store, solves OPT and scores: a result or one line."""
    root = tmp_path_factory.mktemp("fuzz")
    package = root / "pkg"
    package.mkdir()
    store = files.pop("store.jsonl")
    _write_files(package, files)
    _write_files(root, {"store.jsonl": store})
    argv = ["packages", "score", "--package", str(package), "--store", str(root / "store.jsonl"), "--budget", "3,4"]
    _run([*argv, "--out", str(root / "s.csv"), "--quiet"], capsys)


# --- WRIT scenarios (import-writ) ------------------------------------------------------------


def valid_scenario() -> dict:
    """A WRIT scenario in the published files' schema (../shared/writ/scenarios): a fact updated in session 2."""
    history = [
        {"value": "Oslo", "as_of": "2026-01-01T00:00:00Z", "source_session": 1},
        {"value": "Bergen", "as_of": "2026-01-08T00:00:00Z", "source_session": 2},
    ]
    return {
        "sessions": [
            {"session_id": 1, "timestamp": "2026-01-01T00:00:00Z",
             "messages": [{"role": "user", "content": "I live in Oslo."}]},
            {"session_id": 2, "timestamp": "2026-01-08T00:00:00Z",
             "messages": [{"role": "user", "content": "I moved to Bergen."}]},
        ],
        "memory_events": [
            {"id": "city", "type": "mutable", "value": "Bergen", "introduced_in": 1, "updated_in": 2,
             "retracted_in": None, "should_persist": True, "previous_values": history},
        ],
        "probe": {"session": 3, "prompt": "Where do I live?", "should_abstain": False},
        "ground_truth": {"current_value": "Bergen", "value_history": history,
                         "provenance": {"source_session": 2, "source_message_index": 0}},
    }  # fmt: skip


SCENARIO_PLANT_AT = [
    ("sessions",),
    ("sessions", 0),
    ("sessions", 0, "session_id"),
    ("sessions", 1, "timestamp"),
    ("sessions", 0, "messages"),
    ("sessions", 1, "messages", 0),
    ("sessions", 1, "messages", 0, "content"),
    ("memory_events",),
    ("memory_events", 0, "id"),
    ("memory_events", 0, "type"),
    ("memory_events", 0, "value"),
    ("memory_events", 0, "introduced_in"),
    ("memory_events", 0, "updated_in"),
    ("memory_events", 0, "retracted_in"),
    ("memory_events", 0, "should_persist"),
    ("memory_events", 0, "previous_values"),
    ("memory_events", 0, "previous_values", 0, "source_session"),
    ("memory_events", 0, "previous_values", 1, "as_of"),
    ("probe",),
    ("probe", "session"),
    ("probe", "should_abstain"),
    ("ground_truth", "current_value"),
    ("ground_truth", "value_history"),
    ("ground_truth", "provenance", "source_session"),
]


@st.composite
def mutated_scenario(draw) -> str:
    scenario = valid_scenario()
    _plant(draw, scenario, SCENARIO_PLANT_AT)
    return json.dumps(scenario)


@fuzz_settings(80)
@given(content=st.one_of(mutated_scenario(), mutated_scenario(), st.builds(json.dumps, json_values)))
def test_import_writ_on_fuzzed_scenarios(tmp_path_factory, capsys, content):
    """`import-writ` (no JAX) writes episodes the encoder takes, or names the file in one line."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "s.json").write_text(content)
    if _run(["import-writ", str(root / "s.json"), "--out", str(root / "w.jsonl"), "--quiet"], capsys) == 0:
        encode_episodes(load_jsonl(root / "w.jsonl"), source="w.jsonl")
