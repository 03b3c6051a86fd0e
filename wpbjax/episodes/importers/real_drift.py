"""Episodes of real API drift: windows of an imported OpenAPI history (:mod:`wpbjax.episodes.importers.openapi_import`).

The history's lines, in order, are one stream of steps (``t`` = the line's position in the stream); an
episode is a window of ``steps`` consecutive steps, windows ``stride`` apart (default half a window), the
last window ending at the stream's end; its id is ``"NAME:STEPS:START"``. A step:

* observation ``{"api": endpoint, "deprecated": bool, "request": {"query.limit": "integer?", ...}, "response":
  {"status": "string = failed|paid", ...}}``: the endpoint's surface at that version (:func:`stream`),
  what a memory would store (a removed endpoint: ``{"api", "removed": true}``);
* metadata ``{"mode": "real", "priority": p, "source": NAME, "date", "version", "level", "removed"}``; the
  privileged ``priority`` uses only what a client could see at that version: the surface before and after it
  (:func:`priority`), never a later version (so it cannot know a change will be undone);
* labels: ``critical_steps`` = the breaking steps (level ``breaking`` in the history,
  :mod:`wpbjax.episodes.importers.drift_labels`); ``utility_by_step`` = the line's level as a utility
  (``drift_labels.LEVEL_UTILITY``: breaking 1, warning 0.5, info 0.25, none 0 — glitches, respellings);
  ``total_drift_events`` = the breaking steps; ``facts`` = the endpoint as a fact whose value is the version,
  to persist unless every change of the step is a glitch (WRIT's ``[fact_id, version, should_persist]``,
  :mod:`wpbjax.episodes.facts`).

A window longer than the stream is the whole stream, and its id says so (``x:300:0`` for ``real:x:1000`` on a
300-line history). Temporal split: the stream is cut at :data:`SPLIT_SHARE` of its lines (each vendor's
history spans other years, so a fixed date would leave some without a train side), or, with ``split_date``,
at its first line dated on or after it (commit dates can go backwards; the cut follows the stream's order):
``train`` windows end before the cut,
``test`` windows start at or after it (a window across it is in neither). A *real spec* names a set for
sweeps: ``real:NAME[:STEPS[:STRIDE]][:train|:test]``, NAME a shipped history (:data:`SHIPPED`) or a history
file's path; STEPS and STRIDE at least 1. Ids are ``LABEL:STEPS:START``, LABEL the shipped name or the
file's name up to its first dot; within one sweep (:func:`labels`), two files of one name get their
folder's name too (``v1/products``), or a short hash of their path.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from operator import itemgetter

from wpbjax.episodes.importers import drift_labels
from wpbjax.episodes.jsonl import EpisodeFormatError

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "real")
SHIPPED = {name: f"{name}.history.jsonl.gz" for name in ("stripe", "openai", "digitalocean", "discord")}
PREFIX = "real:"
MODE = "real"
DEFAULT_STEPS = 200
SPLIT_SHARE = 0.7  # the first 70% of a history's lines (oldest first) are its train side
SPLITS = ("train", "test")


def is_real(spec) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


GRAMMAR = "real:NAME[:STEPS[:STRIDE]][:train|:test]"


def parse_spec(spec: str) -> dict:
    """``real:NAME[:STEPS[:STRIDE]][:train|:test]`` -> {name, path, steps, stride, split}; a ValueError naming
    the spec for a count below 1, a third count, or a split that is repeated or not last."""
    parts = spec[len(PREFIX) :].split(":")
    tail: list = []
    while len(parts) > 1 and (re.fullmatch(r"[0-9]+", parts[-1]) or parts[-1] in SPLITS):
        tail.insert(0, parts.pop())
    splits = [part for part in tail if part in SPLITS]
    counts = [int(part) for part in tail if part not in SPLITS]
    problem = None
    if len(splits) > 1:
        problem = f"one split at most (got {', '.join(splits)})"
    elif splits and tail[-1] not in SPLITS:
        problem = f"the split ({splits[0]}) comes last"
    elif len(counts) > 2:
        problem = f"STEPS and STRIDE at most (got {len(counts)} numbers: {', '.join(map(str, counts))})"
    elif any(count < 1 for count in counts):
        problem = f"STEPS and STRIDE must be at least 1 (got {', '.join(map(str, counts))})"
    if problem:
        raise ValueError(f"{spec}: expected {GRAMMAR}; {problem}")
    name = ":".join(parts)
    steps, stride = (counts + [None, None])[:2]
    split = splits[0] if splits else None
    return dict(name=name, path=history_path(name, spec), steps=steps, stride=stride, split=split)


def history_path(name: str, where: str | None = None) -> str:
    """The file of a shipped history (``stripe``) or a path to one; a ValueError naming what exists."""
    if name in SHIPPED:
        return os.path.join(DATA_DIR, SHIPPED[name])
    if os.path.isfile(name):
        return name
    raise ValueError(
        f"{where or name}: no shipped real history {name!r} (shipped: {', '.join(SHIPPED)}) and no such history file"
    )


@functools.lru_cache(maxsize=4)
def _history(path: str, stamp: tuple) -> tuple:
    from wpbjax.episodes.importers.openapi_import import read_history

    return tuple(read_history(path))


def _stamp(path: str) -> tuple:
    """What tells a history file's versions apart for the caches: (modification time in ns, size)."""
    status = os.stat(path)
    return status.st_mtime_ns, status.st_size


