"""Dict episodes → fixed-shape arrays (host side, once per episode set).

Field values and api values become integer ids under *Python equality* (SEMANTICS §3):
``1 == 1.0 == True``, ``[1] == [True]``, dicts by key set and values, NaN equal to nothing.
Ids are exact (interned, no hashing), so the engine's comparisons are exactly Python's.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import wpbjax.episodes.crashes as crashes
import wpbjax.episodes.facts as facts
import wpbjax.episodes.probes as probes
from wpbjax.common.constants import NONE
from wpbjax.common.tracks import TRACK_VIEW_KEYS, TRACKS, view_metadata
from wpbjax.episodes.batch import NULL_VALUE_ID, EncodedEpisodes, concat, round_up_float32  # noqa: F401
from wpbjax.episodes.facts import api_endpoint, named_api
from wpbjax.episodes.jsonl import EpisodeFormatError, validate_episode

HEADER_BYTES = 32
INDEX_BYTES = 16
API_FRAGMENT_BYTES = len('"api": ')  # an observation's api fragment, before its value
NONE_ID = NULL_VALUE_ID  # old name


_JSON = json.JSONEncoder(sort_keys=True)  # what json.dumps(..., sort_keys=True) uses, without its per-call setup


def json_len(value: Any) -> int:
    """Characters of ``json.dumps(value, sort_keys=True)`` (ASCII-escaped), as the byte model counts."""
    return len(_JSON.encode(value))


def write_cost(observation: Any, metadata: dict, track: str) -> int:
    """SEMANTICS §2: serialised observation + serialised view metadata + header + index entry."""
    return json_len(observation) + json_len(view_metadata(metadata, track)) + HEADER_BYTES + INDEX_BYTES


class _ValueIds:
    """Interns JSON values so that two values get one id iff Python's ``==`` holds."""

    def __init__(self):
        self._ids = {("null",): NULL_VALUE_ID}
        self._unique = itertools.count()

    def canonical(self, value: Any):
        if value is None:
            return ("null",)
        if isinstance(value, (bool, int)):
            return ("num", int(value))
        if isinstance(value, float):
            if math.isnan(value):
                return ("nan", next(self._unique))  # NaN != NaN, even inside containers
            # An integral float equals exactly one int (Python compares int and float exactly);
            # any other finite float equals only itself.
            return ("num", int(value) if value.is_integer() else value)
        if isinstance(value, str):
            return ("str", value)
        if isinstance(value, (list, tuple)):
            return ("list", tuple(self.canonical(item) for item in value))
        if isinstance(value, dict):
            if _str_items(value):  # the items are their own canonical form: a str equals only a str
                return ("strdict", frozenset(value.items()))
            if all(isinstance(item, str) for item in value.values()):  # str subclasses: the same class
                return ("strdict", frozenset((key, str(item)) for key, item in value.items()))
            return ("dict", frozenset((key, self.canonical(item)) for key, item in value.items()))
        raise TypeError(f"not a JSON value: {type(value).__name__}")

    def id_of(self, value: Any) -> int:
        return self._ids.setdefault(self.canonical(value), len(self._ids))


_STR = {str}


def _str_items(value: dict) -> bool:
    """Whether every key and value of a dict is a plain str (checked at C speed: real observations carry
    hundreds of such fields per step)."""
    return set(map(type, value.values())) <= _STR and set(map(type, value)) <= _STR


def _memo_key(value) -> tuple:
    """A memo key for a scalar that equal JSON text shares: type-aware (1, 1.0 and True differ) and
    sign-aware for floats (0.0 == -0.0, but json.dumps writes "-0.0")."""
    kind = type(value)
    return (kind, value, math.copysign(1.0, value)) if kind is float else (kind, value)


_VISIBLE_KEYS = tuple(dict.fromkeys(key for keys in TRACK_VIEW_KEYS.values() for key in keys))


