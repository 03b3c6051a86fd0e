"""Bad package directories, exported stores and WRIT scenarios (issue 25): each gets one line on stderr
naming the file, line (or field) and status 2, never an internal error (status 1) or a silently wrong
number (status 0 with inf, NaN or a wrapped int32 in the table).

Each case: files written to tmp_path, the command line, and a fragment of the one error line."""

import json
import pathlib

import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.episodes.importers.writ import import_writ
from wpbjax.episodes.jsonl import EpisodeFormatError
from wpbjax.packages.external import read_store, score_store
from wpbjax.packages.io import PackageFormatError, read_packages
from wpbjax.packages.sweeps import run

SCENARIOS = pathlib.Path(__file__).resolve().parents[3] / "shared" / "writ" / "scenarios"
DRIFT = "drift-001-employer-change.json"  # previous_values, value_history and provenance: every field below


def _jsonl(rows) -> bytes:
    """Rows (objects, or lines as text or bytes) as JSON lines."""
    lines = [
        row if isinstance(row, bytes) else (row if isinstance(row, str) else json.dumps(row)).encode() for row in rows
    ]
    return b"\n".join(lines) + b"\n"


def _candidate(cid="a", group="e1", **fields) -> dict:
    return {
        "candidate_id": cid,
        "experience_id": group,
        "representation_type": "atomic_fact",
        "cost": 1,
        "coverage": {"u1": 1.0},
        **fields,
    }


GOOD_CANDIDATES = [_candidate("a", "e1"), _candidate("b", "e2", cost=2, coverage={"u2": 0.5})]


def package(candidates=GOOD_CANDIDATES, name="pkg", **files):
    """Builder of a package directory: candidate_memories.jsonl from ``candidates``, and any of
    ``coverage_matrix``, ``evidence_units`` (rows), ``instance`` (an object, or text/bytes)."""

    def write(tmp_path) -> str:
        directory = tmp_path / name
        directory.mkdir(exist_ok=True)
        (directory / "candidate_memories.jsonl").write_bytes(
            candidates if isinstance(candidates, bytes) else _jsonl(candidates)
        )
        for stem in ("coverage_matrix", "evidence_units"):
            if stem in files:
                (directory / f"{stem}.jsonl").write_bytes(_jsonl(files[stem]))
        if "instance" in files:
            instance = files["instance"]
            (directory / "instance.json").write_bytes(
                instance if isinstance(instance, bytes) else json.dumps(instance).encode()
            )
        return str(directory)

    return write


def store(memories, name="store.jsonl"):
    """Builder of an exported store file (memory objects, or raw bytes)."""

    def write(tmp_path) -> str:
        (tmp_path / name).write_bytes(memories if isinstance(memories, bytes) else _jsonl(memories))
        return str(tmp_path / name)

    return write


def scenario(edit=None, text=None):
    """Builder of a WRIT scenario file: the shared drift-001 scenario changed by ``edit(scenario)``, or
    ``text`` (bytes) as it is."""

    def write(tmp_path) -> str:
        path = tmp_path / "s.json"
        if text is not None:
            path.write_bytes(text)
            return str(path)
        source = SCENARIOS / DRIFT
        if not source.exists():
            pytest.skip(f"WRIT scenarios not found at {SCENARIOS}")
        data = json.loads(source.read_text())
        edit(data)
        path.write_text(json.dumps(data))
        return str(path)

    return write


def _set(path: str, value):
    """An edit: the value at a dotted path (list indices as numbers) set to ``value``."""

    def edit(data):
        *parents, last = [int(key) if key.isdigit() else key for key in path.split(".")]
        node = data
        for key in parents:
            node = node[key]
        node[last] = value

    return edit


def sweep(pkg, *extra):
    return ["packages", "sweep", "--packages", pkg, "--budgets", "2", "--methods", "opt", "--quiet", *extra]


def score(pkg, memories, *extra, budget="2"):
    return ["packages", "score", "--package", pkg, "--store", memories, "--budget", budget, "--quiet", *extra]