def load_history(name_or_path: str) -> tuple:
    """The lines of a history (cached per file and modification)."""
    path = history_path(name_or_path)
    return _history(path, _stamp(path))


def default_label(name: str) -> str:
    """The episode ids' first part: a shipped name, or the history file's name up to its first dot."""
    return name if name in SHIPPED else os.path.basename(name).split(".")[0]


def labels(specs) -> dict:
    """{real spec: label} for the specs of one sweep: :func:`default_label`, and where two different files
    share one, their folder's name too (``v1/products``), or a short hash of the path if those agree as well."""
    real_specs = [spec for spec in specs if is_real(spec)]
    paths = {spec: os.path.realpath(parse_spec(spec)["path"]) for spec in real_specs}
    out = {spec: default_label(parse_spec(spec)["name"]) for spec in real_specs}
    for rename in (
        lambda spec: f"{os.path.basename(os.path.dirname(paths[spec]))}/{out[spec]}",
        lambda spec: f"{out[spec]}-{hashlib.sha256(paths[spec].encode()).hexdigest()[:8]}",
    ):
        files = {}
        for spec in real_specs:
            files.setdefault(out[spec], set()).add(paths[spec])
        shared = {label for label, where in files.items() if len(where) > 1}
        out.update({spec: rename(spec) for spec in real_specs if out[spec] in shared})
    return out


def refuse_repeated_windows(specs, id_sets) -> None:
    """ValueError when two real specs of one sweep name a window twice (one history, the same window length
    and start): the sweep would run it twice and its report refuse the duplicate rows. ``id_sets``: the
    episode ids of each spec's set."""
    owner: dict = {}
    for spec, ids in zip(specs, id_sets):
        if not is_real(spec):
            continue
        for episode_id in ids:
            if episode_id in owner and owner[episode_id] != spec:
                raise ValueError(
                    f"{spec}: names the same windows as {owner[episode_id]} (e.g. {episode_id}); name each once"
                )
            owner.setdefault(episode_id, spec)


def priority(line: dict) -> float:
    """What a client could see at this version: the level its changes have before anyone knows whether a
    later version undoes them (a glitch's rule level, not ``none``), as a utility
    (``drift_labels.LEVEL_UTILITY``: breaking 1.0, warning 0.5), at least 0.25 (an addition, a first
    sighting)."""
    levels = (drift_labels.RULES[change["kind"]].level for change in line["changes"])
    return max(drift_labels.LEVEL_UTILITY[drift_labels.worst_level(levels)], drift_labels.LEVEL_UTILITY["info"])


def utility(line: dict) -> float:
    """The line's level as a utility (``drift_labels.LEVEL_UTILITY``)."""
    return drift_labels.LEVEL_UTILITY[line["level"]]


