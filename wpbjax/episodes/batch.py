"""Episode arrays as typed pytrees: :class:`EpisodeBatch` (what the engine sees, one track) and
:class:`EncodedEpisodes` (a host-side episode set: both tracks' costs plus the labels scoring needs).

Shapes: N episodes, T steps (padded; ``valid`` marks real steps), F field slots (one per
distinct non-``api`` key of the batch's dict observations), R priority levels (distinct values),
A distinct apis (the most in one episode).

Adding a field is a one-place change: declare it on :class:`EpisodeBatch` (the engine sees it) or on
:class:`EncodedEpisodes` (host only) with :func:`column`, saying how :func:`concat` aligns its last
axis when sets differ there (``align="pad"`` with a ``fill``, or ``align="fields"`` for an axis of
field slots); then compute it in each encoder (``encode.encode_episodes``, ``jax_gen.to_encoded``).
``take``, ``concat``, ``host_batch`` and device placement are tree maps and need no change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np

from wpbjax.common.constants import NONE
from wpbjax.common.tracks import TRACKS, check_track, sees_priority

# Host bytes per episode-step of an encoded episode set with the published modes' 3 observation fields
# (docs/performance.md): what a sweep holds in memory for its episodes.
ENCODED_BYTES_PER_STEP = 87
NULL_VALUE_ID = 0  # id of JSON null: the value ``old.get(key)`` compares with when the key is absent


def column(*, align: str | None = None, fill=0, default=dataclasses.MISSING):
    """A per-episode array field. ``align``: how :func:`concat` joins sets that differ in the last
    axis: ``None`` (never differs), ``"pad"`` (pad to the widest with ``fill``) or ``"fields"``
    (F slots placed by key, ``fill`` in slots a set lacks)."""
    if align not in (None, "pad", "fields"):
        raise ValueError(f"align must be None, 'pad' or 'fields'; got {align!r}")
    return dataclasses.field(default=default, metadata={"align": align, "fill": fill})


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EpisodeBatch:
    """What the engine sees of a batch of episodes, for one track.

    Leading axes are ``[N, T]``; ``vmap`` over the episode axis gives the per-episode view
    the policies and the store work on (same fields, one axis fewer). In an :class:`EncodedEpisodes`
    ``write_cost`` carries a trailing track axis ``[N, T, len(TRACKS)]``.
    """

    valid: jax.Array = column()  # [N, T] bool   real step (False on padding)
    step_t: jax.Array = column()  # [N, T] int32  the step's own ``t``
    write_cost: jax.Array = column()  # [N, T] int32  bytes of a WRITE under this track's view (SEMANTICS §2)
    api_id: jax.Array = column()  # [N, T] int32  id of obs["api"] under Python equality; NONE if absent/null/not a dict
    api_is_str: jax.Array = column()  # [N, T] bool   obs["api"] is a string (scoring of deltas, §4)
    api_index: jax.Array = column()  # [N, T] int32  the api's index among the episode's distinct apis (NONE as api_id)
    api_ids: jax.Array = column(align="pad", fill=NONE)  # [N, A] int32 api_id of each index (NONE padding)
    field_value: jax.Array = column(align="fields", fill=NULL_VALUE_ID)  # [N, T, F] int32 id of obs[key_f] under
    #   Python equality; NULL_VALUE_ID when absent
    field_present: jax.Array = column(align="fields", fill=False)  # [N, T, F] bool key_f is a key of obs (a dict)
    field_frag_len: jax.Array = column(align="fields", fill=0)  # [N, T, F] int32 len of '"key": value' in a delta (§2)
    priority: jax.Array = column()  # [N, T] float32 metadata priority, rounded *up* to float32 (0 if hidden)
    priority_rank: jax.Array = (
        column()
    )  # [N, T] int32  dense rank of the exact float64 priority among the batch's levels
    priority_levels: jax.Array = column(align="pad")  # [N, R] float32 the batch's distinct priorities (0.0 included),
    #   ascending, rounded up
    zero_rank: jax.Array = column()  # [N] int32     rank of priority 0.0 (missing, hidden and delta items rank here)
    utility: jax.Array = column()  # [N, T] float32 u_t (hidden from non-oracle policies by convention)
    critical: jax.Array = column()  # [N, T] bool   t is in critical_steps
    t_last: jax.Array = column()  # [N] int32     the last real step's t
    length: jax.Array = column()  # [N] int32     number of real steps
    # What an observer reads of a string api "<...>.v<k>.<...>" (wpbjax.learn's gates use them;
    # None where an episode source does not provide them):
    endpoint_index: jax.Array | None = column(default=None)  # [N, T] int32 per-episode index of the api with its
    #   version segment removed (NONE: no string api)
    version_number: jax.Array | None = column(default=None)  # [N, T] int32 k of that segment (else an int
    #   obs["version"], else 0)
    # A step without an api of its own that names one (a migration guide's "new_api"; see
    # wpbjax.episodes.encode): the newest version it names, of an endpoint the episode has as an api
    named_endpoint: jax.Array | None = column(default=None)  # [N, T] int32 endpoint_index of that api (NONE: none)
    named_version: jax.Array | None = column(default=None)  # [N, T] int32 its version segment's k (0: none)
    # Facts and versions for the integrity metrics (wpbjax.episodes.facts; None: no fact tables). K = the most
    # facts one step carries; a slot (pos, k) is named by k * T + pos, so padding K renames nothing:
    fact_pair: jax.Array | None = column(align="pad", fill=NONE, default=None)  # [N, T, K] int32 slot of this
    #   slot's (fact, version) first observation (NONE: no fact)
    fact_key: jax.Array | None = column(align="pad", fill=NONE, default=None)  # [N, T, K] int32 slot of its
    #   fact's first observation
    fact_prev: jax.Array | None = column(align="pad", fill=NONE, default=None)  # [N, T, K] int32 at a version
    #   change, the previous version's pair (NONE otherwise)
    fact_latest: jax.Array | None = column(align="pad", fill=False, default=None)  # [N, T, K] bool the pair (at
    #   its first slot) is its fact's latest version
    fact_probes: jax.Array | None = column(align="pad", fill=0, default=None)  # [N, T, K] int32 probe times
    #   finding this pair current (at its first slot)
    transient: jax.Array | None = column(default=None)  # [N, T] bool the step's facts should none of them persist

    @property
    def n_episodes(self) -> int:
        return self.valid.shape[0]

    @property
    def n_steps(self) -> int:
        return self.valid.shape[-1]

    def take(self, indices) -> EpisodeBatch:
        """The sub-batch of the given episode indices (host-side helper)."""
        return take(self, indices)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EncodedEpisodes:
    """A set of episodes as host arrays for both tracks, plus the labels the tables need.

    Every leaf has the episode axis first, so :func:`take` and :func:`concat` are tree maps;
    ``field_keys`` is static (the key of each field slot, shared by the whole set).
    Build one with :meth:`from_columns`.
    """

    arrays: EpisodeBatch  # numpy leaves; write_cost [N, T, len(TRACKS)] (order of TRACKS)
    utility64: np.ndarray = column()  # [N, T] float64 exact u_t for scoring and the oracle
    priority64: np.ndarray = column()  # [N, T] float64 exact metadata priority (0 when missing)
    n_critical: np.ndarray = column()  # [N] int32 |R| (critical t's, including any not among the steps)
    total_drift_events: np.ndarray = column()  # [N] int32
    episode_id: np.ndarray = column()  # [N] object the labels' episode_id (index in the set when absent)
    mode: np.ndarray = column()  # [N] object the labels' mode ("" when absent)
    field_keys: tuple = dataclasses.field(default=(), metadata={"static": True})  # [F] key of each field slot
    # Probes (reads, wpbjax.episodes.probes; None: none asked). Q = the most probes of an episode, -1 padding:
    probe_pos: np.ndarray | None = column(align="pad", fill=-1, default=None)  # [N, Q] int32 asked after this
    probe_as_of: np.ndarray | None = column(align="pad", fill=-1, default=None)  # [N, Q] int32 ... about the state
    #   after this step
    probe_fact: np.ndarray | None = column(align="pad", fill=-1, default=None)  # [N, Q] int32 fact number (-1: one
    #   never carried)
    probe_kind: np.ndarray | None = column(align="pad", fill=-1, default=None)  # [N, Q] int8 CURRENT, AS_OF, ...
    #   A probe may ask for several facts: one row each, the probe's rows adjacent and sharing pos, as-of and kind
    probe_group: np.ndarray | None = column(align="pad", fill=-1, default=None)  # [N, Q] int32 the row's probe
    probe_weight: np.ndarray | None = column(align="pad", fill=-1.0, default=None)  # [N, Q] float64 its fact's weight
    fact_names: np.ndarray | None = column(default=None)  # [N] object tuple: each fact's name, by fact number
    # Crashes (tiered runs, wpbjax.core.tiers; None: none labelled). C = the most of an episode, -1 padding:
    crash_pos: np.ndarray | None = column(align="pad", fill=-1, default=None)  # [N, C] int32 a session ends
    #   abruptly just before this step (the episode's ``crashes`` label)

    @classmethod
    def from_columns(
        cls,
        columns: dict,
        *,
        utility64,
        priority64,
        n_critical,
        total_drift_events,
        episode_id: Sequence,
        mode: Sequence,
        field_keys: Sequence,
    ) -> EncodedEpisodes:
        """The one constructor: ``columns`` holds every :class:`EpisodeBatch` field except the ones
        derived here (``utility`` from ``utility64``, the priority ranks from ``priority64``)."""
        valid = columns["valid"]
        arrays = EpisodeBatch(
            **columns, utility=np.asarray(utility64).astype(np.float32), **priority_columns(priority64, valid)
        )
        return cls(
            arrays=arrays,
            utility64=utility64,
            priority64=priority64,
            n_critical=n_critical,
            total_drift_events=total_drift_events,
            episode_id=_object_array(episode_id),
            mode=_object_array(mode),
            field_keys=tuple(field_keys),
        )

    @property
    def n_episodes(self) -> int:
        return len(self.episode_id)

    @property
    def n_steps(self) -> int:
        return self.utility64.shape[1]

    @property
    def write_cost(self) -> np.ndarray:
        """[N, T, len(TRACKS)] int32 write costs per track."""
        return self.arrays.write_cost

    def track_costs(self, track: str) -> np.ndarray:
        """[N, T] int32 write costs under ``track``'s view."""
        return self.arrays.write_cost[:, :, TRACKS.index(check_track(track))]

    def take(self, indices) -> EncodedEpisodes:
        """The episodes ``indices`` ([n] int) as a set."""
        return take(self, indices)

    def host_batch(self, track: str, indices=None) -> EpisodeBatch:
        """(A subset of) the episodes for ``track`` as numpy arrays.

        Priority is hidden (0.0, the rank of 0.0) on tracks that may not see it.
        """
        batch = self.arrays if indices is None else take(self.arrays, indices)
        batch = dataclasses.replace(batch, write_cost=batch.write_cost[:, :, TRACKS.index(check_track(track))])
        if not sees_priority(track):
            batch = dataclasses.replace(
                batch,
                priority=np.zeros_like(batch.priority),
                priority_rank=np.broadcast_to(batch.zero_rank[:, None], batch.priority_rank.shape).copy(),
            )
        return batch

    def batch(self, track: str, indices=None, devices=None) -> EpisodeBatch:
        """:meth:`host_batch` on the default device, or split over ``devices`` (``wpbjax.runtime.devices.place``).
        Straight from host memory: ``jnp.asarray`` would compile a small program per array shape."""
        from wpbjax.runtime.devices import place

        host = self.host_batch(track, indices)
        return jax.device_put(host) if devices is None else place(host, devices)