def writ(path):
    return ["import-writ", path, "--out", lambda tmp: str(tmp / "out.jsonl"), "--quiet"]


NAN_COST = b'{"candidate_id": "a", "experience_id": "e1", "cost": NaN, "coverage": {"u1": 1}}'
LATIN1 = '{"candidate_id": "caf\u00e9", "experience_id": "e1", "cost": 1, "coverage": {"u1": 1}}'.encode("latin-1")
DEEP = b"[" * 100_000 + b"]" * 100_000
BIG = 2_000_000_000  # fits int32 alone; two of them do not

# name: (command line: strings and builders of tmp_path, fragment of the one error line)
CASES = {
    # numbers past int32 (OverflowError, status 1, on cab8c87) or past what the solvers compute exactly
    "package cost 3e9": (
        sweep(package([_candidate(cost=3_000_000_000)])),
        "candidate_memories.jsonl:1: field 'cost': must be an integer in 0..16,777,216",
    ),
    "package cost 1e20": (
        sweep(package([_candidate(cost=1e20)])),
        "candidate_memories.jsonl:1: field 'cost': must be an integer in 0..16,777,216",
    ),
    "package cost.total 3e9": (
        sweep(package([_candidate(cost={"total": 3_000_000_000})])),
        "candidate_memories.jsonl:1: field 'cost.total': must be an integer in 0..",
    ),
    "package cost NaN": (
        sweep(package([NAN_COST])),
        "candidate_memories.jsonl:1: field 'cost': must be an integer in 0..16,777,216 (2^24), got nan",
    ),
    "package time_index 1e12": (
        sweep(package([_candidate(time_index=1e12)])),
        "candidate_memories.jsonl:1: field 'time_index': must be an integer in 0..1,073,741,823",
    ),
    "sweep --budgets 1000,3000000000": (
        ["packages", "sweep", "--seeds", "1", "--budgets", "1000,3000000000", "--methods", "opt", "--quiet"],
        "--budgets",
    ),
    # item 10: two memories costing 2e9 each, --budget 3e9: the as-written cost wrapped to -294,967,296 and fit
    "store costs 2e9 + 2e9, --budget 3e9": (
        score(
            package(),
            store(
                [
                    {"memory_id": "m1", "cost": BIG, "coverage": {"u1": 1}},
                    {"memory_id": "m2", "cost": BIG, "coverage": {"u2": 1}},
                ]
            ),
            budget="3000000000",
        ),
        "--budget",
    ),
    "store memory cost 3e9": (
        score(package(), store([{"memory_id": "m1", "cost": 3_000_000_000, "coverage": {"u1": 1}}])),
        "store.jsonl:1: field 'cost': must be an integer in 0..16,777,216",
    ),
    "store memory cost 2e9": (
        score(package(), store([{"memory_id": "m1", "cost": BIG, "coverage": {"u1": 1}}])),
        "store.jsonl:1: field 'cost': must be an integer in 0..16,777,216",
    ),
    "score --budget 3000000000": (
        score(package(), store([{"memory_id": "m1", "cost": 1, "coverage": {"u1": 1}}]), budget="3000000000"),
        "--budget",
    ),
    "store time_index 1e12": (
        score(package(), store([{"memory_id": "m", "cost": 1, "coverage": {}, "time_index": 1e12}])),
        "store.jsonl:1: field 'time_index'",
    ),
    # item 11: weights, coverages and values past float32 gave inf / NaN ratios with status 0
    "unit weights 1e308": (
        sweep(package(instance={"unit_weights": {"u1": 1e308, "u2": 1e308}})),
        "instance.json: field 'unit_weights[u1]': must be a finite number in 0..3.403e+38",
    ),
    "unit weight Infinity": (
        sweep(package(instance=b'{"unit_weights": {"u1": Infinity, "u2": 1}}')),
        "instance.json: field 'unit_weights[u1]': must be a finite number",
    ),
    "evidence unit weight 1e300": (
        sweep(package(evidence_units=[{"unit_id": "u1", "unit_weight": 1e300}])),
        "evidence_units.jsonl:1: field 'unit_weight': must be a finite number",
    ),
    "weights summing past float32": (
        sweep(package(instance={"unit_weights": {"u1": 3e38, "u2": 3e38}})),
        "pkg: unit weights times coverage sum to 6e+38",
    ),
    "coverage 1e308": (
        sweep(package(coverage_matrix=[{"candidate_id": "a", "unit_id": "u1", "coverage": 1e308}])),
        "coverage_matrix.jsonl:1: field 'coverage': must be a finite number",
    ),
    "coverage cells summing past float32": (
        sweep(package(coverage_matrix=[{"candidate_id": "a", "unit_id": "u1", "coverage": 3e38}] * 2)),
        "coverage_matrix.jsonl:2: field 'coverage': the unit's coverages sum past float32 range",
    ),
    "store coverage past the union's range": (
        score(
            package(instance={"unit_weights": {"u1": 1e38, "u2": 1.0}}),
            store([{"memory_id": "m1", "cost": 1, "coverage": {"u1": 3e38}}]),
        ),
        "store.jsonl: the package's unit weights times its and the store's coverage sum to",
    ),
    # TypeError, status 1, on cab8c87
    "invalidation_units 5": (
        sweep(package(instance={"invalidation_units": 5})),
        "instance.json: field 'invalidation_units': expected a list of unit ids, got 5",
    ),
    "unit_weights a list": (
        sweep(package(instance={"unit_weights": [1, 2]})),
        "instance.json: field 'unit_weights': expected a mapping unit -> weight",
    ),
    "unit_id a list": (
        sweep(package(coverage_matrix=[{"candidate_id": "a", "unit_id": [1], "coverage": 1}])),
        "coverage_matrix.jsonl:1: field 'unit_id': expected a non-empty string or an integer",
    ),
    # a package with no units: "cannot reshape array of size 0" on cab8c87
    "package with no units": (sweep(package([_candidate(coverage={})], coverage_matrix=[])), "pkg: no evidence units"),
    # files that are not UTF-8 or not JSON a parser can hold name themselves
    "non-UTF-8 package file": (sweep(package(LATIN1)), "candidate_memories.jsonl:1: not UTF-8 text (byte 0xe9"),
    "non-UTF-8 instance.json": (
        sweep(package(instance='{"seed": "\u00e9"}'.encode("latin-1"))),
        "instance.json:1: not UTF-8 text (byte 0xe9",
    ),
    "non-UTF-8 store": (score(package(), store(LATIN1)), "store.jsonl:1: not UTF-8 text (byte 0xe9"),
    "package file nested 100k deep": (
        sweep(package([DEEP])),
        "candidate_memories.jsonl:1: not valid JSON (nested too deeply",
    ),
    "instance.json nested 100k deep": (
        sweep(package(instance=DEEP)),
        "instance.json: not valid JSON (nested too deeply",
    ),
    # import-writ: TypeError / RecursionError, status 1, on cab8c87
    "writ session_id [1]": (
        writ(scenario(_set("sessions.0.session_id", [1]))),
        "s.json: sessions[0].session_id: must be a string or an integer, got [1]",
    ),
    "writ source_session [1]": (
        writ(scenario(_set("memory_events.0.previous_values.0.source_session", [1]))),
        "s.json: memory_events[0].previous_values[0].source_session: names no session ([1])",
    ),
    "writ updated_in {}": (
        writ(scenario(_set("memory_events.0.updated_in", {}))),
        "s.json: memory_events[0].updated_in: must be a session id",
    ),
    "writ value_history 5": (
        writ(scenario(_set("ground_truth.value_history", 5))),
        "s.json: ground_truth.value_history: must be a list, got 5",
    ),
    "writ provenance source_session [1]": (
        writ(scenario(_set("ground_truth.provenance.source_session", [1]))),
        "s.json: ground_truth.provenance.source_session: must be a session id",
    ),
    "writ nested 100k deep": (writ(scenario(text=DEEP)), "s.json: not valid JSON (nested too deeply"),
    "writ not UTF-8": (
        writ(scenario(text='{"sessions": "\u00e9"}'.encode("latin-1"))),
        "s.json:1: not UTF-8 text (byte 0xe9",
    ),
    "writ message nested 150 deep": (
        writ(scenario(_set("sessions.0.messages", json.loads("[" * 150 + "]" * 150)))),
        "s.json: nested more than 100 levels deep",
    ),
}