def field_text(record: dict) -> str:
    """One field's contract as a policy sees it: ``integer?`` (``?``: optional), ``string = failed|paid``
    (the enum), `` (deprecated)``."""
    text = f"{record['type']}{'' if record['required'] else '?'}"
    if record["enum"]:
        text += " = " + "|".join(record["enum"])
    return text + (" (deprecated)" if record["deprecated"] else "")


FIELD_KEYS = {"request": lambda record: f"{record['in']}.{record['name']}", "response": itemgetter("name")}


def field_texts(before: dict | None, line: dict, side: str) -> dict:
    """{field key: :func:`field_text`} of one side of a line: whole (``line[side]``, a list of records) or
    as stored, the change from the endpoint's line before (``line[side + "_delta"]``,
    ``openapi_import.pack_lines``); ``before`` is that line's map, returned as is when nothing changed."""
    key_of = FIELD_KEYS[side]
    records = line.get(side)
    if records is not None:
        return {key_of(record): field_text(record) for record in records}
    delta = line[side + "_delta"]
    if not delta["drop"] and not delta["set"]:
        return before
    from wpbjax.episodes.importers.openapi_import import apply_delta

    texts, added = apply_delta(before, delta, key_of, field_text)
    return dict(sorted(texts.items())) if added else texts


def stream(lines, name: str) -> list[tuple]:
    """[(step dict, breaking, utility, fact)] of every line, whole or as stored (``read_history(packed=True)``:
    each endpoint's surface kept as it changes, not rebuilt per line), ``t`` its position. The observation:
    the endpoint's surface at that version, what a memory would store: ``{"api", "deprecated", "request":
    {"query.limit": "integer?", ...}, "response": {"status": ...}}``. The fields sit under two keys, not one
    key each: the encoder gives a set one slot per observation key, and a history's field names run to tens of
    thousands. A removed endpoint is ``{"api", "removed": true}``. Steps share their field maps: copy
    before changing one (:func:`episodes` does)."""
    out, texts = [], {}
    for t, line in enumerate(lines):
        endpoint = line["endpoint"]
        before = texts.get(endpoint, {})
        now = texts[endpoint] = {side: field_texts(before.get(side), line, side) for side in FIELD_KEYS}
        if line["removed"]:
            observation = {"api": endpoint, "removed": True}
        else:
            observation = {"api": endpoint, "deprecated": bool(line["deprecated"]), **now}
        step = {
            "t": t,
            "observation": observation,
            "metadata": {
                "mode": MODE,
                "priority": priority(line),
                "source": name,
                "date": line["date"],
                "version": line["version"],
                "level": line["level"],
                "removed": line["removed"],
            },
        }
        persist = not line["changes"] or not all(change["glitch"] for change in line["changes"])
        out.append((step, bool(line["breaking"]), utility(line), [endpoint, line["version"], persist]))
    return out


def window_starts(n: int, steps: int, stride: int) -> list[int]:
    """Starts of the windows of ``steps`` over ``n`` steps, ``stride`` apart, the last ending at ``n``."""
    if n <= steps:
        return [0]
    starts = list(range(0, n - steps + 1, stride))
    return starts if starts[-1] == n - steps else starts + [n - steps]