def _object_array(values: Sequence) -> np.ndarray:
    """[N] object array of arbitrary labels (np.asarray would split list-valued labels)."""
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out


def round_up_float32(values: np.ndarray) -> np.ndarray:
    """Smallest float32 >= each float64 value, so ``priority > tau`` is exact for every float32 ``tau``."""
    rounded = np.asarray(values, np.float64).astype(np.float32)
    low = rounded.astype(np.float64) < values
    rounded[low] = np.nextafter(rounded[low], np.float32(np.inf))
    return rounded


def priority_columns(priority64: np.ndarray, valid: np.ndarray) -> dict:
    """Dense ranks of the set's distinct priorities (0.0 always among them: a missing, hidden or
    delta-item priority counts as 0). R = the number of levels is static through the levels' shape."""
    distinct = np.unique(np.concatenate([priority64[valid], [0.0]]))
    n_episodes = len(priority64)
    return dict(
        priority=round_up_float32(priority64),
        priority_rank=np.searchsorted(distinct, priority64).astype(np.int32),
        priority_levels=np.broadcast_to(round_up_float32(distinct), (n_episodes, len(distinct))).copy(),
        zero_rank=np.full(n_episodes, np.searchsorted(distinct, 0.0), np.int32),
    )


def take(tree, indices):
    """The episodes ``indices`` of an :class:`EpisodeBatch` or :class:`EncodedEpisodes` (any pytree
    whose leaves have the episode axis first)."""
    indices = np.asarray(indices)
    return jax.tree_util.tree_map(lambda leaf: leaf[indices], tree)


