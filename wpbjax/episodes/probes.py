"""Probes: the queries an agent makes of its memory during an episode (what reads are scored on, wpbjax.scoring.reads).

A probe asks, after step ``pos``, for the value of one fact — a fact as the integrity metrics name them
(:mod:`wpbjax.episodes.facts`: an api with its version segment removed, or a WRIT memory event) — either as it
is now (``current``), as it was after an earlier step (``as_of``), or about a fact not seen yet (``never_seen``,
where the right answer is to abstain). Where they come from:

* the episode's label ``probes``: a list of ``{"t": int, "fact": str, "kind": "current" | "as_of" |
  "never_seen", "as_of": int}`` (``as_of`` a ``t``, only for that kind; ``kind`` defaults from it). ``fact``
  is a fact id of the ``facts`` label, or an api (its version segment is dropped: ``api.v3.endpoint_2`` asks
  for ``api.v*.endpoint_2``); a fact the episode never carries is a fact of its own (never seen);
* WRIT scenarios: their probe (:mod:`wpbjax.episodes.importers.writ` writes it into ``probes``);
* else, when asked, :func:`generate` (a documented default, deterministic per episode).

Encoded as host arrays ``[N, Q]`` (Q: the most probes of an episode; -1 padding) on
:class:`~wpbjax.episodes.batch.EncodedEpisodes`: ``probe_pos`` (the step after which it is asked),
``probe_as_of`` (the step whose state it asks for: ``probe_pos`` unless as-of), ``probe_fact`` (the fact's
number in the episode, see :func:`fact_numbers`; -1: a fact the episode never carries), ``probe_kind``
(CURRENT, AS_OF, NEVER_SEEN as labelled or generated; the right answer is computed from the facts
either way). ``fact_names`` ([N] tuples) names each episode's facts, for the retriever's relevance.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes.facts import api_endpoint
from wpbjax.episodes.validate import PROBE_KINDS, check_probe_labels, probe_kind

CURRENT, AS_OF, NEVER_SEEN, HISTORY = 0, 1, 2, 3
KIND_NAMES = PROBE_KINDS  # by code
PROBE_FIELDS = ("probe_pos", "probe_as_of", "probe_fact", "probe_kind", "probe_group", "probe_weight")
DTYPES = dict(
    probe_pos=np.int32,
    probe_as_of=np.int32,
    probe_fact=np.int32,
    probe_kind=np.int8,
    probe_group=np.int32,
    probe_weight=np.float64,
)
FILLS = dict(probe_pos=-1, probe_as_of=-1, probe_fact=-1, probe_kind=-1, probe_group=-1, probe_weight=-1.0)
BLOCK = 16384  # episodes generated at a time (the never-seen draw holds [block, Q, F] bools)


@dataclasses.dataclass(frozen=True)
class ProbeConfig:
    """The default probe generator (:func:`generate`).

    ``rate``: probes per step (an episode of L steps gets round(rate * L), at least one); each is asked after
    a uniformly drawn step. A share ``as_of_share`` asks for the state after a uniformly drawn earlier step,
    ``never_seen_share`` asks about a fact not seen yet (one first seen later in the episode, else one it
    never carries); the rest ask for the current value. The fact of a current or as-of probe is drawn by
    frequency: a uniformly drawn fact observation up to the step asked about (so busy apis are asked more).
    ``history_rate``: the share of current probes that ask for every version instead (``history``).
    ``multi_fact_rate``: the share of current, as-of and history probes that ask for 2 or 3 facts (even odds),
    the further facts drawn as the first (a draw that repeats a fact of the probe is dropped). Their defaults
    (0.4, 0.1) give the paper episodes' probes the mix of WRIT's shared scenarios (facts per probe, share of
    history probes: docs/reads.md).
    ``seed``: with the episode's mode and id, what every draw of an episode depends on (not its place in a
    set or a chunk); the one-fact probes drawn do not depend on the two rates."""

    rate: float = 0.1
    as_of_share: float = 0.2
    never_seen_share: float = 0.1
    seed: int = 0
    multi_fact_rate: float = 0.4
    history_rate: float = 0.1

    def __post_init__(self):
        names = ("rate", "as_of_share", "never_seen_share", "multi_fact_rate", "history_rate")
        for name in names:
            value = getattr(self, name)
            flag = arg(name if name.endswith("fact_rate") or name.startswith("history") else "probe_" + name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise ArgumentError(f"{flag}: expected a number within [0, 1]; got {value!r}")
            if not (np.isfinite(value) and 0 <= value <= 1):
                raise ArgumentError(f"{flag}: expected a number within [0, 1]; got {value!r}")
        if self.as_of_share + self.never_seen_share > 1:
            raise ArgumentError(
                f"{arg('probe_as_of_share')} + {arg('probe_never_seen_share')}: at most 1; got "
                f"{self.as_of_share} + {self.never_seen_share}"
            )


# --- Facts by number -----------------------------------------------------------------------------
def _by_name(table: np.ndarray) -> np.ndarray:
    """[n, T, K] per-slot table -> [n, T*K] indexed by slot name k*T + pos (wpbjax.episodes.facts)."""
    return table.swapaxes(-1, -2).reshape(table.shape[:-2] + (-1,))


def fact_numbers(fact_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense per-episode fact numbers from the fact tables: facts numbered in the order of their first
    observation's slot name (k*T + pos). ``fact_key``: [n, T, K] -> (number [n, T, K] int32, -1 where
    the slot carries no persisting fact; n_facts [n] int32)."""
    n_episodes = fact_key.shape[0]
    keys = _by_name(fact_key)  # [n, S]
    first = keys == np.arange(keys.shape[1])
    number_of_name = np.cumsum(first, axis=1, dtype=np.int32) - 1  # [n, S]
    rows = np.arange(n_episodes)[:, None, None]
    number = np.where(fact_key >= 0, number_of_name[rows, np.maximum(fact_key, 0)], -1).astype(np.int32)
    return number, first.sum(1, dtype=np.int32)


