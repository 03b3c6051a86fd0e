"""Which changes of an API's request surface break a client: one small rule per kind of change.

An endpoint's history is its *timeline*: ``[(version, Surface or None)]`` at the versions where its surface
changed (None: absent). Each change is split into *atoms*, each a value over time: the endpoint's presence
and deprecation; per parameter its presence, type, required flag and deprecation. A change of an atom is:

================== ======== =================================================================
kind               breaking rule
================== ======== =================================================================
endpoint_added     no       the endpoint appears
endpoint_removed   yes      the endpoint disappears
endpoint_deprecated yes     the operation's deprecated flag, or deprecation words in its text, appear
endpoint_undeprecated no
param_added        no       a parameter appears (a required one is also ``param_required``)
param_removed      yes      a parameter disappears
param_required     yes      a query / header / body parameter becomes required, or appears required
param_optional     no       a required parameter becomes optional
type_widened       no       the parameter's type gains forms and loses none
type_changed       yes      the parameter's type loses a form
param_deprecated   yes      the parameter's flag or deprecation words appear
param_undeprecated no
path_param_fixed   no       a path parameter appears, disappears or changes: the path template already
                            fixed what the client sends, so this is a correction of the spec
================== ======== =================================================================

A *glitch* is a change undone within ``window`` versions: an atom leaves a value at version v and has it
again at a version w <= v + window; every change of that atom from v to w is a glitch, and no glitch is
breaking. While an endpoint is absent through a glitch its parameters keep their values (so a parameter
that changed across the gap shows as the one change it is). The window is chosen from the data
(:data:`GLITCH_WINDOW`; README, "Real drift").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from wpbjax.episodes.openapi_surface import Surface

# Stripe's history (2017-03 .. 2023-09, 688 readable versions) has 4,962 round trips of an atom
# (round_trip_lags): 2,029 undone at the next version (1,737 of them within 2 days), 2,933 undone 2 or more
# versions later (8 of them within 2 days: the rest are deliberate, weeks to years apart). So a glitch is a
# change the next version undoes.
GLITCH_WINDOW = 1

# Stripe's incompatible type changes per (version, parameter, old -> new): on 1 to 7 endpoints, except
# ``expand`` on 86 and 104 endpoints on 2017-12-06 (its string form dropped from the spec's description).
SPEC_WIDE = 20

BREAKING = frozenset(
    {"endpoint_removed", "endpoint_deprecated", "param_removed", "param_required", "type_changed", "param_deprecated"}
)
ADDITIVE = frozenset({"endpoint_added", "param_added", "param_optional", "type_widened"})
KINDS = (
    "endpoint_added",
    "endpoint_removed",
    "endpoint_deprecated",
    "endpoint_undeprecated",
    "param_added",
    "param_removed",
    "param_required",
    "param_optional",
    "type_widened",
    "type_refined",
    "type_changed",
    "type_respelled",
    "param_deprecated",
    "param_undeprecated",
    "path_param_fixed",
)


class Change(NamedTuple):
    kind: str
    param: str  # "location.name", "" for the endpoint itself
    glitch: bool
    detail: str = ""  # a type change's "old -> new"

    @property
    def breaking(self) -> bool:
        return is_breaking(self)


def is_breaking(change: Change) -> bool:
    """A change breaks a client iff its kind is in BREAKING and it is not a glitch."""
    return change.kind in BREAKING and not change.glitch


# --- one rule per kind ---------------------------------------------------------------------------------------


def presence_change(old_present: bool, new_present: bool, what: str) -> str | None:
    """``{what}_added`` / ``{what}_removed`` when presence flips (``what``: endpoint or param)."""
    if old_present == new_present:
        return None
    return f"{what}_added" if new_present else f"{what}_removed"


def type_change(old_type: str, new_type: str) -> str | None:
    """``type_widened`` when the new type keeps every old form (and adds some); ``type_refined`` when the old
    type left a part unspecified (``any``: the spec got more precise, the API did not change); else
    ``type_changed``."""
    if old_type == new_type:
        return None
    if set(old_type.split("|")) <= set(new_type.split("|")):
        return "type_widened"
    return "type_refined" if "any" in old_type else "type_changed"


def respelled(transitions: dict, threshold: int = SPEC_WIDE) -> set:
    """The type transitions ``(version, param, old -> new)`` made on at least ``threshold`` endpoints in one
    version (``transitions``: their endpoint counts): a spec generator re-describing a shared parameter,
    not that many APIs breaking at once (kind ``type_respelled``)."""
    return {key for key, count in transitions.items() if count >= threshold}


def required_change(old_required: bool, new_required: bool) -> str | None:
    """``param_required`` when a parameter becomes required (or appears required), ``param_optional`` back."""
    if old_required == new_required:
        return None
    return "param_required" if new_required else "param_optional"


def deprecation_change(old_deprecated: bool, new_deprecated: bool, what: str) -> str | None:
    """``{what}_deprecated`` when the flag or the words appear, ``{what}_undeprecated`` when they go."""
    if old_deprecated == new_deprecated:
        return None
    return f"{what}_deprecated" if new_deprecated else f"{what}_undeprecated"


def path_param_change(location: str, kind: str | None) -> str | None:
    """Any change of a path parameter is ``path_param_fixed`` (the path template fixes what is sent)."""
    return None if kind is None else ("path_param_fixed" if location == "path" else kind)


def round_trips(events: Sequence[tuple], window: int) -> list[tuple]:
    """[(first, last)] index ranges of ``events`` ([(version, old, new)] of one atom, in time order) that
    are undone within ``window`` versions: the run i..j whose last new value is i's old value and
    ``version_j - version_i <= window``. The shortest run is taken first and taken out (so the value
    before it meets the value after it), then the next, until none is left."""
    alive = list(range(len(events)))
    found = []
    while True:
        best = None
        for a, i in enumerate(alive):
            for b in range(a + 1, len(alive)):
                j = alive[b]
                lag = events[j][0] - events[i][0]
                if lag > window or (best is not None and lag >= best[0]):
                    break
                if events[j][2] == events[i][1]:
                    best = (lag, a, b)
                    break
        if best is None:
            return found
        _, a, b = best
        found.append((alive[a], alive[b]))
        del alive[a : b + 1]


def reverted(events: Sequence[tuple], window: int) -> set:
    """Indices of the glitches among one atom's ``events``: every event of a round trip (:func:`round_trips`)."""
    return {index for first, last in round_trips(events, window) for index in range(first, last + 1)}


