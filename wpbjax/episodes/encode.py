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
import re
from typing import Any, Sequence

import jax
import numpy as np

from wpbjax.devices import place
from wpbjax.episodes.batch import EpisodeBatch
from wpbjax.episodes.jsonl import EpisodeFormatError, validate_episode
from wpbjax.tracks import TRACK_VIEW_KEYS, TRACKS, check_track, sees_priority, view_metadata

HEADER_BYTES = 32
INDEX_BYTES = 16
API_FRAGMENT_BYTES = len('"api": ')  # an observation's api fragment, before its value
NONE_ID = 0  # id of JSON null: the value ``old.get(key)`` compares with when the key is absent


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
        self._ids = {("null",): NONE_ID}
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
            return ("dict", frozenset((key, self.canonical(item)) for key, item in value.items()))
        raise TypeError(f"not a JSON value: {type(value).__name__}")

    def id_of(self, value: Any) -> int:
        return self._ids.setdefault(self.canonical(value), len(self._ids))


_VERSION_SEGMENT = re.compile(r"(?:^|(?<=\.))v(\d+)(?=\.|$)")  # a dot-separated segment "v<digits>"


def api_endpoint(api: str) -> tuple[str, int]:
    """(endpoint, version) of an api string: the string with its first ``v<digits>`` segment
    replaced by ``v*``, and those digits as an int (``("api.v*.endpoint_3", 2)`` for
    ``"api.v2.endpoint_3"``); ``(api, 0)`` when it has no such segment."""
    match = _VERSION_SEGMENT.search(api)
    if match is None:
        return api, 0
    return api[:match.start()] + "v*" + api[match.end():], int(match.group(1))


def _memo_key(value) -> tuple:
    """A memo key for a scalar that equal JSON text shares: type-aware (1, 1.0 and True differ) and
    sign-aware for floats (0.0 == -0.0, but json.dumps writes "-0.0")."""
    kind = type(value)
    return (kind, value, math.copysign(1.0, value)) if kind is float else (kind, value)


def round_up_float32(values: np.ndarray) -> np.ndarray:
    """Smallest float32 >= each float64 value, so ``priority > tau`` is exact for every float32 ``tau``."""
    rounded = np.asarray(values, np.float64).astype(np.float32)
    low = rounded.astype(np.float64) < values
    rounded[low] = np.nextafter(rounded[low], np.float32(np.inf))
    return rounded


@dataclasses.dataclass
class EncodedEpisodes:
    """A set of episodes as host arrays for both tracks, plus the labels the tables need.

    Arrays are ``[N, T]`` (``[N, T, F]`` for fields); ``write_cost`` has a track axis
    ``[N, T, 2]`` in the order of :data:`wpbjax.tracks.TRACKS`.
    """

    arrays: dict                 # name -> np.ndarray (track-independent fields of EpisodeBatch)
    write_cost: np.ndarray       # [N, T, 2] int32
    utility64: np.ndarray        # [N, T] float64, exact u_t for scoring and the oracle
    priority64: np.ndarray       # [N, T] float64, exact metadata priority (0 when missing)
    n_critical: np.ndarray       # [N] int32, |R| (critical t's, including any not among the steps)
    total_drift_events: np.ndarray  # [N] int32
    episode_id: list             # [N] the labels' episode_id (index in the set when absent)
    mode: list                   # [N] the labels' mode ("" when absent)
    field_keys: list             # [F] the key each field slot stands for

    @property
    def n_episodes(self) -> int:
        return len(self.episode_id)

    @property
    def n_steps(self) -> int:
        return self.utility64.shape[1]

    def track_costs(self, track: str) -> np.ndarray:
        """[N, T] int32 write costs under ``track``'s view."""
        return self.write_cost[:, :, TRACKS.index(check_track(track))]

    def host_batch(self, track: str, indices=None) -> EpisodeBatch:
        """(A subset of) the episodes for ``track`` as numpy arrays.

        Priority is hidden (0.0, the rank of 0.0) on tracks that may not see it.
        """
        select = slice(None) if indices is None else np.asarray(indices)
        arrays = {name: value[select] for name, value in self.arrays.items()}
        arrays["write_cost"] = self.track_costs(track)[select]
        if not sees_priority(track):
            arrays["priority"] = np.zeros_like(arrays["priority"])
            arrays["priority_rank"] = np.broadcast_to(arrays["zero_rank"][:, None], arrays["priority_rank"].shape).copy()
        return EpisodeBatch(**arrays)

    def batch(self, track: str, indices=None, devices=None) -> EpisodeBatch:
        """:meth:`host_batch` on the default device, or split over ``devices`` (``wpbjax.devices.place``).
        Straight from host memory: ``jnp.asarray`` would compile a small program per array shape."""
        host = self.host_batch(track, indices)
        return jax.device_put(host) if devices is None else place(host, devices)