def encode_episodes(
    episodes: Sequence[dict], source: str = "episodes", n_steps: int | None = None, validate: bool = True
) -> EncodedEpisodes:
    """Encode dict episodes (as loaded from JSONL or generated) into padded arrays.

    ``n_steps`` pads to a fixed T (at least the longest episode) so that sets of different
    lengths share one compiled shape. Errors name ``source`` and the episode index.
    ``validate=False`` skips the structure checks for episodes already checked (``load_jsonl``
    validates every line) or made by our generators (a fifth of the encoding time).
    """
    n_steps = _checked_steps(episodes, source, n_steps, validate)
    encoder = _StepEncoder(_field_slots(episodes))
    columns = _empty_columns(len(episodes), n_steps, max(len(encoder.field_slot), 1))
    labels = [_encode_episode(encoder, columns, n, episode, source) for n, episode in enumerate(episodes)]
    columns["api_index"], columns["api_ids"] = _api_tables(columns["api_id"])
    columns["endpoint_index"], columns["named_endpoint"] = _endpoint_indices(
        columns.pop("endpoint_key"), columns.pop("named_key")
    )
    columns["named_version"] = np.where(columns["named_endpoint"] >= 0, columns["named_version"], 0)
    columns.update(
        facts.from_episodes(
            episodes, source, columns["valid"], columns["endpoint_index"], columns["version_number"], columns["length"]
        )
    )
    cost, utility64, priority64 = columns.pop("write_cost"), columns.pop("utility64"), columns.pop("priority64")
    n_critical, total_drift, episode_ids, modes = zip(*labels)
    encoded = EncodedEpisodes.from_columns(
        dict(columns, write_cost=cost),
        utility64=utility64,
        priority64=priority64,
        n_critical=np.array(n_critical, np.int32),
        total_drift_events=np.array(total_drift, np.int32),
        episode_id=episode_ids,
        mode=modes,
        field_keys=sorted(encoder.field_slot, key=encoder.field_slot.get),
    )
    encoded = dataclasses.replace(encoded, crash_pos=crashes.from_labels(episodes, source))
    return _with_probes(encoded, episodes, source)


def _with_probes(encoded: EncodedEpisodes, episodes: Sequence[dict], source: str) -> EncodedEpisodes:
    """The fact names (for reads' relevance) and the ``probes`` labels' probes (wpbjax.episodes.probes)."""
    fact_key = encoded.arrays.fact_key
    if fact_key is None:
        return encoded
    names = probes.fact_names(episodes, fact_key)
    if not any("probes" in episode.get("labels", {}) for episode in episodes):
        return dataclasses.replace(encoded, fact_names=names)
    arrays, names = probes.from_labels(episodes, source, names)
    return dataclasses.replace(encoded, fact_names=names, **arrays)


def _checked_steps(episodes: Sequence[dict], source: str, n_steps: int | None, validate: bool) -> int:
    """T of the encoding: ``n_steps``, or the longest episode; validates the episodes if asked."""
    if len(episodes) == 0:
        raise EpisodeFormatError(f"{source}: no episodes to encode")
    for index, episode in enumerate(episodes if validate else ()):
        validate_episode(episode, f"{source}: episode {index}")
    longest = max(len(episode["steps"]) for episode in episodes)
    if n_steps is None:
        return longest
    if n_steps < longest:
        raise ValueError(f"n_steps={n_steps} is shorter than the longest episode ({longest} steps)")
    return n_steps


def _field_slots(episodes: Sequence[dict]) -> dict:
    """key -> field slot, for every non-``api`` key of a dict observation, in order of appearance."""
    field_slot: dict = {}
    for episode in episodes:
        for step in episode["steps"]:
            observation = step.get("observation")
            if isinstance(observation, dict):
                for key in observation:
                    if key != "api":
                        field_slot.setdefault(key, len(field_slot))
    return field_slot


def _empty_columns(n_episodes: int, n_steps: int, n_fields: int) -> dict:
    """The encoder's output arrays, filled as padding (invalid steps, absent fields, NONE apis)."""
    shape, fields = (n_episodes, n_steps), (n_episodes, n_steps, n_fields)
    return dict(
        valid=np.zeros(shape, bool),
        step_t=np.zeros(shape, np.int32),
        write_cost=np.zeros(shape + (len(TRACKS),), np.int32),
        api_id=np.full(shape, NONE, np.int32),
        api_is_str=np.zeros(shape, bool),
        field_value=np.full(fields, NULL_VALUE_ID, np.int32),
        field_present=np.zeros(fields, bool),
        field_frag_len=np.zeros(fields, np.int32),
        priority64=np.zeros(shape, np.float64),
        utility64=np.zeros(shape, np.float64),
        critical=np.zeros(shape, bool),
        t_last=np.zeros(n_episodes, np.int32),
        length=np.zeros(n_episodes, np.int32),
        version_number=np.zeros(shape, np.int32),
        endpoint_key=np.full(shape, None, object),
        named_key=np.full(shape, None, object),
        named_version=np.zeros(shape, np.int32),
    )  # endpoint strings, indexed per episode at the end