def first_positions(number: np.ndarray, n_facts: np.ndarray) -> np.ndarray:
    """[n, F] the step of each fact's first observation (F = the most facts of an episode; T where none)."""
    n_episodes, n_steps, _ = number.shape
    out = np.full((n_episodes, max(int(n_facts.max(initial=0)), 1)), n_steps, np.int32)
    rows, pos, _ = np.nonzero(number >= 0)
    np.minimum.at(out, (rows, number[rows, pos, _]), pos.astype(np.int32))
    return out


def fact_names(episodes: Sequence[dict], fact_key: np.ndarray) -> np.ndarray:
    """[N] object: each episode's fact names (a tuple, by fact number): the ``facts`` label's ids, or the
    api with its version segment replaced by ``v*`` (the api rule)."""
    number, _ = fact_numbers(fact_key)
    out = np.empty(len(episodes), object)
    for index, episode in enumerate(episodes):
        table = episode.get("labels", {}).get("facts")
        steps = episode["steps"]
        names = {}
        for pos, k in zip(*np.nonzero(number[index] >= 0)):
            fact = int(number[index, pos, k])
            if fact in names:
                continue
            if table is not None:
                names[fact] = table[str(steps[pos]["t"])][k][0]
            else:
                names[fact] = api_endpoint(steps[pos]["observation"]["api"])[0]
        out[index] = tuple(names[fact] for fact in range(len(names)))
    return out


def generated_names(endpoint_index: np.ndarray, fact_key: np.ndarray) -> np.ndarray:
    """[N] object fact names of generated drift episodes (api rule, K = 1): endpoint j is named as the
    published generator's ``api.v*.endpoint_j``."""
    out = np.empty(len(fact_key), object)
    for index in range(len(fact_key)):
        pos = np.flatnonzero(fact_key[index, :, 0] == np.arange(fact_key.shape[1]))  # first slots, in order
        out[index] = tuple(f"api.v*.endpoint_{j}" for j in endpoint_index[index, pos])
    return out


# --- Probes from labels --------------------------------------------------------------------------
def _pad(rows: list, fill: int, dtype) -> np.ndarray:
    width = max([len(row) for row in rows] + [0])
    out = np.full((len(rows), width), fill, dtype)
    for index, row in enumerate(rows):
        out[index, : len(row)] = row
    return out


def _fact_of(name: str, known: dict, labelled: bool) -> str:
    if name in known or labelled:
        return name
    return api_endpoint(name)[0]


def from_labels(episodes: Sequence[dict], source: str, names: np.ndarray) -> tuple[dict, np.ndarray]:
    """The probe arrays of the episodes' ``probes`` labels (module note; a row per asked fact) and the fact names
    extended with the facts only probes name. Episodes without the label get no probes. Errors name the episode,
    the probe and its field (:func:`wpbjax.episodes.validate.check_probe_labels`)."""
    rows: dict = {name: [] for name in PROBE_FIELDS}
    extended = names.copy()
    for index, episode in enumerate(episodes):
        labels, where = episode.get("labels", {}), f"{source}: episode {index}"
        probes = labels.get("probes", [])
        steps = episode["steps"]
        check_probe_labels(probes, {str(step["t"]): pos for pos, step in enumerate(steps)}, where)
        position = {step["t"]: pos for pos, step in enumerate(steps)}
        step_ts = np.array([step["t"] for step in steps])
        known = {name: number for number, name in enumerate(names[index])}
        row: dict = {name: [] for name in PROBE_FIELDS}
        for number, probe in enumerate(probes):
            kind = probe_kind(probe)
            pos = position[probe["t"]]
            cutoff = pos
            if kind == "as_of":  # the last step at or before it
                cutoff = int(np.searchsorted(step_ts, probe["as_of"], side="right")) - 1
            asked = probe["facts"] if "facts" in probe else [probe["fact"]]
            weights = probe.get("weights", [1.0] * len(asked))
            for name, weight in zip(asked, weights):
                name = _fact_of(name, known, "facts" in labels)
                if name not in known:
                    known[name] = len(known)
                values = (pos, cutoff, known[name], KIND_NAMES.index(kind), number, float(weight))
                for field, value in zip(PROBE_FIELDS, values):
                    row[field].append(value)
        extended[index] = tuple(known)
        for field in PROBE_FIELDS:
            rows[field].append(row[field])
    return {name: _pad(rows[name], FILLS[name], DTYPES[name]) for name in PROBE_FIELDS}, extended


