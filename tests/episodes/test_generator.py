"""The reference generator writes the published frozen files byte for byte."""

import pytest
from conftest import shared_path

from wpbjax.cli import main
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes, paper_filename


@pytest.mark.parametrize("mode", MODES)
def test_generate_cli_is_byte_identical_to_frozen_files(mode, tmp_path):
    frozen = shared_path("episodes", paper_filename(DriftConfig(mode=mode), 10))
    out = tmp_path / "episodes.jsonl"
    assert (
        main(
            [
                "generate",
                "--mode",
                mode,
                "--seed",
                "0",
                "--steps",
                "200",
                "--episodes",
                "10",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert out.read_bytes() == frozen.read_bytes()


def test_generator_follows_its_knobs():
    config = DriftConfig(
        mode="burst_drift",
        steps=120,
        seed=7,
        api_pool=3,
        burst_interval=40,
        burst_len=10,
        burst_drift_prob=1.0,
        drift_prob=0.0,
    )
    episode = generate_episodes(config, 2)[1]
    critical = episode["labels"]["critical_steps"]
    # drift only and always inside bursts
    assert critical == [t for t in range(120) if t % 40 < 10]
    assert {step["observation"]["api"].split("endpoint_")[1] for step in episode["steps"]} <= {"0", "1", "2"}
    assert episode["labels"]["max_utility"] == 6.0 * 30 + 1.0 * 90


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="max_params"):
        DriftConfig(max_params=1)
    with pytest.raises(ValueError, match="mode"):
        DriftConfig(mode="nope")


@pytest.mark.parametrize("mode", MODES)
def test_generated_episodes_pass_the_file_checks(mode):
    # Sweeps encode generated episodes without validating them (encode_episodes(validate=False)).
    from wpbjax.episodes.jsonl import validate_episode

    for index, episode in enumerate(generate_episodes(DriftConfig(mode=mode, seed=5, steps=150, api_pool=3), 5)):
        validate_episode(episode, f"{mode} episode {index}")
