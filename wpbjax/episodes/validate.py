"""The checks an episode (a dict, from a file or from Python) passes before it is encoded (SEMANTICS §1).

Structure, finite numbers and labels that name real steps: the encoder and the oracle rely on all
three, so a bad value stops here with an error naming its source, step and key, never later as a
JAX traceback or a NaN metric.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

# Utilities and priorities are used as float32 on device: each must be finite there, and an
# episode's utilities must also sum within range (the oracle and the policies add them up).
FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_NESTING = 100  # JSON nesting depth of an episode; the encoder recurses per level
INT32_LIMIT = 2**31


class EpisodeFormatError(ValueError):
    """An episode file or dict does not follow the episode format."""


class Bounds(NamedTuple):
    """The range a number of an input must lie in, and how an error names it."""

    low: float
    high: float
    text: str  # "finite and within float32 range (|x| <= 3.403e+38)"


FLOAT32_RANGE = Bounds(-FLOAT32_MAX, FLOAT32_MAX, f"finite and within float32 range (|x| <= {FLOAT32_MAX:.4g})")
INT32_RANGE = Bounds(-INT32_LIMIT + 1, INT32_LIMIT - 1, "an integer that fits in int32 (|x| < 2^31)")


def number_problem(
    value: Any, bounds: Bounds, integer: bool = False, whole_floats: bool = False, bools: bool = False
) -> str | None:
    """What is wrong with ``value`` (from JSON or Python) as a number within ``bounds``, or None if
    nothing is: ``"must be a number, got 'x'"``, ``"must be <bounds.text>, got nan"``. ``integer``: an
    int (or, with ``whole_floats``, a float without fraction, as ``2.0``); ``bools``: True and False
    count as 1 and 0. The one check of every input number (episodes, WRIT scenarios, packages): the
    caller puts the file, line and field in front."""
    kind = "an integer" if integer else "a number"
    if (
        (isinstance(value, bool) and not bools)
        or not isinstance(value, (int, float))
        or (integer and isinstance(value, float) and not whole_floats)
    ):
        return f"must be {kind}, got {value!r}"
    if not bounds.low <= value <= bounds.high:  # NaN fails too; exact for Python ints of any size
        return f"must be {bounds.text}, got {value!r}"
    if integer and value != int(value):  # finite here: int() cannot fail
        return f"must be {kind}, got {value!r}"
    return None


_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (dict, list, tuple)  # tuples: dict episodes built in Python (the encoder treats them as lists)


def nesting_depth_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists/dicts nest more than ``limit`` levels deep. Level by level, without recursion;
    a container of scalars only costs one C-level type scan (a fifth of loading a file, not half)."""
    level, depth = ([value] if type(value) in _CONTAINERS else []), 1
    while level:
        if depth > limit:
            return True
        deeper = []
        for item in level:
            children = item.values() if type(item) is dict else item
            if not _SCALARS.issuperset(map(type, children)):
                deeper.extend(child for child in children if type(child) in _CONTAINERS)
        level, depth = deeper, depth + 1
    return False


def _check_step(step: Any, index: int, previous_t: int | None, where: str) -> int:
    """One step's structure and priority; returns its ``t``."""
    here = f"{where}: step {index}"
    if not isinstance(step, dict):
        raise EpisodeFormatError(f"{here}: a step must be an object")
    if "t" not in step:
        raise EpisodeFormatError(f"{here}: missing 't'")
    t = step["t"]
    problem = number_problem(t, INT32_RANGE, integer=True)
    if problem:
        raise EpisodeFormatError(f"{here}: 't' {problem}")
    if previous_t is not None and t <= previous_t:
        raise EpisodeFormatError(f"{here}: 't' must increase strictly (got {t} after {previous_t})")
    metadata = step.get("metadata", {})
    if not isinstance(metadata, dict):
        raise EpisodeFormatError(f"{here}: 'metadata' must be an object")
    priority = metadata.get("priority")
    problem = None if priority is None else number_problem(priority, FLOAT32_RANGE, bools=True)  # as ``p > 0.5``
    if problem:
        raise EpisodeFormatError(f"{here} (t={t}): metadata 'priority' {problem}")
    return t