def _prog(argv) -> str:
    """The command an error line starts with: ``wpbjax packages sweep``, ``wpbjax import-writ``."""
    return "wpbjax " + " ".join(argv[:2] if argv[0] == "packages" else argv[:1])


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_naming_it_with_status_2(case, capsys, tmp_path):
    argv, fragment = CASES[case]
    argv = [arg(tmp_path) if callable(arg) else arg for arg in argv]
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's errors
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"{_prog(argv)}: error: "), err
    assert fragment in err, err
    assert not (tmp_path / "out.jsonl").exists()


# --- the same checks from Python: PackageFormatError / EpisodeFormatError / ValueError ---------------


def test_python_callers_get_the_same_errors(tmp_path):
    pkg = package(instance={"unit_weights": {"u1": 1e308}})(tmp_path)
    with pytest.raises(PackageFormatError, match=r"instance.json: field 'unit_weights\[u1\]'"):
        read_packages([pkg])
    good = read_packages([package(name="good")(tmp_path)])
    with pytest.raises(
        ValueError, match=r"budgets: each must be an integer in 0..16,777,216 \(2\^24\), got 3000000000"
    ):
        run(good, [1000, 3_000_000_000], ["opt"])
    with pytest.raises(PackageFormatError, match=r"store.jsonl:1: field 'cost'"):
        read_store(store([{"memory_id": "m", "cost": 3e9, "coverage": {}}])(tmp_path), good.meta.unit_ids[0])
    memories = read_store(
        store([{"memory_id": "m", "cost": 1, "coverage": {"u1": 1}}])(tmp_path), good.meta.unit_ids[0]
    )
    with pytest.raises(ValueError, match="budgets: each must be an integer in 0..16,777,216"):
        score_store(good, memories, [3_000_000_000])
    with pytest.raises(EpisodeFormatError, match=r"ground_truth.value_history: must be a list"):
        import_writ([scenario(_set("ground_truth.value_history", 5))(tmp_path)])