class _StepEncoder:
    """Per-step encoding with the memos a set shares: value ids, JSON lengths, endpoints."""

    def __init__(self, field_slot: dict):
        self.field_slot = field_slot
        self.values = _ValueIds()
        self.key_lengths = {key: json_len({key: None}) - len("{: null}") for key in field_slot}
        self.view_memo: dict = {}
        self.field_memo: dict = {}
        self.endpoint_memo: dict = {}
        self.named_memo: dict = {}

    def view_lens(self, metadata: dict) -> tuple:
        """JSON length of the metadata view per track, memoised by the visible items (type-aware)."""
        try:
            key = tuple((k, *_memo_key(metadata[k])) for k in _VISIBLE_KEYS if k in metadata)
            lens = self.view_memo.get(key)
        except TypeError:  # unhashable metadata values: no caching
            return tuple(json_len(view_metadata(metadata, track)) for track in TRACKS)
        if lens is None:
            lens = self.view_memo[key] = tuple(json_len(view_metadata(metadata, track)) for track in TRACKS)
        return lens

    def field(self, value) -> tuple[int, int]:
        """(value id, JSON length), memoised by an exact, type-aware key (never for NaN)."""
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None or (kind is float and value == value):
            key = _memo_key(value)
        elif kind is list and all(type(item) is str for item in value):
            key = (list, *value)
        elif kind is dict:
            # Only str-only dicts are memoised, so a hit needs no type check: a value equal to a str is a str,
            # with the same JSON. Order-aware: an equal dict in another order misses and gets the same id.
            key = (dict, tuple(value.items()))
            try:
                found = self.field_memo.get(key)
            except TypeError:  # an unhashable value (a list, a dict): not str-only
                found = None
            if found is not None:
                return found
            if not _str_items(value):
                return self.values.id_of(value), json_len(value)
        else:
            return self.values.id_of(value), json_len(value)
        if key not in self.field_memo:
            self.field_memo[key] = (self.values.id_of(value), json_len(value))
        return self.field_memo[key]

    def endpoint(self, api: str) -> tuple[str, int]:
        if api not in self.endpoint_memo:
            self.endpoint_memo[api] = api_endpoint(api)
        return self.endpoint_memo[api]

    def named(self, value) -> tuple | None:
        """:func:`wpbjax.episodes.facts.named_api` of a field's value, memoised."""
        if type(value) is not str or ".v" not in value:
            return None
        if value not in self.named_memo:
            self.named_memo[value] = named_api(value)
        return self.named_memo[value]

    def observation(self, observation, step: int, fields: list) -> tuple:
        """(JSON length, api id, api is str, endpoint or None, version, named) of one observation;
        appends (step, slot, value id, fragment bytes) to ``fields`` for each field it has. ``named``:
        for an observation without a string api, the (endpoint, version) of the newest api another
        of its fields names (:func:`wpbjax.episodes.facts.named_api`), else None."""
        if not isinstance(observation, dict):
            observation_len = json_len(observation)
            self.values.canonical(observation)  # rejects non-JSON values early
            return observation_len, NONE, False, None, 0, None
        api, api_str, endpoint, version, named = NONE, False, None, 0, None
        # json.dumps(obs, sort_keys=True) is '{' + ', '.join('"key": value') + '}': its
        # length follows from the fragments (all keys are strings; else dumps it)
        fragments = 0
        for key, value in observation.items():
            if key == "api":
                api_id, api_len = self.field(value)
                fragments += API_FRAGMENT_BYTES + api_len
                if value is not None:
                    api, api_str = api_id, isinstance(value, str)
                    if api_str:
                        endpoint, version = self.endpoint(value)
                continue
            names = self.named(value)
            if names is not None and (named is None or names[1] > named[1]):
                named = names
            value_id, value_len = self.field(value)
            fragment = self.key_lengths[key] + 2 + value_len  # '"key": value'
            fields.append((step, self.field_slot[key], value_id, fragment))
            fragments += fragment
        if all(type(key) is str for key in observation):
            observation_len = 2 + fragments + 2 * max(len(observation) - 1, 0)
        else:
            observation_len = json_len(observation)
        obs_version = observation.get("version")
        if version == 0 and type(obs_version) is int and abs(obs_version) < 2**31:
            version = obs_version
        return observation_len, api, api_str, endpoint, version, None if endpoint is not None else named