def concat(parts: Sequence[EncodedEpisodes]) -> EncodedEpisodes:
    """One set of several (same T): every column's last axis aligned as its :func:`column` says,
    then joined; priority ranks recomputed over the union. Value and api ids are only ever
    compared within an episode, so each part keeps its own."""
    if len({part.n_steps for part in parts}) != 1:
        raise ValueError("concat: parts must share the step count T (pass n_steps when encoding)")
    keys = tuple(dict.fromkeys(key for part in parts for key in part.field_keys))
    parts = _fill_missing(parts)
    widths = {
        name: max([_leaf(part, name).shape[-1] for part in parts if _leaf(part, name) is not None] + [0])
        for name in _aligned_names("pad")
    }
    aligned = [_align(part, keys, widths) for part in parts]
    joined = jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves), *aligned)
    ranks = priority_columns(joined.priority64, joined.arrays.valid)
    return dataclasses.replace(joined, arrays=dataclasses.replace(joined.arrays, **ranks))


def _fill_missing(parts: Sequence[EncodedEpisodes]) -> list:
    """Parts given an optional host column (probes) that others lack: the others get it empty (no probes,
    width 0) or, for an [N] column (fact names), None per episode."""
    parts = list(parts)
    for owner, field in _column_specs():
        if owner or field.default is not None:
            continue
        values = [getattr(part, field.name) for part in parts]
        given = [value for value in values if value is not None]
        if not given or len(given) == len(values):
            continue
        for index, value in enumerate(values):
            if value is None:
                n = parts[index].n_episodes
                fill = (
                    np.full((n,) + given[0].shape[1:-1] + (0,), field.metadata["fill"], given[0].dtype)
                    if given[0].ndim > 1
                    else np.full(n, None, object)
                )
                parts[index] = dataclasses.replace(parts[index], **{field.name: fill})
    return parts


