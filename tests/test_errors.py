"""Bad input gets a clear error naming the file and line, or the argument."""
import pytest

from helpers import make_episode
from wpbjax.cli import main
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.jsonl import EpisodeFormatError, load_jsonl

GOOD = '{"labels": {}, "steps": [{"t": 0, "observation": {"api": "a"}, "metadata": {}}]}'


@pytest.mark.parametrize("second_line, message", [
    ("{not json", r"episodes.jsonl:2: not valid JSON"),
    ('{"labels": {}}', r"episodes.jsonl:2: missing 'steps'"),
    ('{"steps": [{"observation": 1}]}', r"episodes.jsonl:2: step 0: missing 't'"),
    ('{"steps": [{"t": "3"}]}', r"episodes.jsonl:2: step 0: 't' must be an integer"),
    ('{"steps": [{"t": 1.0}]}', r"episodes.jsonl:2: step 0: 't' must be an integer"),
    ('{"steps": [{"t": 2}, {"t": 2}]}', r"episodes.jsonl:2: step 1: 't' must increase strictly"),
    ('{"steps": []}', r"episodes.jsonl:2: 'steps' is empty"),
    ('[1, 2]', r"episodes.jsonl:2: an episode must be a JSON object"),
    ('{"steps": [{"t": 0, "metadata": {"priority": "high"}}]}', r"episodes.jsonl:2: step 0: metadata 'priority' must be a number"),
    ('{"labels": {"critical_steps": [0.5]}, "steps": [{"t": 0}]}', r"episodes.jsonl:2: labels 'critical_steps'"),
])
def test_loader_names_file_and_line(tmp_path, second_line, message):
    path = tmp_path / "episodes.jsonl"
    path.write_text(GOOD + "\n" + second_line + "\n")
    with pytest.raises(EpisodeFormatError, match=message):
        load_jsonl(path)


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


@pytest.mark.parametrize("argv, message", [
    (["sweep", "--budgets", "0,1024"], "budgets must be whole numbers"),
    (["sweep", "--policies", "nope"], "unknown policy 'nope'"),
    (["sweep", "--tracks", "sideways"], "unknown track 'sideways'"),
    (["sweep", "--modes", "calm"], "--modes: unknown mode 'calm'"),
    (["sweep", "--policies", "priority_greedy", "--tracks", "unprivileged"], "runs on tracks"),
    (["sweep", "--episodes", "/no/such/file.jsonl"], "/no/such/file.jsonl: cannot open"),
])
def test_cli_errors_name_the_argument(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "r.csv"), "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_cli_argument_types_are_checked(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "--budgets", "1k"])
    assert exit_info.value.code == 2
    assert "--budgets: expected comma-separated integers" in capsys.readouterr().err