def _check_utilities(utility: Any, steps_by_t: dict, where: str) -> None:
    """``utility_by_step``: keyed by the string of a step's t, finite values summing within float32."""
    name = "labels 'utility_by_step'"
    if not isinstance(utility, dict):
        raise EpisodeFormatError(f"{where}: {name} must be an object keyed by t")
    if len({str(key) for key in utility}) < len(utility):
        raise EpisodeFormatError(f"{where}: {name} names some t twice (as a number and as a string)")
    magnitude = 0.0
    for key, value in utility.items():
        step = steps_by_t.get(str(key))
        if step is None:
            raise EpisodeFormatError(f"{where}: {name}[{key!r}]: the episode has no step with t = {key}")
        here = f"{where}: step {step} (t={key}): {name}[{str(key)!r}]"
        if value is None:
            continue
        problem = number_problem(value, FLOAT32_RANGE)
        if problem:
            raise EpisodeFormatError(f"{here} {problem}")
        magnitude += abs(float(value))
        if magnitude > FLOAT32_MAX:
            raise EpisodeFormatError(
                f"{here}: the episode's utilities sum past float32 range (|sum| > {FLOAT32_MAX:.4g}) here"
            )


PROBE_KINDS = ("current", "as_of", "never_seen", "history")  # wpbjax.episodes.probes, in its code order
FINITE = Bounds(-np.finfo(np.float64).max, np.finfo(np.float64).max, "a finite number")


def probe_kind(probe: dict) -> str:
    """A probe label's kind: as given, else ``as_of`` where it has an ``as_of``, else ``current``."""
    return probe.get("kind", "as_of" if "as_of" in probe else "current")


def check_probe_labels(probes: Any, steps_by_t: dict, where: str) -> None:
    """The ``probes`` label (wpbjax.episodes.probes): a list of ``{"t", "fact" | "facts", "kind"?, "as_of"?,
    "weights"?}``; an error names the probe and its field (``labels.probes[2].as_of: ...``)."""
    if not isinstance(probes, list):
        raise EpisodeFormatError(f"{where}: labels.probes must be a list of probe objects")
    for number, probe in enumerate(probes):
        field = f"{where}: labels.probes[{number}]"
        if not isinstance(probe, dict):
            raise EpisodeFormatError(f"{field}: expected an object with 't' and 'fact' or 'facts'; got {probe!r}")
        t = probe.get("t")
        if isinstance(t, bool) or not isinstance(t, int) or str(t) not in steps_by_t:
            raise EpisodeFormatError(f"{field}.t: expected a step's t; got {t!r}")
        if ("fact" in probe) == ("facts" in probe):
            raise EpisodeFormatError(f"{field}: expected one of 'fact' (a string) or 'facts' (a list of strings)")
        if "fact" in probe and not isinstance(probe["fact"], str):
            raise EpisodeFormatError(f"{field}.fact: expected a string; got {probe['fact']!r}")
        facts = probe.get("facts")
        if "facts" in probe and (
            not isinstance(facts, list) or not facts or not all(isinstance(name, str) for name in facts)
        ):
            raise EpisodeFormatError(f"{field}.facts: expected a non-empty list of strings; got {facts!r}")
        if facts is not None and len(set(facts)) < len(facts):
            raise EpisodeFormatError(f"{field}.facts: names a fact twice; got {facts!r}")
        kind = probe_kind(probe)
        if kind not in PROBE_KINDS:
            raise EpisodeFormatError(f"{field}.kind: one of {', '.join(PROBE_KINDS)}; got {kind!r}")
        if "as_of" in probe and kind != "as_of":
            raise EpisodeFormatError(f"{field}.as_of: only for kind 'as_of' (this probe's kind is {kind!r})")
        if kind == "as_of":
            as_of = probe.get("as_of")
            problem = number_problem(as_of, FINITE)
            if problem or as_of > t:
                raise EpisodeFormatError(f"{field}.as_of: a t at or before the probe's t ({t}); got {as_of!r}")
        if "weights" in probe:
            weights = probe["weights"]
            if facts is None:
                raise EpisodeFormatError(f"{field}.weights: only with 'facts' (one weight per fact)")
            if not isinstance(weights, list) or len(weights) != len(facts):
                raise EpisodeFormatError(f"{field}.weights: expected a list of {len(facts)} numbers; got {weights!r}")
            for index, weight in enumerate(weights):
                if number_problem(weight, FINITE) or weight <= 0:
                    raise EpisodeFormatError(f"{field}.weights[{index}]: expected a finite number > 0; got {weight!r}")


