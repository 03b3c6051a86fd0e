"""The on-disk cache of encoded episode sets (wpbjax.episodes.cache), alone and under a real spec's sweep."""

import os
import pickle

import numpy as np
import pytest

from wpbjax.episodes import cache
from wpbjax.episodes.importers import real_drift
from wpbjax.episodes.source import EpisodeSource


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "episodes"))
    return tmp_path / "episodes"


def _counting(value):
    calls = []

    def build():
        calls.append(1)
        return value

    return build, calls


def test_a_value_is_built_once_per_key(folder):
    build, calls = _counting({"arrays": [1, 2, 3]})
    assert cache.cached({"a": 1}, build) == {"arrays": [1, 2, 3]}
    assert cache.cached({"a": 1}, build) == {"arrays": [1, 2, 3]}
    assert len(calls) == 1 and len(os.listdir(folder)) == 1
    cache.cached({"a": 2}, build)  # another key: built again, a second entry
    assert len(calls) == 2 and len(os.listdir(folder)) == 2


def test_the_key_holds_the_code_and_other_codes_entries_go(folder, monkeypatch):
    build, calls = _counting([1])
    cache.cached({"a": 1}, build)
    cache.cached({"b": 1}, build)
    before = cache.entry_path({"a": 1})
    monkeypatch.setattr(cache, "code_digest", lambda: "another encoder")
    assert cache.entry_path({"a": 1}) != before
    cache.cached({"a": 1}, build)  # built again under the new code; the old code's entry of that key goes
    assert len(calls) == 3
    assert not os.path.exists(before) and len(os.listdir(folder)) == 2  # {"a": 1} new, {"b": 1} kept


def test_an_unreadable_entry_is_rebuilt_and_no_temporary_file_stays(folder):
    build, calls = _counting([7])
    cache.cached({"a": 1}, build)
    path = cache.entry_path({"a": 1})
    with open(path, "wb") as handle:
        handle.write(b"\x80\x05 truncated")  # as a killed writer's file would be, were it renamed
    assert cache.cached({"a": 1}, build) == [7] and len(calls) == 2
    with open(path, "rb") as handle:
        assert pickle.load(handle) == [7]
    assert [name for name in os.listdir(folder) if name.endswith(".tmp")] == []


def test_empty_turns_it_off(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, "")
    build, calls = _counting(1)
    cache.cached({"a": 1}, build)
    cache.cached({"a": 1}, build)
    assert len(calls) == 2 and cache.entry_path({"a": 1}) is None


def test_a_real_spec_sweeps_the_same_arrays_from_the_cache(folder, monkeypatch):
    spec = "real:openai:100"
    first = EpisodeSource.from_files([spec]).load()
    assert len(os.listdir(folder)) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the windows were read again")

    monkeypatch.setattr(real_drift, "load_spec", refuse)
    again = EpisodeSource.from_files([spec]).load()
    assert list(again.episode_id) == list(first.episode_id)
    for name in ("write_cost", "utility", "priority", "critical", "field_value", "fact_pair", "api_index"):
        np.testing.assert_array_equal(getattr(again.arrays, name), getattr(first.arrays, name), err_msg=name)


def test_windows_beside_longer_episodes_are_padded_to_their_length(folder, tmp_path):
    """A real set beside a set of longer episodes is encoded to the sweep's T, its windows unchanged."""
    from wpbjax.episodes.jsonl import save_jsonl

    longer = tmp_path / "longer.jsonl"
    save_jsonl(real_drift.episodes("openai", steps=150, stride=400), longer)
    alone = EpisodeSource.from_files(["real:openai:100"]).load()
    both = EpisodeSource.from_files(["real:openai:100", str(longer)]).load()
    assert both.n_steps == 150
    n = alone.n_episodes
    np.testing.assert_array_equal(both.arrays.write_cost[:n, :100], alone.arrays.write_cost)
    assert not both.arrays.valid[:n, 100:].any()


def test_the_code_key_reads_the_generators_and_importers(folder):
    """Every module that builds an encoded set is in the code key, subpackages included: a changed
    generator or importer is a new key."""
    names = {os.path.relpath(path, os.path.dirname(cache.__file__)) for path in cache.digested_paths()}
    for module in (
        "encode.py",
        "generators/published_arrays.py",
        "generators/python_random.py",
        "importers/real_drift.py",
    ):
        assert module in names, module


def test_a_generated_set_is_kept_and_read_back(folder, monkeypatch):
    from wpbjax.episodes.generators import parallel

    source = EpisodeSource.generated(["default", "redundancy"], n_episodes=3, steps=40, seed=5)
    first, sets = source.load_sets()
    assert len(os.listdir(folder)) == 1 and list(sets) == [0, 0, 0, 1, 1, 1]

    def refuse(*args, **kwargs):
        raise AssertionError("the set was generated again")

    monkeypatch.setattr(parallel, "generate_encoded", refuse)
    again, _ = EpisodeSource.generated(["default", "redundancy"], n_episodes=3, steps=40, seed=5).load_sets()
    assert list(again.episode_id) == list(first.episode_id) and list(again.mode) == list(first.mode)
    for name in ("write_cost", "utility", "priority", "critical", "field_value", "fact_pair", "api_index"):
        np.testing.assert_array_equal(getattr(again.arrays, name), getattr(first.arrays, name), err_msg=name)
    with pytest.raises(AssertionError, match="generated again"):  # another seed is another set
        EpisodeSource.generated(["default", "redundancy"], n_episodes=3, steps=40, seed=6).load_sets()


def test_a_large_generated_set_is_not_kept(folder, monkeypatch):
    monkeypatch.setattr(cache, "MAX_GENERATED_EPISODE_STEPS", 3 * 40 - 1)
    EpisodeSource.generated(["default"], n_episodes=3, steps=40).load_sets()
    assert not os.path.exists(folder) or os.listdir(folder) == []