# --- an endpoint's timeline -> its labelled changes --------------------------------------------------------


def _atom_events(timeline: Sequence[tuple], value_of) -> list[tuple]:
    """[(version, old, new)] of one atom along ``timeline`` ([(version, state)])."""
    events, previous = [], value_of(None)
    for version, state in timeline:
        value = value_of(state)
        if version == 0:  # the first version is the baseline, not a change
            previous = value
        elif value != previous:
            events.append((version, previous, value))
            previous = value
    return events


def _atom_glitches(timeline: Sequence[tuple], value_of, window: int) -> dict:
    """{version: glitch?} of the changes of one atom along ``timeline`` (a version left out: not a glitch)."""
    if window < 1:  # versions of one atom's events differ, so no round trip fits: skip the walk (priority's case)
        return {}
    events = _atom_events(timeline, value_of)
    glitches = reverted(events, window)
    return {event[0]: index in glitches for index, event in enumerate(events)}


def round_trip_lags(timeline: Sequence[tuple]) -> list[tuple]:
    """[(first version, last version)] of every round trip of every atom of one endpoint, however long: the
    data the glitch window is chosen from (README, "Real drift")."""
    keys = sorted({key for _, state in timeline if state is not None for key in _params(state)})
    atoms = [lambda state: state is not None, lambda state: bool(state and state.deprecated)]
    atoms += [_param_value(key, field) for key in keys for field in (None, 2, 3, -1)]
    out = []
    for value_of in atoms:
        events = _atom_events(timeline, value_of)
        out += [(events[first][0], events[last][0]) for first, last in round_trips(events, len(timeline) + 10**9)]
    return out


def _param_value(key: tuple, field: int | None):
    """The value of one parameter atom in a Surface: presence (field None) or one Param field."""

    def value_of(surface):
        param = None if surface is None else _params(surface).get(key)
        if field is None:
            return param is not None
        if param is None:
            return None
        return param.deprecated if field == -1 else param[field]

    return value_of


def _params(surface: Surface) -> dict:
    return {(param.location, param.name): param for param in surface.params}


def label_timeline(timeline: Sequence[tuple], window: int = GLITCH_WINDOW) -> list[tuple]:
    """[(version, surface or None, [Change])] for each change point of one endpoint's ``timeline``
    ([(version, Surface or None)], oldest first, consecutive states different)."""
    present = _atom_glitches(timeline, lambda state: state is not None, window)
    # through an absence that is a glitch the endpoint keeps its last surface
    effective, last, gap = [], None, False
    for version, state in timeline:
        if state is None and present.get(version):
            gap = True
        elif state is not None:
            gap = False
        effective.append((version, last if (state is None and gap) else state))
        last = state if state is not None else last
    deprecated = _atom_glitches(effective, lambda state: bool(state and state.deprecated), window)
    keys = sorted({key for _, state in effective if state is not None for key in _params(state)})
    fields = {"presence": None, "type": 2, "required": 3, "deprecated": -1}
    atoms = {
        (key, name): _atom_glitches(effective, _param_value(key, field), window)
        for key in keys
        for name, field in fields.items()
    }
    out, before, before_seen = [], None, None
    for (version, state), (_, seen) in zip(timeline, effective):
        changes = []
        kind = presence_change(before is not None, state is not None, "endpoint")
        if kind:
            changes.append(Change(kind, "", present.get(version, False)))
        if before_seen is not None and seen is not None:  # a new endpoint's params and flags break nobody
            kind = deprecation_change(before_seen.deprecated, seen.deprecated, "endpoint")
            if kind:
                changes.append(Change(kind, "", deprecated.get(version, False)))
            changes += _param_changes(before_seen, seen, version, atoms)
        out.append((version, state, changes))
        before, before_seen = state, seen
    return out


def _param_changes(old: Surface, new: Surface, version: int, atoms: dict) -> list:
    old_params, new_params = _params(old), _params(new)
    changes = []
    for key in sorted(set(old_params) | set(new_params)):
        before, after = old_params.get(key), new_params.get(key)
        target = f"{key[0]}.{key[1]}"
        found = [("presence", presence_change(before is not None, after is not None, "param"))]
        if after is not None:
            found += [
                ("required", required_change(bool(before and before.required), after.required)),
                ("deprecated", deprecation_change(bool(before and before.deprecated), after.deprecated, "param")),
            ]
            if before is not None:
                found.append(("type", type_change(before.type, after.type)))
        if after is not None and before is None:  # a new param: added, and required if it must be sent
            found = [(atom, kind) for atom, kind in found if atom == "presence" or kind == "param_required"]
        for atom, kind in found:
            kind = path_param_change(key[0], kind)
            if kind == "path_param_fixed" and changes and changes[-1][:2] == (kind, target):
                continue  # one fix per path parameter and version
            if kind:
                detail = f"{before.type} -> {after.type}" if atom == "type" else ""
                changes.append(Change(kind, target, atoms[(key, atom)].get(version, False), detail))
    return changes