def pad_to_buckets(encoded: EncodedEpisodes) -> EncodedEpisodes:
    """``encoded`` with each padded axis (the apis, the priority levels, ...) widened with its fill
    to the next power of two: sets made apart (the blocks of a generated set) then mostly share
    shapes, so one compile serves them. Only the widths change (R levels stay R ranks of R slots)."""
    changes = {"arrays": {}, "": {}}
    for owner, field in _column_specs():
        value = _leaf(encoded, (owner, field.name))
        if field.metadata["align"] != "pad" or value is None:
            continue
        extra = (1 << (value.shape[-1] - 1).bit_length()) - value.shape[-1]
        if extra:
            changes[owner][field.name] = np.pad(
                value, [(0, 0)] * (value.ndim - 1) + [(0, extra)], constant_values=field.metadata["fill"]
            )
    return dataclasses.replace(encoded, arrays=dataclasses.replace(encoded.arrays, **changes["arrays"]), **changes[""])


def _column_specs():
    """(owner, field) for every column of both classes, ``owner`` "arrays" or "" (the set itself)."""
    for owner, cls in (("arrays", EpisodeBatch), ("", EncodedEpisodes)):
        for field in dataclasses.fields(cls):
            if "align" in field.metadata:
                yield owner, field


def _aligned_names(align: str) -> list:
    return [(owner, field.name) for owner, field in _column_specs() if field.metadata["align"] == align]


def _leaf(part: EncodedEpisodes, name: tuple):
    owner, field = name
    return getattr(part.arrays if owner else part, field)


def _align(part: EncodedEpisodes, keys: tuple, widths: dict) -> EncodedEpisodes:
    """``part`` with its field slots placed as ``keys`` and its padded axes ``widths`` wide."""
    slots = [keys.index(key) for key in part.field_keys]
    changes = {"arrays": {}, "": {}}
    for owner, field in _column_specs():
        value, align, fill = _leaf(part, (owner, field.name)), field.metadata["align"], field.metadata["fill"]
        if value is None or align is None:
            continue
        if align == "fields":
            out = np.full(value.shape[:-1] + (max(len(keys), 1),), fill, value.dtype)
            out[..., slots] = value[..., : len(slots)]
        else:
            extra = widths[(owner, field.name)] - value.shape[-1]
            out = np.pad(value, [(0, 0)] * (value.ndim - 1) + [(0, extra)], constant_values=fill)
        changes[owner][field.name] = out
    return dataclasses.replace(
        part, arrays=dataclasses.replace(part.arrays, **changes["arrays"]), field_keys=keys, **changes[""]
    )