def test_store_costs_are_summed_past_int32(tmp_path, capsys):
    """129 memories at the largest cost, 2^24 each: the store costs 129 * 2^24 = 2,164,260,864, past
    int32 (on cab8c87 it wrapped to -2,130,706,432 and the whole store "fit" a budget of 2^24). Summed in
    int64 it is over the budget: ``as_written`` is infeasible (value NaN); recency pruning keeps only the
    newest memory, m128 (each alone fits exactly)."""
    limit, count = 2**24, 129
    out = tmp_path / "rows.csv"
    memories = [{"memory_id": f"m{i}", "cost": limit, "coverage": {"u1": 1}} for i in range(count)]
    argv = score(package()(tmp_path), store(memories)(tmp_path), "--out", str(out), budget=str(limit))
    assert main(argv) == 0, capsys.readouterr().err
    rows = pd.read_csv(out).set_index("selection")
    assert rows.loc["as_written", "store_cost"] == count * limit == 2_164_260_864
    assert pd.isna(rows.loc["as_written", "value"])
    assert rows.loc["recency_pruned", "cost"] == limit and rows.loc["recency_pruned", "memories"] == 1


# --- repeated budgets, methods and packages (item 12) ---------------------------------------------


def test_repeats_are_refused_from_python(tmp_path):
    pkg = package()(tmp_path)
    pset = read_packages([pkg])
    with pytest.raises(ValueError, match="budgets lists 2 more than once"):
        run(pset, [2, 4, 2], ["opt"])
    with pytest.raises(ValueError, match="methods lists opt more than once"):
        run(pset, [2], ["opt", "greedy", "opt"])
    with pytest.raises(PackageFormatError, match="more than once"):
        read_packages([pkg, str(tmp_path / "." / "pkg")])
    twin = tmp_path / "twin"
    twin.symlink_to(pkg)  # another name of the same directory
    with pytest.raises(PackageFormatError, match="more than once"):
        read_packages([pkg, str(twin)])
    same_id = [package(name=name, instance={"instance_id": "one"})(tmp_path) for name in ("p1", "p2")]
    with pytest.raises(ValueError, match="package ids lists one more than once"):
        run(read_packages(same_id), [2], ["opt"])