# --- The default generator -----------------------------------------------------------------------
def episode_keys(mode: np.ndarray, episode_id: np.ndarray) -> np.ndarray:
    """[N] uint64: what an episode's probe draws depend on (its mode and id, not its place in a set)."""
    return np.array([zlib.crc32(f"{m}\0{e}".encode()) for m, e in zip(mode, episode_id)], np.uint64)


def _uniform(keys: np.ndarray, n_probes: int, seed: int, stream: int) -> np.ndarray:
    """[N, Q] uniforms in [0, 1): a counter-based hash (splitmix64) of (seed, episode key, probe, stream),
    so an episode's draws never depend on the others."""
    with np.errstate(over="ignore"):
        x = (
            keys[:, None] * np.uint64(0x9E3779B97F4A7C15)
            + np.uint64(seed) * np.uint64(0xD1B54A32D192ED03)
            + np.arange(n_probes, dtype=np.uint64)[None, :] * np.uint64(0xBF58476D1CE4E5B9)
            + np.uint64(stream) * np.uint64(0x94D049BB133111EB)
        )
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _nth_true(mask: np.ndarray, nth: np.ndarray) -> np.ndarray:
    """Index along the last axis of the ``nth`` (0-based) True of ``mask`` ([..., S]); -1 where there is none."""
    running = np.cumsum(mask, axis=-1)
    hit = mask & (running == (nth + 1)[..., None])
    return np.where(hit.any(-1), hit.argmax(-1), -1)


