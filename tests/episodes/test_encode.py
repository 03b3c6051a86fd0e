"""Encoding: Python-equality ids for merge deltas, byte model, padding and priority ranks."""

import json
import math

import numpy as np
import pytest
from helpers import make_episode

from wpbjax.episodes.encode import _ValueIds, encode_episodes, write_cost
from wpbjax.state.store import merge_delta


@pytest.mark.parametrize(
    "a, b",
    [
        (1, 1.0),
        (1, True),
        (0, False),
        ([1], [True]),
        ({"k": 1}, {"k": 1.0}),
        (10**20, 1e20),
        ("é", "é"),
        ([], []),
        ({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}),
    ],
)
def test_python_equal_values_share_an_id(a, b):
    assert a == b
    ids = _ValueIds()
    assert ids.id_of(a) == ids.id_of(b)


@pytest.mark.parametrize(
    "a, b",
    [
        (1, "1"),
        (None, 0),
        (None, False),
        ([1], (1, 2)),
        ({"k": 1}, {"k": 1, "j": 2}),
        (10**17 + 1, 1e17),
        ([1, 2], [2, 1]),
        (float("nan"), float("nan")),
        ([], {}),
    ],
)
def test_python_unequal_values_differ(a, b):
    assert not (a == b) or (isinstance(a, float) and math.isnan(a))
    ids = _ValueIds()
    assert ids.id_of(a) != ids.id_of(b)


def _delta(old, new):
    encoded = encode_episodes([make_episode([old, new])])
    batch = encoded.batch("unprivileged")
    episode = type(batch)(**{k: getattr(batch, k)[0] for k in vars(batch)})
    cost, n_fields = merge_delta(episode, 1, 0)
    return int(cost), int(n_fields)


def _python_delta_cost(old, new):
    delta = {k: v for k, v in new.items() if k != "api" and old.get(k) != v}
    return len(json.dumps(delta, sort_keys=True)) + 16, len(delta)


@pytest.mark.parametrize(
    "old, new",
    [
        ({"api": "a", "x": 1}, {"api": "a", "x": 1.0}),  # equal numbers: empty delta
        ({"api": "a"}, {"api": "a", "x": None}),  # absent == explicit null
        ({"api": "a", "x": None}, {"api": "a"}),  # keys only in old are ignored
        ({"api": "a", "x": [1, 2]}, {"api": "a", "x": [True, 2.0], "y": "é"}),
        ({"api": "a", "n": {"d": 1}}, {"api": "a", "n": {"d": 2}, "s": "ünïcode", "l": [1, [2, {"z": None}]]}),
        ({"api": "a", "f": 0.1}, {"api": "a", "f": 0.30000000000000004, "g": 1e-300, "h": -0.0}),
    ],
)
def test_merge_delta_bytes_match_python(old, new):
    assert _delta(old, new) == _python_delta_cost(old, new)


def test_write_cost_per_track_and_escaping():
    metadata = {"mode": "m", "priority": 0.16666666666666666, "secret": "hidden"}
    observation = {"api": "ü", "v": [1.5, None]}
    expected_obs = len(json.dumps(observation, sort_keys=True))
    assert write_cost(observation, metadata, "unprivileged") == expected_obs + len('{"mode": "m"}') + 48
    assert (
        write_cost(observation, metadata, "privileged")
        == expected_obs + len('{"mode": "m", "priority": 0.16666666666666666}') + 48
    )


def test_padding_priority_rank_and_hidden_priority():
    long = make_episode([{"api": "a"}] * 5, metadata=[{"priority": p} for p in (0.5, 0.50000001, -1, 0.0, 2)])
    short = make_episode(["x", 3, None])
    encoded = encode_episodes([long, short])
    priv, unpriv = encoded.batch("privileged"), encoded.batch("unprivileged")
    assert priv.valid.tolist() == [[True] * 5, [True] * 3 + [False] * 2]
    # levels -1 < 0 < 0.5 < 0.50000001 < 2 (short's steps have no priority: 0)
    assert priv.priority_rank[0].tolist() == [2, 3, 0, 1, 4] and priv.zero_rank.tolist() == [1, 1]
    # rounded up to float32, so "priority > 0.5" stays exact for the float64 value 0.50000001
    assert bool(priv.priority[0, 1] > 0.5) and not bool(priv.priority[0, 0] > 0.5)
    assert not np.asarray(unpriv.priority).any() and (np.asarray(unpriv.priority_rank) == 1).all()
    assert encoded.n_critical.tolist() == [0, 0]