def _check_labels(labels: Any, steps_by_t: dict, where: str) -> None:
    """Labels refer only to the episode's own steps; counts fit int32."""
    if not isinstance(labels, dict):
        raise EpisodeFormatError(f"{where}: 'labels' must be an object")
    critical = labels.get("critical_steps", [])
    if not isinstance(critical, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in critical):
        raise EpisodeFormatError(f"{where}: labels 'critical_steps' must be a list of integers")
    absent = [t for t in critical if str(t) not in steps_by_t]
    if absent:
        raise EpisodeFormatError(
            f"{where}: labels 'critical_steps' names t = {', '.join(map(str, absent[:5]))}"
            f"{' ...' if len(absent) > 5 else ''}, which the episode has no step for"
        )
    _check_utilities(labels.get("utility_by_step", {}), steps_by_t, where)
    drift = labels.get("total_drift_events", 0)
    if isinstance(drift, bool) or not isinstance(drift, int) or not 0 <= drift < INT32_LIMIT:
        raise EpisodeFormatError(f"{where}: labels 'total_drift_events' must be an integer in 0..2^31-1, got {drift!r}")
    if "probes" in labels:
        check_probe_labels(labels["probes"], steps_by_t, where)
    episode_id = labels.get("episode_id", 0)
    if not (
        isinstance(episode_id, str)
        or (isinstance(episode_id, int) and not isinstance(episode_id, bool) and abs(episode_id) < 2**63)
    ):
        raise EpisodeFormatError(f"{where}: labels 'episode_id' must be a string or an int64, got {episode_id!r}")


def validate_episode(episode: Any, where: str, check_nesting: bool = True) -> dict:
    """Check the shape and numbers the engine relies on; ``where`` names the source in errors
    (``file:line``). ``check_nesting=False`` skips the depth walk for a source known to be shallow."""
    if not isinstance(episode, dict):
        raise EpisodeFormatError(f"{where}: an episode must be a JSON object, got {type(episode).__name__}")
    if "steps" not in episode:
        raise EpisodeFormatError(f"{where}: missing 'steps'")
    steps = episode["steps"]
    if not isinstance(steps, list):
        raise EpisodeFormatError(f"{where}: 'steps' must be a list, got {type(steps).__name__}")
    if not steps:
        raise EpisodeFormatError(f"{where}: 'steps' is empty")
    if check_nesting and nesting_depth_exceeds(episode, MAX_NESTING):
        raise EpisodeFormatError(f"{where}: nested more than {MAX_NESTING} levels deep")
    steps_by_t, previous_t = {}, None
    for index, step in enumerate(steps):
        previous_t = _check_step(step, index, previous_t, where)
        steps_by_t[str(previous_t)] = index
    _check_labels(episode.get("labels", {}), steps_by_t, where)
    return episode


def episode_ids(episodes) -> list:
    """The labels' ``episode_id`` of each dict episode (absent: its index in the set)."""
    return [episode.get("labels", {}).get("episode_id", index) for index, episode in enumerate(episodes)]


def check_episode_ids(id_sets: list, sources: list) -> None:
    """All episode ids of a sweep are integers or all strings (an absent id is the episode's index):
    the results' ``episode_id`` column holds one type. ``id_sets``: the ids of each source's episodes
    (:func:`episode_ids`)."""
    first = None
    for source, ids in zip(sources, id_sets):
        for index, episode_id in enumerate(ids):
            kind = "a string" if isinstance(episode_id, str) else "an integer"
            if first is None:
                first = (kind, source, episode_id)
            elif kind != first[0]:
                raise EpisodeFormatError(
                    f"{source}: episode {index}: labels 'episode_id' {episode_id!r} is {kind} "
                    f"but {first[1]}'s first ({first[2]!r}) is {first[0]}; the results' "
                    "episode_id column holds one type"
                )