def episodes(
    name: str = "stripe",
    steps: int = DEFAULT_STEPS,
    stride: int | None = None,
    split: str | None = None,
    split_date: str | None = None,
    label: str | None = None,
) -> list[dict]:
    """The windows of a history as dict episodes (module note); ``label``: the ids' first part (default
    :func:`default_label`)."""
    if steps < 1 or (stride is not None and stride < 1):
        raise ValueError(f"steps and stride must be >= 1; got {steps}, {stride}")
    if split not in (None, *SPLITS):
        raise ValueError(f"split must be one of {', '.join(SPLITS)} or None; got {split!r}")
    label = label or default_label(name)
    steps_all = _stream(history_path(name), label)
    stride = stride or max(steps // 2, 1)
    steps = min(steps, len(steps_all))  # a window longer than the stream is the stream, and its id says so
    cut = int(SPLIT_SHARE * len(steps_all)) if split_date is None else split_index(steps_all, split_date)
    out = []
    for start in window_starts(len(steps_all), steps, stride):
        if (split == "train" and start + steps > cut) or (split == "test" and start < cut):
            continue
        out.append(window_episode(steps_all[start : start + steps], f"{label}:{steps}:{start}"))
    if not out:
        where = f"split date {split_date}" if split_date else f"split at line {cut:,} of {len(steps_all):,}"
        raise ValueError(f"real:{name}: no {split} window of {steps} steps ({where})")
    return out


def split_index(stream_steps, split_date: str) -> int:
    """The position of the stream's first step dated on or after ``split_date`` (its length if none)."""
    return next(
        (t for t, (step, *_) in enumerate(stream_steps) if step["metadata"]["date"] >= split_date), len(stream_steps)
    )


@functools.lru_cache(maxsize=4)
def _stream_cached(path: str, stamp: tuple, label: str) -> tuple:
    from wpbjax.episodes.importers.openapi_import import read_history

    return tuple(stream(read_history(path, packed=True), label))


def _stream(path: str, label: str) -> tuple:
    return _stream_cached(path, _stamp(path), label)


def window_episode(window, episode_id: str, mode: str = MODE) -> dict:
    """A dict episode of a window of stream steps ([(step, breaking, utility, fact)], :func:`stream`; a
    changelog's stream has the same shape): its steps copied, critical steps = the breaking ones, utility
    by step, one fact per step."""
    steps = [_copy(step) for step, _, _, _ in window]  # fresh dicts: callers may change them
    critical = [step["t"] for step, breaking, _, _ in window if breaking]
    utilities = {str(step["t"]): value for step, _, value, _ in window}
    return {
        "labels": {
            "episode_id": episode_id,
            "mode": mode,
            "critical_steps": critical,
            "total_drift_events": len(critical),
            "utility_by_step": utilities,
            "max_utility": sum(utilities.values()),
            "facts": {str(step["t"]): [list(fact)] for step, _, _, fact in window},
        },
        "steps": steps,
    }


def _copy(step: dict) -> dict:
    """A fresh copy of a stream step (its values are str, int, float or bool, its observation's maps flat)."""
    observation = {key: dict(value) if type(value) is dict else value for key, value in step["observation"].items()}
    return {"t": step["t"], "observation": observation, "metadata": dict(step["metadata"])}


def load_spec(spec: str, label: str | None = None) -> list[dict]:
    """The dict episodes a real spec names (``label``: the ids' first part, :func:`labels`)."""
    options = parse_spec(spec)
    try:
        return episodes(
            options["path"] if options["name"] not in SHIPPED else options["name"],
            steps=options["steps"] or DEFAULT_STEPS,
            stride=options["stride"],
            split=options["split"],
            label=label,
        )
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise EpisodeFormatError(
            f"{spec}: {options['path']} is not an imported OpenAPI history ({type(err).__name__}: {err})"
        ) from None


def load_encoded(spec: str, label: str | None = None, n_steps: int | None = None):
    """The windows a real spec names (:func:`load_spec`), validated and encoded (``n_steps``: padded to that T,
    default the windows' own); the same history, spec, label and code give the same arrays, so they are
    kept on disk (:mod:`wpbjax.episodes.cache`) and a second sweep of the set reads them back."""
    from wpbjax.episodes import cache
    from wpbjax.episodes.encode import encode_episodes

    options = parse_spec(spec)
    key = {
        "kind": "real windows",
        "history_sha256": spec_sha256(spec),
        **{name: options[name] for name in ("steps", "stride", "split")},
        "label": label,
        "n_steps": n_steps,
    }
    return cache.cached(key, lambda: encode_episodes(load_spec(spec, label), source=spec, n_steps=n_steps))


def spec_sha256(spec: str) -> str:
    """SHA-256 of the history file a real spec reads (what a sweep's sidecar records)."""
    digest = hashlib.sha256()
    with open(parse_spec(spec)["path"], "rb") as handle:
        digest.update(handle.read())
    return digest.hexdigest()
