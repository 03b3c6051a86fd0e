"""``--knob-set NAME`` (generate, sweep): the fitted knobs of docs/real_drift.md without typing them, a knob
given on the command line still wins; every knob set of jax_gen.KNOB_SETS is its flags."""

import pytest

from wpbjax.cli import main
from wpbjax.episodes import jax_gen

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
    "0.01",
    "--burst-interval",
    "80",
    "--burst-len",
    "8",
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