def test_memoised_lengths_tell_negative_zero_apart():
    # 0.0 == -0.0 (same hash), but json.dumps writes "-0.0": the encoder's memos must not share a length.
    observations = [
        {"api": "a", "x": 0.0, "l": ["s"]},
        {"api": "a", "x": -0.0, "l": ["s"]},
        {"api": "a", "x": [0.0]},
        {"api": "a", "x": [-0.0]},
    ]
    metadata = [{"mode": "m", "priority": 0.0}, {"mode": "m", "priority": -0.0}] * 2
    encoded = encode_episodes([make_episode(observations, metadata)])
    for track_number, track in enumerate(("unprivileged", "privileged")):
        expected = [write_cost(obs, md, track) for obs, md in zip(observations, metadata)]
        assert encoded.write_cost[0, :, track_number].tolist() == expected, track


def test_priorities_round_up_to_the_nearest_float32_above():
    from wpbjax.episodes.encode import round_up_float32

    values = np.array([0.0, 0.1, 1 / 3, 0.7, 0.5, 1e-300, -0.7, 2.0**30 + 1])
    rounded = round_up_float32(values)
    assert rounded.dtype == np.float32
    assert (rounded.astype(np.float64) >= values).all()  # never below: priority > tau stays exact
    below = np.nextafter(rounded, np.float32(-np.inf)).astype(np.float64)
    assert (below < values).all()  # and the next float32 down is below the value
    assert rounded[4] == 0.5 and rounded[3] == np.nextafter(np.float32(0.7), np.float32(1))


def test_concat_of_typed_sets_equals_one_encoding_and_take_selects_episodes():
    """concat aligns every column as its declaration says (field slots by key, api tables padded,
    priority ranks over the union): joined parts equal one encoding of all their episodes, up to
    the numbering of value ids (ids compare only within an episode)."""
    import dataclasses

    from wpbjax.episodes.batch import EpisodeBatch, concat

    def episode(keys, priority, episode_id):
        observations = [{"api": f"a{i % 3}", **{key: i for key in keys}} for i in range(5)]
        return make_episode(
            observations,
            metadata=[{"mode": "m", "priority": priority * i} for i in range(5)],
            critical=(1, 3),
            episode_id=episode_id,
        )

    first = [episode(["x"], 0.25, "e0"), episode(["x", "y"], 0.5, "e1")]
    second = [episode(["z"], 0.125, "e2")]
    joined = concat([encode_episodes(first, n_steps=6), encode_episodes(second, n_steps=6)])
    whole = encode_episodes(first + second, n_steps=6)
    assert joined.field_keys == whole.field_keys == ("x", "y", "z")
    ids = {"field_value", "api_id", "api_ids"}
    for field in dataclasses.fields(EpisodeBatch):
        if field.name not in ids:
            assert np.array_equal(getattr(joined.arrays, field.name), getattr(whole.arrays, field.name)), field.name
    assert np.array_equal(joined.arrays.api_ids >= 0, whole.arrays.api_ids >= 0)
    assert np.array_equal(joined.priority64, whole.priority64) and list(joined.episode_id) == ["e0", "e1", "e2"]
    picked = joined.take([2, 0])
    assert list(picked.episode_id) == ["e2", "e0"] and picked.field_keys == joined.field_keys
    assert np.array_equal(picked.arrays.field_present, joined.arrays.field_present[[2, 0]])
    assert np.array_equal(picked.host_batch("unprivileged").priority, np.zeros((2, 6), np.float32))