@pytest.mark.parametrize(
    "argv_tail, warning",
    [
        (["--budgets", "2,4,2"], "--budgets lists 2 more than once; each runs once"),
        (["--budgets", "2,4", "--methods", "opt,greedy,opt"], "--methods lists opt more than once; each runs once"),
    ],
)
def test_cli_drops_repeats_with_one_warning(tmp_path, capsys, argv_tail, warning):
    out = tmp_path / "pk.csv"
    pkg = package()(tmp_path)
    argv = ["packages", "sweep", "--packages", pkg, pkg, "--methods", "opt", "--quiet", "--out", str(out), *argv_tail]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"wpbjax packages sweep: warning: --packages lists {pkg} more than once; each runs once" in err
    assert f"wpbjax packages sweep: warning: {warning}" in err
    table = pd.read_csv(out)
    assert not table.duplicated(["package", "budget", "method"]).any()
    assert sorted(table.budget.unique()) == [2, 4] and len(table) == 2 * table.method.nunique()


def test_score_drops_repeated_budgets(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    argv = score(
        package()(tmp_path), store([{"memory_id": "m", "cost": 1, "coverage": {"u1": 1}}])(tmp_path), "--out", str(out)
    )
    argv[argv.index("--budget") + 1] = "2,3,2"
    assert main(argv) == 0
    assert "wpbjax packages score: warning: --budget lists 2 more than once; each runs once" in capsys.readouterr().err
    assert pd.read_csv(out).budget.tolist() == [2] * 3 + [3] * 3


# --- sizes and --out, checked before any work (item 13) --------------------------------------------


def test_sweep_too_large_is_refused_up_front(tmp_path, capsys):
    argv = ["packages", "sweep", "--seeds", "100000000", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(
            "wpbjax packages sweep: error: --seeds 100,000,000 x 5 budgets x 8 methods: the "
            "sweep's 4,000,000,000 rows need about"
        )
        and err.count("\n") == 1
    ), err


@pytest.mark.parametrize(
    "out, fragment",
    [
        ("missing/pk.csv", "does not exist"),
        ("pk.txt", "expected a .csv or .parquet"),
        ("pkg/candidate_memories.csv", "is a directory"),
    ],
)
def test_sweep_out_is_checked_before_any_work(tmp_path, capsys, out, fragment):
    """A bad --out is refused before any package is read (on cab8c87 the package's error came first,
    or, with a good package, the sweep ran before a missing directory was found)."""
    pkg = package([_candidate(cost=-1)])(tmp_path)  # refused when read: the --out check must come first
    (tmp_path / "pkg" / "candidate_memories.csv").mkdir()
    argv = sweep(pkg, "--out", str(tmp_path / out))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("wpbjax packages sweep: error: ") and fragment in err and err.count("\n") == 1, err


def test_score_out_never_overwrites_its_store(tmp_path, capsys):
    memories = store([{"memory_id": "m", "cost": 1, "coverage": {"u1": 1}}], name="store.csv")(tmp_path)
    before = pathlib.Path(memories).read_bytes()
    assert main(score(package()(tmp_path), memories, "--out", memories)) == 2
    assert "would overwrite" in capsys.readouterr().err
    assert pathlib.Path(memories).read_bytes() == before