def _encode_episode(encoder: _StepEncoder, columns: dict, n: int, episode: dict, source: str) -> tuple:
    """Write episode ``n``'s steps into ``columns``; returns its labels (|R|, drift events, id, mode)."""
    labels = episode.get("labels", {})
    steps = episode["steps"]
    critical_ts = set(labels.get("critical_steps", []))
    utility_by_step = {str(key): value for key, value in labels.get("utility_by_step", {}).items()}
    rows = []  # per step: (t, cost per track..., api id, api is str, priority, utility, critical, version)
    # per field present: (step, slot, value id, fragment bytes), written to the arrays in one go
    # per episode (numpy item assignment per element is slow: docs/performance.md)
    fields: list = []
    for i, step in enumerate(steps):
        observation, metadata, t = step.get("observation"), step.get("metadata", {}), step["t"]
        try:
            observation_len, api, api_str, endpoint, version, named = encoder.observation(observation, i, fields)
        except (TypeError, ValueError) as err:
            raise EpisodeFormatError(
                f"{source}: episode {n}, step {i} (t={t}): observation is not JSON-serialisable ({err})"
            ) from None
        if endpoint is not None:
            columns["endpoint_key"][n, i] = endpoint
        if named is not None:
            columns["named_key"][n, i], columns["named_version"][n, i] = named
        priority, utility = metadata.get("priority"), utility_by_step.get(str(t))
        rows.append(
            (
                t,
                *(observation_len + view + HEADER_BYTES + INDEX_BYTES for view in encoder.view_lens(metadata)),
                api,
                api_str,
                0.0 if priority is None else float(priority),
                0.0 if utility is None else float(utility),
                t in critical_ts,
                version,
            )
        )
    _write_rows(columns, n, rows, fields)
    columns["t_last"][n], columns["length"][n] = steps[-1]["t"], len(steps)
    return (
        len(critical_ts),
        labels.get("total_drift_events", 0),
        labels.get("episode_id", n),
        str(labels.get("mode", "")),
    )


def _write_rows(columns: dict, n: int, rows: list, fields: list) -> None:
    """Episode ``n``'s per-step rows and field entries into ``columns``, a column at a time."""
    count, by_column = len(rows), list(zip(*rows))
    if fields:
        at_step, slot, value_id, fragment = (np.array(column) for column in zip(*fields))
        columns["field_present"][n, at_step, slot] = True
        columns["field_value"][n, at_step, slot] = value_id
        columns["field_frag_len"][n, at_step, slot] = fragment
    n_tracks = len(TRACKS)
    columns["step_t"][n, :count] = by_column[0]
    columns["write_cost"][n, :count] = np.array(by_column[1 : 1 + n_tracks]).T
    columns["api_id"][n, :count], columns["api_is_str"][n, :count] = by_column[1 + n_tracks], by_column[2 + n_tracks]
    for name, values in zip(("priority64", "utility64", "critical", "version_number"), by_column[3 + n_tracks :]):
        columns[name][n, :count] = values
    columns["valid"][n, :count] = True


def _api_tables(api_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode dense api index ([N, T], tables indexed by api stay small) and the api id of each
    index ([N, A]); A is static through api_ids' shape."""
    api_index = np.full(api_id.shape, NONE, np.int32)
    local_apis = [list(dict.fromkeys(row[row >= 0].tolist())) for row in api_id]
    api_ids = np.full((len(api_id), max(max(len(apis) for apis in local_apis), 1)), NONE, np.int32)
    for n, apis in enumerate(local_apis):
        lookup = {api: index for index, api in enumerate(apis)}
        api_ids[n, : len(apis)] = apis
        api_index[n] = [lookup.get(api, NONE) for api in api_id[n].tolist()]
    return api_index, api_ids


def _endpoint_indices(endpoint_key: np.ndarray, named_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([N, T] int32 per-episode index of each step's endpoint string, [N, T] int32 that of the endpoint
    it names), NONE where it has none. A named endpoint gets an index only if the episode has it as an
    api (the tables a gate keeps per endpoint are sized by the episode's apis)."""
    endpoint_index = np.full(endpoint_key.shape, NONE, np.int32)
    named_index = np.full(endpoint_key.shape, NONE, np.int32)
    for n, (row, named_row) in enumerate(zip(endpoint_key, named_key)):
        lookup: dict = {}
        endpoint_index[n] = [NONE if key is None else lookup.setdefault(key, len(lookup)) for key in row]
        named_index[n] = [lookup.get(key, NONE) for key in named_row]
    return endpoint_index, named_index


def concat_encoded(parts: Sequence[EncodedEpisodes]) -> EncodedEpisodes:
    """One encoding of several (same T); see :func:`wpbjax.episodes.batch.concat`."""
    return concat(parts)