def encode_episodes(episodes: Sequence[dict], source: str = "episodes", n_steps: int | None = None,
                    validate: bool = True) -> EncodedEpisodes:
    """Encode dict episodes (as loaded from JSONL or generated) into padded arrays.

    ``n_steps`` pads to a fixed T (at least the longest episode) so that sets of different
    lengths share one compiled shape. Errors name ``source`` and the episode index.
    ``validate=False`` skips the structure checks for episodes already checked (``load_jsonl``
    validates every line) or made by our generators (a fifth of the encoding time).
    """
    if len(episodes) == 0:
        raise EpisodeFormatError(f"{source}: no episodes to encode")
    for index, episode in enumerate(episodes if validate else ()):
        validate_episode(episode, f"{source}: episode {index}")
    longest = max(len(episode["steps"]) for episode in episodes)
    if n_steps is None:
        n_steps = longest
    elif n_steps < longest:
        raise ValueError(f"n_steps={n_steps} is shorter than the longest episode ({longest} steps)")

    values = _ValueIds()
    view_lengths: dict = {}

    visible_keys = tuple(dict.fromkeys(key for keys in TRACK_VIEW_KEYS.values() for key in keys))

    def view_lens(metadata: dict) -> tuple:
        """JSON length of the metadata view per track, memoised by the visible items (type-aware)."""
        try:
            key = tuple((k, *_memo_key(metadata[k])) for k in visible_keys if k in metadata)
            lens = view_lengths.get(key)
        except TypeError:  # unhashable metadata values: no caching
            return tuple(json_len(view_metadata(metadata, track)) for track in TRACKS)
        if lens is None:
            lens = view_lengths[key] = tuple(json_len(view_metadata(metadata, track)) for track in TRACKS)
        return lens

    field_memo: dict = {}

    def field(value) -> tuple[int, int]:
        """(value id, JSON length), memoised by an exact, type-aware key (never for NaN)."""
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None or (kind is float and value == value):
            key = _memo_key(value)
        elif kind is list and all(type(item) is str for item in value):
            key = (list, *value)
        else:
            return values.id_of(value), json_len(value)
        if key not in field_memo:
            field_memo[key] = (values.id_of(value), json_len(value))
        return field_memo[key]

    field_slot: dict = {}
    for episode in episodes:
        for step in episode["steps"]:
            observation = step.get("observation")
            if isinstance(observation, dict):
                for key in observation:
                    if key != "api":
                        field_slot.setdefault(key, len(field_slot))
    n_fields = max(len(field_slot), 1)
    key_lengths = {key: json_len({key: None}) - len('{: null}') for key in field_slot}
    shape = (len(episodes), n_steps)

    valid = np.zeros(shape, bool)
    step_t = np.zeros(shape, np.int32)
    cost = np.zeros(shape + (len(TRACKS),), np.int32)
    api_id = np.full(shape, -1, np.int32)
    api_is_str = np.zeros(shape, bool)
    field_value = np.full(shape + (n_fields,), NONE_ID, np.int32)
    field_present = np.zeros(shape + (n_fields,), bool)
    field_frag_len = np.zeros(shape + (n_fields,), np.int32)
    priority64 = np.zeros(shape, np.float64)
    utility64 = np.zeros(shape, np.float64)
    critical = np.zeros(shape, bool)
    t_last = np.zeros(len(episodes), np.int32)
    length = np.zeros(len(episodes), np.int32)
    n_critical = np.zeros(len(episodes), np.int32)
    endpoint_key = np.full(shape, None, object)  # endpoint strings, indexed per episode below
    version_number = np.zeros(shape, np.int32)
    endpoint_memo: dict = {}
    total_drift = np.zeros(len(episodes), np.int32)
    episode_ids, modes = [], []

    for n, episode in enumerate(episodes):
        labels = episode.get("labels", {})
        steps = episode["steps"]
        critical_ts = set(labels.get("critical_steps", []))
        utility_by_step = {str(key): value for key, value in labels.get("utility_by_step", {}).items()}
        rows = []  # per step: (t, cost per track, api id, api is str, priority, utility, critical)
        # per field present: (step, slot, value id, fragment bytes), written to the arrays in one go
        # per episode (numpy item assignment costs ~100 ns each, a third of encoding before)
        fields = []
        for i, step in enumerate(steps):
            observation, metadata, t = step.get("observation"), step.get("metadata", {}), step["t"]
            try:
                api, api_str, version = -1, False, 0
                if isinstance(observation, dict):
                    # json.dumps(obs, sort_keys=True) is '{' + ', '.join('"key": value') + '}': its
                    # length follows from the fragments (all keys are strings; else dumps it)
                    fragments = 0
                    for key, value in observation.items():
                        if key == "api":
                            api_id_len = field(value)
                            fragments += API_FRAGMENT_BYTES + api_id_len[1]
                            if value is not None:
                                api, api_str = api_id_len[0], isinstance(value, str)
                                if api_str:
                                    if value not in endpoint_memo:
                                        endpoint_memo[value] = api_endpoint(value)
                                    endpoint_key[n, i], version = endpoint_memo[value]
                            continue
                        value_id, value_len = field(value)
                        fragment = key_lengths[key] + 2 + value_len  # '"key": value'
                        fields.append((i, field_slot[key], value_id, fragment))
                        fragments += fragment
                    if all(type(key) is str for key in observation):
                        observation_len = 2 + fragments + 2 * max(len(observation) - 1, 0)
                    else:
                        observation_len = json_len(observation)
                    obs_version = observation.get("version")
                    if version == 0 and type(obs_version) is int and abs(obs_version) < 2**31:
                        version = obs_version
                else:
                    observation_len = json_len(observation)
                    values.canonical(observation)  # rejects non-JSON values early
            except (TypeError, ValueError) as err:
                raise EpisodeFormatError(f"{source}: episode {n}, step {i} (t={t}): observation is not "
                                         f"JSON-serialisable ({err})") from None
            priority, utility = metadata.get("priority"), utility_by_step.get(str(t))
            rows.append((t, *(observation_len + view + HEADER_BYTES + INDEX_BYTES for view in view_lens(metadata)),
                         api, api_str, 0.0 if priority is None else float(priority),
                         0.0 if utility is None else float(utility), t in critical_ts, version))
        columns = list(zip(*rows))
        count = len(steps)
        if fields:
            at_step, slot, value_id, fragment = (np.array(column) for column in zip(*fields))
            field_present[n, at_step, slot] = True
            field_value[n, at_step, slot] = value_id
            field_frag_len[n, at_step, slot] = fragment
        version_number[n, :count] = columns[-1]
        step_t[n, :count] = columns[0]
        cost[n, :count] = np.array(columns[1:1 + len(TRACKS)]).T
        api_id[n, :count], api_is_str[n, :count] = columns[1 + len(TRACKS)], columns[2 + len(TRACKS)]
        priority64[n, :count], utility64[n, :count], critical[n, :count] = columns[3 + len(TRACKS):-1]
        valid[n, :count] = True
        t_last[n] = steps[-1]["t"]
        length[n] = len(steps)
        n_critical[n] = len(critical_ts)
        total_drift[n] = labels.get("total_drift_events", 0)
        episode_ids.append(labels.get("episode_id", n))
        modes.append(str(labels.get("mode", "")))

    # Per-episode dense api index (tables indexed by api stay small); A is static through api_ids' shape.
    api_index = np.full(shape, -1, np.int32)
    local_apis = [list(dict.fromkeys(api_id[n][api_id[n] >= 0].tolist())) for n in range(len(episodes))]
    api_ids = np.full((len(episodes), max(max(len(apis) for apis in local_apis), 1)), -1, np.int32)
    for n, apis in enumerate(local_apis):
        lookup = {api: index for index, api in enumerate(apis)}
        api_ids[n, :len(apis)] = apis
        api_index[n] = [lookup.get(api, -1) for api in api_id[n].tolist()]

    endpoint_index = np.full(shape, -1, np.int32)
    for n in range(len(episodes)):
        lookup: dict = {}
        endpoint_index[n] = [-1 if key is None else lookup.setdefault(key, len(lookup)) for key in endpoint_key[n]]

    arrays = dict(valid=valid, step_t=step_t, api_id=api_id, api_is_str=api_is_str, api_index=api_index, api_ids=api_ids,
                  field_value=field_value, field_present=field_present, field_frag_len=field_frag_len,
                  utility=utility64.astype(np.float32), critical=critical, t_last=t_last, length=length,
                  endpoint_index=endpoint_index, version_number=version_number)
    arrays.update(_priority_arrays(priority64, valid))
    return EncodedEpisodes(arrays=arrays, write_cost=cost, utility64=utility64, priority64=priority64,
                           n_critical=n_critical, total_drift_events=total_drift, episode_id=episode_ids, mode=modes,
                           field_keys=sorted(field_slot, key=field_slot.get))