def generate(
    fact_key: np.ndarray, valid: np.ndarray, length: np.ndarray, keys: np.ndarray, config: ProbeConfig = ProbeConfig()
) -> dict:
    """The default probe arrays (see :class:`ProbeConfig`) of N episodes from their fact tables
    (``fact_key`` [N, T, K]), ``valid`` [N, T], ``length`` [N] and ``keys`` [N] (:func:`episode_keys`)."""
    n_episodes, n_steps, width = fact_key.shape
    counts = np.where(length > 0, np.maximum(np.rint(config.rate * length), 1 if config.rate > 0 else 0), 0)
    n_probes = max(int(counts.max(initial=0)), 0)
    if n_probes == 0:
        return {name: np.zeros((n_episodes, 0), DTYPES[name]) for name in PROBE_FIELDS}
    draw = lambda stream: _uniform(keys, n_probes, config.seed, stream)  # noqa: E731
    real = np.arange(n_probes)[None, :] < counts[:, None]
    pos = np.sort(np.where(real, (draw(0) * length[:, None]).astype(np.int32), n_steps), axis=1)
    pos = np.where(real, pos, -1)
    choice = draw(1)
    kind = np.where(
        choice < config.as_of_share,
        AS_OF,
        np.where(choice < config.as_of_share + config.never_seen_share, NEVER_SEEN, CURRENT),
    )
    cutoff = np.where(kind == AS_OF, (draw(2) * (pos + 1)).astype(np.int32), pos)
    number, n_facts = fact_numbers(fact_key)
    # a fact observation up to the cutoff, uniformly: the nth carried slot in time order
    carried = (number >= 0) & valid[:, :, None]  # [N, T, K]
    per_step = carried.sum(2)  # [N, T]
    running = np.cumsum(per_step.ravel())  # over the whole block, episode-major
    before = np.r_[0, running][np.arange(n_episodes) * n_steps][:, None]  # observations of earlier episodes
    rows = np.arange(n_episodes)[:, None]
    n_seen = np.where(pos >= 0, running.reshape(n_episodes, n_steps)[rows, np.maximum(cutoff, 0)] - before[:, 0:1], 0)

    def seen_fact(uniform):  # [N, Q] the fact of a uniformly drawn observation up to the cutoff (-1: none)
        target = before + (uniform * n_seen).astype(np.int64)  # a global observation index
        step = np.minimum(np.searchsorted(running, target, side="right"), running.size - 1)  # its (episode, step)
        within = target - (running[step] - per_step.ravel()[step])  # its rank among that step's facts
        k = _nth_true(carried.reshape(-1, width)[step], within)
        return np.where(n_seen > 0, number.reshape(-1, width)[step, np.maximum(k, 0)], -1)

    drawn = seen_fact(draw(3))
    kind = np.where((kind != NEVER_SEEN) & (n_seen == 0), NEVER_SEEN, kind)  # nothing seen yet: ask anyway
    cutoff = np.where(kind == NEVER_SEEN, pos, cutoff)
    # never seen: a fact first observed after the probe, uniformly, else -1 (one the episode never carries)
    first = first_positions(number, n_facts)  # [N, F]
    facts_exist = np.arange(first.shape[1])[None, :] < n_facts[:, None]
    unseen = facts_exist[:, None, :] & (first[:, None, :] > pos[:, :, None])  # [N, Q, F]
    later = _nth_true(unseen, (draw(4) * unseen.sum(-1)).astype(np.int64))
    fact = np.where(kind == NEVER_SEEN, later, drawn)
    kind = np.where((kind == CURRENT) & (draw(5) < config.history_rate), HISTORY, kind)
    out = dict(
        probe_pos=pos.astype(np.int32),
        probe_as_of=np.where(real, cutoff, -1).astype(np.int32),
        probe_fact=np.where(real, fact, -1).astype(np.int32),
        probe_kind=np.where(real, kind, -1).astype(np.int8),
        probe_group=np.where(real, np.arange(n_probes)[None, :], -1).astype(np.int32),
        probe_weight=np.where(real, 1.0, -1.0),
    )
    if config.multi_fact_rate == 0:
        return out
    # further facts: rows right after their probe's first, then the rows of each episode packed to the left
    multi = real & (kind != NEVER_SEEN) & (n_seen > 0) & (draw(6) < config.multi_fact_rate)
    extra = np.where(draw(7) < 0.5, 1, 2)
    facts = [fact]
    for index, stream in enumerate((8, 9)):
        more = seen_fact(draw(stream))
        new = multi & (extra > index) & np.all([more != old for old in facts], axis=0)
        facts.append(np.where(new, more, -1))
    rows = np.stack(facts, -1)  # [N, Q, 3]
    used = (real[..., None] & ((np.arange(3) == 0) | (rows >= 0))).reshape(n_episodes, -1)
    packed = np.argsort(~used, axis=1, kind="stable")[:, : max(int(used.sum(1).max(initial=0)), 1)]
    keep = np.take_along_axis(used, packed, 1)
    spread = lambda table: np.take_along_axis(np.repeat(table, 3, axis=1), packed, 1)  # noqa: E731
    out = {name: spread(value) for name, value in out.items()}
    out["probe_fact"] = np.take_along_axis(rows.reshape(n_episodes, -1), packed, 1).astype(np.int32)
    fill = {name: np.array(FILLS[name], DTYPES[name]) for name in PROBE_FIELDS}
    return {name: np.where(keep, value, fill[name]).astype(DTYPES[name]) for name, value in out.items()}


def with_default_probes(encoded, config: ProbeConfig = ProbeConfig()):
    """``encoded`` (an :class:`~wpbjax.episodes.batch.EncodedEpisodes` with fact tables) with generated probes
    for every episode whose labels gave none; labelled probes are kept."""
    arrays = encoded.arrays
    if arrays.fact_key is None:
        raise ValueError("probes: these episodes carry no facts (no string api and no 'facts' label) to ask about")
    keys = episode_keys(encoded.mode, encoded.episode_id)
    blocks = [
        generate(
            arrays.fact_key[lo : lo + BLOCK],
            arrays.valid[lo : lo + BLOCK],
            arrays.length[lo : lo + BLOCK],
            keys[lo : lo + BLOCK],
            config,
        )
        for lo in range(0, encoded.n_episodes, BLOCK)
    ]
    made = {name: np.concatenate([block[name] for block in blocks]) for name in PROBE_FIELDS}
    if encoded.probe_pos is not None:
        labelled = (encoded.probe_pos >= 0).any(1)
        width = max(made["probe_pos"].shape[1], encoded.probe_pos.shape[1])
        for name in PROBE_FIELDS:
            ours = np.pad(made[name], [(0, 0), (0, width - made[name].shape[1])], constant_values=-1)
            theirs = getattr(encoded, name)
            theirs = np.pad(theirs, [(0, 0), (0, width - theirs.shape[1])], constant_values=-1)
            made[name] = np.where(labelled[:, None], theirs, ours)
    return dataclasses.replace(encoded, **made)
