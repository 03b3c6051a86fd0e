"""Facts and versions per step: what write-integrity metrics (wpbjax.scoring.integrity) are measured on.

A step may carry versions of facts: (fact id, version, should-persist) triples. Where they come from:

* an episode's optional label ``facts`` (object keyed by ``t`` as a string, like ``utility_by_step``:
  a list of ``[fact_id, version, should_persist]`` per step; one WRIT session may state several);
* else the api rule: a step whose observation has a string ``api`` carries one fact, the api with its
  ``v<k>`` segment removed (``api.v*.endpoint_j``, i.e. endpoint ``j`` in the drift generators), at
  version ``k`` (else an int ``obs["version"]``, else 0) — ``EpisodeBatch.endpoint_index`` /
  ``version_number``, so the generators' arrays (made without JSON) derive it too;
* else none, and the integrity columns are blank.

Extra probe times for temporal accuracy come from the optional label ``probe_steps`` (list of ``t``;
WRIT's ``as_of``). Facts that should not persist (WRIT ``non_memory``, retracted, expired) count only
towards over-retention; every other metric is over persisting facts.

Encoded as per-slot tables ``[N, T, K]`` (K = most facts any step of the batch carries). Slot (pos, k) is
named s = k*T + pos (so padding K renames nothing). Every (fact, version) pair and every fact is named by
the slot of its first observation, so the device can mark held pairs with one scatter of size T*K and no
other table:

* ``fact_pair``   [N, T, K] int32 flat slot of the first observation of this slot's (fact, version); -1 none
* ``fact_key``    [N, T, K] int32 flat slot of the first observation of this slot's fact; -1 none
* ``fact_prev``   [N, T, K] int32 at a pair's first slot, when it is a new version of a seen fact: the pair
                  observed just before (a version change prev -> this); -1 otherwise
* ``fact_latest`` [N, T, K] bool  at a pair's first slot: it is its fact's last observed version
* ``fact_probes`` [N, T, K] int32 at a pair's first slot: how many probe times find it current
* ``transient``   [N, T]    bool  the step carries facts, none of which should persist
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from wpbjax.episodes.jsonl import EpisodeFormatError

N_EVEN_PROBES = 8


_VERSION_SEGMENT = re.compile(r"(?:^|(?<=\.))v(\d+)(?=\.|$)")  # a dot-separated segment "v<digits>"


def api_endpoint(api: str) -> tuple[str, int]:
    """(endpoint, version) of an api string: the string with its first ``v<digits>`` segment
    replaced by ``v*``, and those digits as an int (``("api.v*.endpoint_3", 2)`` for
    ``"api.v2.endpoint_3"``); ``(api, 0)`` when it has no such segment."""
    match = _VERSION_SEGMENT.search(api)
    if match is None:
        return api, 0
    return api[: match.start()] + "v*" + api[match.end() :], int(match.group(1))


def named_api(value) -> tuple[str, int] | None:
    """(endpoint, version) of a string that names an api as an identifier -- no whitespace, and a
    ``v<digits>`` segment after at least one other (``"api.v3.endpoint_2"``) -- else None. A step
    without an api of its own may name one this way (a migration guide's ``"new_api"``); prose
    (``"see api.v3.endpoint_2"``) and bare release numbers (``"v7.0.0"``) name none."""
    if type(value) is not str or ".v" not in value or any(char.isspace() for char in value):
        return None
    match = _VERSION_SEGMENT.search(value)
    if match is None or match.start() == 0:
        return None
    return api_endpoint(value)


def even_probes(length: np.ndarray) -> np.ndarray:
    """[N, 8] int32 probe positions evenly spaced over each episode (the last one at its last step)."""
    fractions = np.arange(1, N_EVEN_PROBES + 1)
    return (np.asarray(length)[:, None] * fractions // N_EVEN_PROBES - 1).astype(np.int32)


def _dense(keys: np.ndarray) -> np.ndarray:
    """Dense ids 0.. of int64 ``keys`` (equal keys, equal ids): one sort."""
    return np.unique(keys, return_inverse=True)[1].reshape(-1)


def _leaders(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, last): for each element of dense ``group`` (element order = time order), the index of the
    first and of the last element of its group. One stable sort."""
    order = np.argsort(group, kind="stable")
    starts = np.r_[True, group[order][1:] != group[order][:-1]]
    ends = np.r_[starts[1:], True]
    first, last = np.empty_like(order), np.empty_like(order)
    first[order] = order[starts][np.cumsum(starts) - 1]
    last[order] = order[ends][np.cumsum(starts) - 1]
    return first, last


def fact_tables(
    fact: np.ndarray,
    version: np.ndarray,
    persist: np.ndarray,
    valid: np.ndarray,
    length: np.ndarray,
    extra_probes: np.ndarray | None = None,
) -> dict:
    """The encoded fact tables (module note) from raw per-slot facts.

    ``fact``: [N, T, K] int per-episode fact number (-1: no fact); ``version``: [N, T, K] int version
    number within its fact; ``persist``: [N, T, K] bool; ``valid``: [N, T]; ``length``: [N];
    ``extra_probes``: [N, P] probe positions (-1 padding) beyond the 8 evenly spaced ones.
    """
    n_episodes, n_steps, width = fact.shape
    carried = (fact >= 0) & valid[:, :, None]
    kept = carried & persist
    members = np.flatnonzero(kept)  # row-major over (episode, pos, k): time order within an episode
    if members.size == 0:
        none = np.full(fact.shape, -1, np.int32)
        return dict(
            fact_pair=none,
            fact_key=none.copy(),
            fact_prev=none.copy(),
            fact_latest=np.zeros(fact.shape, bool),
            fact_probes=np.zeros(fact.shape, np.int32),
            transient=carried.any(-1) & ~kept.any(-1),
        )
    episode = members // (n_steps * width)
    fact_of = fact.reshape(-1)[members].astype(np.int64)
    version_of = version.reshape(-1)[members].astype(np.int64)
    fact_group = _dense(episode * (fact_of.max(initial=0) + 1) + fact_of)
    span = version_of.max(initial=0) - version_of.min(initial=0) + 1
    pair_group = _dense(fact_group * span + version_of - version_of.min(initial=0))
    first_pair, _ = _leaders(pair_group)  # indices into ``members``
    first_fact, last_fact = _leaders(fact_group)
    is_first = first_pair == np.arange(len(members))
    # in each fact's time order: the version changes (a pair's first slot after another pair's) and the
    # interval each observation is current for (until the fact's next observation, or the episode's end)
    order = np.argsort(fact_group, kind="stable")
    same_fact = np.r_[fact_group[order][1:] == fact_group[order][:-1], False]
    before = np.r_[-1, first_pair[order][:-1]]
    change = np.r_[False, same_fact[:-1]] & is_first[order] & (before != first_pair[order])
    position = members // width % n_steps
    until = np.where(same_fact, np.r_[position[order][1:], 0], length[episode[order]])

    flat = lambda index: members[index]  # noqa: E731 an index into ``members`` -> row-major index

    def named(row_major):  # a row-major index into [N, T, K] -> the per-episode slot name k*T + pos
        within = row_major % (n_steps * width)
        return within % width * n_steps + within // width

    def table(values, fill, dtype):
        out = np.full(fact.size, fill, dtype)
        out[values[0]] = values[1]
        return out.reshape(fact.shape)

    prev = table((flat(order[change]), named(flat(before[change]))), -1, np.int32)
    latest = table((flat(first_pair[last_fact]), True), False, bool)
    probes_in = _probes_between(position[order], until, episode[order], n_episodes, n_steps, length, extra_probes)
    probes = np.zeros(fact.size, np.int64)
    np.add.at(probes, flat(first_pair[order]), probes_in)
    return dict(
        fact_pair=table((members, named(flat(first_pair))), -1, np.int32),
        fact_key=table((members, named(flat(first_fact))), -1, np.int32),
        fact_prev=prev,
        fact_latest=latest,
        fact_probes=probes.reshape(fact.shape).astype(np.int32),
        transient=carried.any(-1) & ~kept.any(-1),
    )


def _probes_between(start, until, episode, n_episodes, n_steps, length, extra_probes) -> np.ndarray:
    """How many probe positions of each observation's episode lie in [start, until)."""
    probes = even_probes(length)
    if extra_probes is not None and extra_probes.size:
        probes = np.concatenate([probes, extra_probes.astype(np.int32)], axis=1)
    counts = np.zeros((n_episodes, n_steps + 1), np.int64)  # probes at each position, then running sums
    rows = np.broadcast_to(np.arange(n_episodes)[:, None], probes.shape)
    real = probes >= 0
    np.add.at(counts, (rows[real], probes[real] + 1), 1)
    running = np.cumsum(counts, axis=1)  # running[n, p] = probes of episode n at positions < p
    return running[episode, until] - running[episode, start]


def slot_names(n_steps: int, width: int) -> np.ndarray:
    """[T, K] the name k*T + pos of each slot."""
    return np.arange(width)[None, :] * n_steps + np.arange(n_steps)[:, None]


def denominators(batch, indices=None) -> dict:
    """[n] int64 per-episode totals each integrity ratio divides by (0: undefined), from an
    :class:`~wpbjax.episodes.batch.EpisodeBatch`'s fact tables (of the episodes ``indices``)."""
    select = slice(None) if indices is None else np.asarray(indices)
    pair = batch.fact_pair[select]
    first = pair == slot_names(*pair.shape[1:])
    return dict(
        n_facts=(batch.fact_latest[select] & first).sum((1, 2), dtype=np.int64),
        n_pairs=first.sum((1, 2), dtype=np.int64),
        n_changes=(batch.fact_prev[select] >= 0).sum((1, 2), dtype=np.int64),
        n_probes=batch.fact_probes[select].sum((1, 2), dtype=np.int64),
        n_transient=batch.transient[select].sum(1, dtype=np.int64),
    )


def from_api(endpoint_index: np.ndarray, version_number: np.ndarray, valid: np.ndarray, length: np.ndarray) -> dict:
    """The fact tables under the api rule: fact = endpoint, version = its version number (K = 1)."""
    fact = np.where(valid & (endpoint_index >= 0), endpoint_index, -1)[:, :, None]
    return fact_tables(fact, version_number[:, :, None], np.ones(fact.shape, bool), valid, length)


def from_episodes(
    episodes: Sequence[dict],
    source: str,
    valid: np.ndarray,
    endpoint_index: np.ndarray,
    version_number: np.ndarray,
    length: np.ndarray,
) -> dict:
    """The fact tables of dict episodes: the ``facts`` label where an episode has one, else the api rule."""
    labelled = [index for index, episode in enumerate(episodes) if "facts" in episode.get("labels", {})]
    extra = [_probe_positions(episode, f"{source}: episode {index}") for index, episode in enumerate(episodes)]
    if not labelled and not any(extra):
        return from_api(endpoint_index, version_number, valid, length)
    per_episode = {index: _label_facts(episodes[index], f"{source}: episode {index}") for index in labelled}
    width = max([len(step) for facts in per_episode.values() for step in facts] + [1])
    shape = valid.shape + (width,)
    fact = np.where(valid & (endpoint_index >= 0), endpoint_index, -1)[:, :, None]
    fact = np.concatenate([fact, np.full(shape[:2] + (width - 1,), -1, fact.dtype)], axis=2)
    version = np.zeros(shape, np.int64)
    version[:, :, 0] = version_number
    persist = np.ones(shape, bool)
    for index, facts in per_episode.items():
        fact[index], persist[index] = -1, True
        names: dict = {}
        versions: dict = {}
        for pos, step in enumerate(facts):
            for k, (name, value, keep) in enumerate(step):
                fact[index, pos, k] = names.setdefault(name, len(names))
                version[index, pos, k] = versions.setdefault((name, _hashable(value)), len(versions))
                persist[index, pos, k] = keep
    most = max([len(positions) for positions in extra] + [0])
    extra_probes = np.full((len(episodes), most), -1, np.int32)
    for index, positions in enumerate(extra):
        extra_probes[index, : len(positions)] = positions
    return fact_tables(fact, version, persist, valid, length, extra_probes)


def _hashable(value):
    return repr(value) if isinstance(value, (list, dict)) else value


def _label_facts(episode: dict, where: str) -> list:
    """Per step position: the list of (fact id, version, should-persist) of the ``facts`` label."""
    labels, steps = episode["labels"], episode["steps"]
    table = labels["facts"]
    if not isinstance(table, dict):
        raise EpisodeFormatError(f"{where}: labels.facts must be an object keyed by t")
    known = {str(step["t"]) for step in steps}
    for key in table:
        if key not in known:
            raise EpisodeFormatError(f"{where}: labels.facts[{key!r}] names no step's t")
    out = []
    for step in steps:
        entries = table.get(str(step["t"]), [])
        if not isinstance(entries, list):
            raise EpisodeFormatError(f"{where}: labels.facts[{str(step['t'])!r}] must be a list")
        parsed = []
        for entry in entries:
            if (
                not isinstance(entry, list)
                or len(entry) != 3
                or not isinstance(entry[0], str)
                or not isinstance(entry[2], bool)
            ):
                raise EpisodeFormatError(
                    f"{where}: labels.facts[{str(step['t'])!r}]: each entry must be "
                    f"[fact_id (string), version, should_persist (bool)]; got {entry!r}"
                )
            parsed.append(tuple(entry))
        out.append(parsed)
    return out


def _probe_positions(episode: dict, where: str) -> list:
    """Step positions of the ``probe_steps`` label (each t must name a step)."""
    probe_steps = episode.get("labels", {}).get("probe_steps", [])
    position = {step["t"]: pos for pos, step in enumerate(episode["steps"])}
    if not isinstance(probe_steps, list) or any(t not in position for t in probe_steps):
        raise EpisodeFormatError(f"{where}: labels.probe_steps must be a list of step t's; got {probe_steps!r}")
    return [position[t] for t in probe_steps]
