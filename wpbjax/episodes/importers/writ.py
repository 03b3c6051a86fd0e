"""WRIT scenarios (Write Integrity Test, github.com/markmhendrickson/writ) as episodes.

One episode per scenario, one step per session, in file order:

* observation = the session: ``{"messages": [...], "timestamp": ...}`` (its write cost is its bytes, as for
  any observation); metadata ``{"mode": "writ", "priority": p}``; ``t`` = the session's position.
* label ``facts``: from ``memory_events``. Each entry of ``previous_values`` is a version of the fact, stated in
  its ``source_session``; a final ``value`` that differs from the last of them is a further version, stated
  in ``updated_in`` (or ``introduced_in``). Versions are numbered in order (a revert to an old value is a new
  version). A version should persist iff the event's ``should_persist`` is true, its type is not
  ``non_memory`` and it is not ``retracted_in`` a session.
* critical steps = sessions that introduce a persisting fact version; utility of a step = how many they
  introduce; ``total_drift_events`` = the version changes among persisting facts.
* label ``probe_steps``: the probe's ``temporal_query.as_of``, as the last session at or before that time.
* label ``probes`` (reads, :mod:`wpbjax.episodes.probes`): the scenario's probe, asked after the last session,
  about the memory events its ground truth needs (the rules of :mod:`wpbjax.episodes.importers.writ_probes`).
* privileged priority from the ground truth: 1.0 for a critical session the ground truth names as a source
  (``provenance`` or ``value_history``), 0.75 for another critical session, 0.0 for a session whose facts
  should all not persist, 0.25 otherwise.

Required keys: ``sessions`` (each with ``session_id``, a string or an integer, ``timestamp``, ``messages``);
everything else is optional. A malformed file raises :class:`EpisodeFormatError` naming the file and the
field (a UTF-8 or JSON error: the file and line); the episode made of it passes the episode checks
(:mod:`wpbjax.episodes.validate`) before it is returned, so ``import-writ`` refuses what a sweep would.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence

from wpbjax.episodes.importers.writ_probes import Mapping, map_probe
from wpbjax.episodes.jsontext import read_json
from wpbjax.episodes.validate import EpisodeFormatError, validate_episode

MODE = "writ"


def load_scenario(path: str | os.PathLike) -> dict:
    scenario = read_json(path, EpisodeFormatError, "WRIT scenario file")
    if not isinstance(scenario, dict):
        raise EpisodeFormatError(f"{path}: a WRIT scenario must be a JSON object")
    return scenario


def _is_session_id(value) -> bool:
    """A session id is a JSON string or integer (not a bool: ``true`` would name session 1)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _timestamp(value, where: str) -> datetime.datetime:
    try:
        moment = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise EpisodeFormatError(f"{where}: expected an ISO-8601 timestamp, got {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _sessions(scenario: dict, where: str) -> list:
    sessions = scenario.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        raise EpisodeFormatError(f"{where}: 'sessions' must be a non-empty list")
    for index, session in enumerate(sessions):
        field = f"{where}: sessions[{index}]"
        if not isinstance(session, dict):
            raise EpisodeFormatError(f"{field}: must be an object")
        for key in ("session_id", "timestamp", "messages"):
            if key not in session:
                raise EpisodeFormatError(f"{field}: missing '{key}'")
        if not _is_session_id(session["session_id"]):
            raise EpisodeFormatError(
                f"{field}.session_id: must be a string or an integer, got {session['session_id']!r}"
            )
        if not isinstance(session["messages"], list):
            raise EpisodeFormatError(f"{field}.messages: must be a list")
        _timestamp(session["timestamp"], f"{field}.timestamp")
    first = {}
    for index, session in enumerate(sessions):
        other = first.setdefault(session["session_id"], index)
        if other != index:
            raise EpisodeFormatError(
                f"{where}: sessions[{index}].session_id: {session['session_id']!r} is sessions[{other}]'s too"
            )
    return sessions


def _versions(event: dict, field: str, position: dict) -> list:
    """[(step position, value)] of one memory event, in order."""

    def at(session, name):
        if not _is_session_id(session) or session not in position:
            raise EpisodeFormatError(f"{field}.{name}: names no session ({session!r})")
        return position[session]

    previous = event.get("previous_values") or []
    if not isinstance(previous, list):
        raise EpisodeFormatError(f"{field}.previous_values: must be a list")
    versions = []
    for index, entry in enumerate(previous):
        if not isinstance(entry, dict) or "source_session" not in entry:
            raise EpisodeFormatError(f"{field}.previous_values[{index}]: must be an object with 'source_session'")
        versions.append((at(entry["source_session"], f"previous_values[{index}].source_session"), entry.get("value")))
    value = event.get("value")
    if not versions or value != versions[-1][1]:
        session = event.get("updated_in") if event.get("updated_in") is not None else event.get("introduced_in")
        if session is None:
            raise EpisodeFormatError(f"{field}: needs 'introduced_in' or 'previous_values'")
        versions.append((at(session, "updated_in" if event.get("updated_in") is not None else "introduced_in"), value))
    return versions


def _facts(scenario: dict, where: str, position: dict) -> dict:
    """step position -> [[fact id, version, should persist], ...] from ``memory_events``."""
    events = scenario.get("memory_events") or []
    if not isinstance(events, list):
        raise EpisodeFormatError(f"{where}: 'memory_events' must be a list")
    by_step: dict = {}
    for index, event in enumerate(events):
        field = f"{where}: memory_events[{index}]"
        if not isinstance(event, dict) or not isinstance(event.get("id"), str):
            raise EpisodeFormatError(f"{field}: must be an object with a string 'id'")
        persist = event.get("should_persist", True)
        if not isinstance(persist, bool):
            raise EpisodeFormatError(f"{field}.should_persist: must be true or false")
        for name in ("introduced_in", "updated_in", "retracted_in"):
            if event.get(name) is not None and not _is_session_id(event[name]):
                raise EpisodeFormatError(
                    f"{field}.{name}: must be a session id (a string or an integer), got {event[name]!r}"
                )
        persist = persist and event.get("type") != "non_memory" and event.get("retracted_in") is None
        for version, (step, _) in enumerate(_versions(event, field, position)):
            by_step.setdefault(step, []).append([event["id"], version, persist])
    return by_step


def _ground_truth_sources(scenario: dict, where: str) -> set:
    """The session ids the ground truth names as sources (``provenance``, ``value_history``)."""
    truth = scenario.get("ground_truth") or {}
    if not isinstance(truth, dict):
        return set()
    named = []
    provenance = truth.get("provenance")
    if isinstance(provenance, dict):
        named.append(("provenance.source_session", provenance.get("source_session")))
    history = truth.get("value_history") or []
    if not isinstance(history, list):
        raise EpisodeFormatError(f"{where}: ground_truth.value_history: must be a list, got {history!r}")
    named += [
        (f"value_history[{index}].source_session", entry.get("source_session"))
        for index, entry in enumerate(history)
        if isinstance(entry, dict)
    ]
    for name, session in named:
        if session is not None and not _is_session_id(session):
            raise EpisodeFormatError(
                f"{where}: ground_truth.{name}: must be a session id (a string or an integer), got {session!r}"
            )
    return {session for _, session in named}


def _probe_steps(scenario: dict, where: str, sessions: list) -> list:
    probe = scenario.get("probe") or {}
    query = probe.get("temporal_query") if isinstance(probe, dict) else None
    if not isinstance(query, dict) or query.get("as_of") is None:
        return []
    as_of = _timestamp(query["as_of"], f"{where}: probe.temporal_query.as_of")
    before = [pos for pos, session in enumerate(sessions) if _timestamp(session["timestamp"], where) <= as_of]
    return before[-1:]


def scenario_episode(scenario: dict, where: str) -> dict:
    """One WRIT scenario as an episode dict (see the module note)."""
    sessions = _sessions(scenario, where)
    position = {session["session_id"]: pos for pos, session in enumerate(sessions)}
    facts = _facts(scenario, where, position)
    seen, introduced, changes = set(), {}, 0
    for pos in range(len(sessions)):
        for fact_id, version, persist in facts.get(pos, []):
            if persist and (fact_id, version) not in seen:
                seen.add((fact_id, version))
                introduced[pos] = introduced.get(pos, 0) + 1
                changes += version > 0
    sources = _ground_truth_sources(scenario, where)
    steps, utility = [], {}
    for pos, session in enumerate(sessions):
        carried = facts.get(pos, [])
        if pos in introduced:
            priority = 1.0 if session["session_id"] in sources else 0.75
        else:
            priority = 0.0 if carried and not any(persist for _, _, persist in carried) else 0.25
        steps.append(
            {
                "metadata": {"mode": MODE, "priority": priority},
                "t": pos,
                "observation": {"messages": session["messages"], "timestamp": session["timestamp"]},
            }
        )
        utility[str(pos)] = float(introduced.get(pos, 0))
    labels = {
        "episode_id": scenario.get("scenario_id", where),
        "mode": MODE,
        "critical_steps": sorted(introduced),
        "total_drift_events": changes,
        "utility_by_step": utility,
        "max_utility": sum(utility.values()),
        "facts": {str(pos): entries for pos, entries in sorted(facts.items())},
        "probe_steps": _probe_steps(scenario, where, sessions),
    }
    mapping = map_probe(scenario, where, labels["probe_steps"][0] if labels["probe_steps"] else None)
    labels["probes"] = mapping.probes
    scenario_id = scenario.get("scenario_id", where)
    if not isinstance(scenario_id, str) and (isinstance(scenario_id, bool) or not isinstance(scenario_id, int)):
        raise EpisodeFormatError(f"{where}: scenario_id: must be a string or an integer, got {scenario_id!r}")
    return validate_episode({"labels": labels, "steps": steps}, where)


def import_writ(paths: Sequence[str | os.PathLike]) -> list[dict]:
    """Episodes of the WRIT scenario files ``paths`` (a directory stands for its ``*.json`` files, sorted)."""
    return [episode for episode, _ in import_writ_mapped(paths)]


def import_writ_mapped(paths: Sequence[str | os.PathLike]) -> list[tuple[dict, Mapping]]:
    """(episode, how its probe was mapped: :class:`wpbjax.episodes.importers.writ_probes.Mapping`) of each scenario file of
    ``paths`` (as :func:`import_writ`)."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".json"))
        else:
            files.append(path)
    if not files:
        raise EpisodeFormatError(f"no WRIT scenario files in {', '.join(map(str, paths))}")
    out = []
    for path in files:
        scenario = load_scenario(path)
        episode = scenario_episode(scenario, str(path))
        as_of = episode["labels"]["probe_steps"]
        out.append((episode, map_probe(scenario, str(path), as_of[0] if as_of else None)))
    return out
