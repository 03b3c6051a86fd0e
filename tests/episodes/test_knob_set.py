"""``--knob-set NAME`` (generate, sweep): the fitted knobs of docs/real_drift.md without typing them, a knob
given on the command line still wins; every knob set of jax_gen.KNOB_SETS is its flags."""

import pytest

from wpbjax.cli import main
from wpbjax.episodes.generators import jax_gen

FITTED_FLAGS = [
    "--engine",
    "jax",
    "--mode",
    "stripe_like",
    "--api-pool",
    "200",
    "--max-params",
    "1000",
    "--drift-prob",
    "0.03",
    "--burst-interval",
    "80",
    "--burst-len",
    "15",
    "--burst-drift-prob",
    "1.0",
    "--decoy-prob",
    "1.0",
]


def _generate(tmp_path, name, flags):
    out = tmp_path / name
    assert main(["generate", "--episodes", "2", "--steps", "60", "--quiet", "--out", str(out), *flags]) == 0
    return out.read_bytes()


def test_a_knob_set_is_its_flags_and_a_given_flag_wins(tmp_path):
    fitted = _generate(tmp_path, "set.jsonl", ["--knob-set", "stripe_like"])
    assert fitted == _generate(tmp_path, "flags.jsonl", FITTED_FLAGS)
    overridden = _generate(tmp_path, "drift.jsonl", ["--knob-set", "stripe_like", "--drift-prob", "0.5"])
    assert overridden != fitted
    assert overridden == _generate(tmp_path, "drift_flags.jsonl", FITTED_FLAGS[:9] + ["0.5"] + FITTED_FLAGS[10:])


@pytest.mark.parametrize("name", sorted(jax_gen.KNOB_SETS))
def test_every_knob_set_is_its_flags(tmp_path, name):
    knobs = jax_gen.KNOB_SETS[name]
    flags = ["--engine", "jax", "--mode", knobs["mode"]]
    for knob, value in knobs.items():
        if knob != "mode":
            flags += [f"--{knob.replace('_', '-')}", str(value)]
    assert _generate(tmp_path, "set.jsonl", ["--knob-set", name]) == _generate(tmp_path, "flags.jsonl", flags)


def test_a_knob_set_of_the_jax_generator_refuses_another_engine(tmp_path, capsys):
    argv = ["generate", "--knob-set", "stripe_like", "--engine", "python", "--out", str(tmp_path / "e.jsonl")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "--knob-set stripe_like: a knob set of the JAX generator; got --engine python" in err and "\n" not in err
    assert not (tmp_path / "e.jsonl").exists()


def test_a_given_flag_wins_even_at_its_default_value(tmp_path):
    """--api-pool 8 is the default, yet given: it must beat the knob set's 200 endpoints (issue 31, item 7)."""
    import json

    given = _generate(tmp_path, "pool.jsonl", ["--knob-set", "stripe_like", "--api-pool", "8"])
    assert given == _generate(tmp_path, "pool_flags.jsonl", FITTED_FLAGS[:5] + ["8"] + FITTED_FLAGS[6:])
    endpoints = {
        step["observation"]["api"].rsplit(".", 1)[1]
        for line in given.decode().splitlines()
        for step in json.loads(line)["steps"]
        if "api" in step["observation"]
    }
    assert 0 < len(endpoints) <= 8


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["generate", "--engine", "python"],
            "--knob-set stripe_like: a knob set of the JAX generator; got --engine python",
        ),
        (["generate", "--mode", "decoy"], "--knob-set stripe_like: sets --mode stripe_like; got --mode decoy"),
        (["sweep", "--modes", "default"], "--knob-set stripe_like: sets --modes stripe_like; got --modes default"),
        (["sweep", "--episodes", "ep.jsonl"], "--knob-set stripe_like: generates the episodes; --episodes FILE"),
    ],
)
def test_a_knob_set_refuses_flags_it_cannot_combine_with(tmp_path, capsys, argv, message):
    out = tmp_path / "out.file"
    full = [argv[0], "--knob-set", "stripe_like", *argv[1:], "--out", str(out), "--quiet"]
    assert main(full) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not out.exists()


def test_a_knob_set_accepts_its_own_mode_and_engine(tmp_path):
    fitted = _generate(tmp_path, "set.jsonl", ["--knob-set", "stripe_like"])
    same = _generate(tmp_path, "same.jsonl", ["--knob-set", "stripe_like", "--mode", "stripe_like", "--engine", "jax"])
    assert same == fitted