def _priority_arrays(priority64: np.ndarray, valid: np.ndarray) -> dict:
    """Dense ranks of the batch's distinct priorities (0.0 always among them: a missing, hidden or
    delta-item priority counts as 0). R = the number of levels is static through the levels' shape."""
    distinct = np.unique(np.concatenate([priority64[valid], [0.0]]))
    n_episodes = len(priority64)
    return dict(priority=round_up_float32(priority64), priority_rank=np.searchsorted(distinct, priority64).astype(np.int32),
                priority_levels=np.broadcast_to(round_up_float32(distinct), (n_episodes, len(distinct))).copy(),
                zero_rank=np.full(n_episodes, np.searchsorted(distinct, 0.0), np.int32))


def concat_encoded(parts: Sequence[EncodedEpisodes]) -> EncodedEpisodes:
    """One encoding of several (same T): field slots aligned by key, tables padded, priority ranks
    recomputed over the union. Value and api ids are only ever compared within an episode, so
    each part keeps its own."""
    if len({part.n_steps for part in parts}) != 1:
        raise ValueError("concat_encoded: parts must share the step count T (pass n_steps when encoding)")
    keys = list(dict.fromkeys(key for part in parts for key in part.field_keys))
    n_fields, n_apis = max(len(keys), 1), max(part.arrays["api_ids"].shape[1] for part in parts)
    pieces = {name: [] for name in parts[0].arrays if name not in ("priority", "priority_rank", "priority_levels",
                                                                  "zero_rank")}
    for part in parts:
        slots = [keys.index(key) for key in part.field_keys]
        for name in pieces:
            value = part.arrays[name]
            if name.startswith("field_"):
                fill = NONE_ID if name == "field_value" else 0
                aligned = np.full(value.shape[:2] + (n_fields,), fill, value.dtype)
                aligned[:, :, slots] = value[:, :, :len(slots)]
                value = aligned
            elif name == "api_ids":
                value = np.pad(value, ((0, 0), (0, n_apis - value.shape[1])), constant_values=-1)
            pieces[name].append(value)
    arrays = {name: np.concatenate(values) for name, values in pieces.items()}
    priority64 = np.concatenate([part.priority64 for part in parts])
    arrays.update(_priority_arrays(priority64, arrays["valid"]))
    join = lambda name: np.concatenate([getattr(part, name) for part in parts])  # noqa: E731
    return EncodedEpisodes(arrays=arrays, write_cost=join("write_cost"), utility64=join("utility64"),
                           priority64=priority64, n_critical=join("n_critical"),
                           total_drift_events=join("total_drift_events"),
                           episode_id=[i for part in parts for i in part.episode_id],
                           mode=[m for part in parts for m in part.mode], field_keys=keys)
