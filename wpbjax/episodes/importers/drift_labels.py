"""What a change of an API does to an existing client: one table of rules, one level per change.

An endpoint's history is its *timeline*: ``[(version, Surface or None)]`` at the versions where its surface
changed (None: absent; :mod:`wpbjax.episodes.importers.openapi_surface`). Each change is split into *atoms*, each a value
over time: the endpoint's presence and deprecation; per field (a request parameter or body property, a
response body property) its presence, type, required flag, enum values and deprecation. A change of an atom
has a *kind* and a *level* (:data:`RULES`), decided by the client-contract model oasdiff's checks follow:

* a client **sends** requests: tightening what it may send breaks it (an endpoint or request field removed,
  a field newly required, a type that loses a form, an enum value removed); loosening it is ``info``;
* a client **reads** responses: loosening what it may receive breaks it (a response property removed,
  required or not; a property no longer required; a type that gains a form); tightening it is ``info``; a
  type that gains only ``null`` or an enum value added is a ``warning`` (a client handling an absent value
  or an unknown value tolerates it; one that assumed more breaks);
* additions are ``info``, deprecations ``warning`` (the client still works, and must move);
* a type made precise where it was unspecified (``any``) is ``info``, and so is one made unspecified: the
  spec's description changed, not what the API sends or accepts.

Two rules take changes out of the labels, each a level ``none`` (:data:`LEVELS`):

* a *glitch* is a change undone within ``window`` versions: an atom leaves a value at version v and has it
  again at a version w <= v + window; every change of that atom from v to w is a glitch (a spec published
  wrong and fixed, which no client could have built on). While an endpoint is absent through a glitch its
  fields keep their values, so a field that changed across the gap shows as the one change it is;
* a *respelling* is the same type transition of the same field name on at least ``spec_wide`` endpoints in
  one version (:func:`respelled`): a spec generator re-describing a shared field, not that many endpoints
  changing at once.

A line's level is the worst level of its changes; it is *breaking* when that level is ``breaking``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from wpbjax.episodes.importers.openapi_surface import Surface

# a change undone at the next version that changes the surface (docs/real_drift.md: the round-trip
# lags of the shipped histories, drift_labels.round_trip_lags, put most round trips at one version)
GLITCH_WINDOW = 1
# the same type transition of one field name on this many endpoints in one version is a respelling
SPEC_WIDE = 20

LEVELS = ("none", "info", "warning", "breaking")  # worst last
# utility of a step by its level: what a memory gains by holding it (real drift and changelog episodes)
LEVEL_UTILITY = {"breaking": 1.0, "warning": 0.5, "info": 0.25, "none": 0.0}


class Rule(NamedTuple):
    """One kind of change: its level, oasdiff's check for the same change ("" where it has none, two
    names where it splits parameters from body properties) and why."""

    kind: str
    level: str
    oasdiff: str
    reason: str


RULES = {
    rule.kind: rule
    for rule in (
        Rule("endpoint_added", "info", "endpoint-added", "a new endpoint: no client calls it yet"),
        Rule(
            "endpoint_removed",
            "breaking",
            "api-removed-without-deprecation",
            "every call of it fails",
        ),
        Rule(
            "endpoint_removed_deprecated",
            "warning",
            "api-removed-before-sunset",
            "removed after a deprecation: breaks only the clients that ignored it (oasdiff: an error before the "
            "sunset date, nothing after; histories carry no sunset dates)",
        ),
        Rule("endpoint_deprecated", "warning", "endpoint-deprecated", "still works; clients must move"),
        Rule("endpoint_undeprecated", "info", "endpoint-reactivated", "nothing a client relies on changes"),
        Rule(
            "request_added",
            "info",
            "new-optional-request-parameter / new-optional-request-property",
            "optional: an old request stays valid",
        ),
        Rule(
            "request_added_required",
            "breaking",
            "new-required-request-parameter / new-required-request-property",
            "an old request lacks it",
        ),
        Rule(
            "request_removed",
            "breaking",
            "request-parameter-removed / request-property-removed",
            "a client still sends it: a strict server rejects the unknown field, a lenient one drops what the "
            "client meant (oasdiff: warning, because some servers ignore it)",
        ),
        Rule(
            "request_required",
            "breaking",
            "request-parameter-became-required / request-property-became-required",
            "an old request that left it out is now invalid",
        ),
        Rule(
            "request_optional",
            "info",
            "request-parameter-became-optional / request-property-became-optional",
            "every old request stays valid",
        ),
        Rule(
            "request_type_narrowed",
            "breaking",
            "request-parameter-type-changed / request-property-type-changed",
            "a value of the lost form is now refused",
        ),
        Rule(
            "request_type_widened",
            "info",
            "request-parameter-type-generalized / request-property-type-generalized",
            "every old value still fits",
        ),
        Rule(
            "request_enum_narrowed",
            "breaking",
            "request-parameter-enum-value-removed / request-property-enum-value-removed",
            "a client sending the removed value (or any value outside a new enum) is refused",
        ),
        Rule(
            "request_enum_widened",
            "info",
            "request-parameter-enum-value-added / request-property-enum-value-added",
            "every old value is still allowed",
        ),
        Rule(
            "request_deprecated",
            "warning",
            "request-parameter-deprecated / request-property-deprecated",
            "still accepted; clients must move",
        ),
        Rule("request_undeprecated", "info", "", "nothing a client relies on changes"),
        Rule(
            "path_param_fixed",
            "info",
            "",
            "the path template fixes what is sent in the path; a change of a path parameter's declaration "
            "corrects the spec, not the API",
        ),
        Rule(
            "response_added",
            "info",
            "response-optional-property-added / response-required-property-added",
            "a client ignores what it does not read",
        ),
        Rule(
            "response_removed_required",
            "breaking",
            "response-required-property-removed",
            "a client reading a promised property finds nothing",
        ),
        Rule(
            "response_removed_optional",
            "breaking",
            "response-optional-property-removed",
            "a client that reads it finds nothing; specs leave out most `required` lists of responses (a property "
            "the server always sends is written as optional), so optional says little about what clients read "
            "(oasdiff: warning)",
        ),
        Rule(
            "response_optional",
            "breaking",
            "response-property-became-optional",
            "a client reading a promised property may find nothing",
        ),
        Rule("response_required", "info", "response-property-became-required", "a client gets more than promised"),
        Rule(
            "response_type_changed",
            "breaking",
            "response-property-type-changed",
            "a client receives a form it was never told of",
        ),
        Rule(
            "response_became_nullable",
            "warning",
            "response-property-became-nullable",
            "the property keeps its type whenever it has a value; a null reads as the value being absent, which "
            "a client reading an optional property already handles, and one that assumed a value breaks "
            "(oasdiff: error; a spec marking nullable what the server already sent is the common case, and "
            "vendors do not mark it breaking)",
        ),
        Rule(
            "response_type_narrowed",
            "info",
            "",
            "a client that handles every old form handles the fewer new ones",
        ),
        Rule(
            "response_enum_widened",
            "warning",
            "response-property-enum-value-added",
            "a client with an exhaustive match over the values meets an unknown one",
        ),
        Rule(
            "response_enum_narrowed",
            "info",
            "response-property-enum-value-removed",
            "a client handles a subset of what it handled",
        ),
        Rule("response_deprecated", "warning", "response-property-deprecated", "still sent; clients must move"),
        Rule("response_undeprecated", "info", "", "nothing a client relies on changes"),
        Rule(
            "type_refined",
            "info",
            "",
            "the old type left a part unspecified (any, or no format where the new one has one): the spec got more "
            "precise, the API did not change",
        ),
        Rule(
            "type_unspecified",
            "info",
            "",
            "the new type leaves a part unspecified (any, or drops a format) where the old one said what it was: the spec stopped "
            "describing it, which says nothing about what the API sends or accepts",
        ),
        Rule(
            "type_respelled",
            "none",
            "",
            "the same transition of one field name on SPEC_WIDE or more endpoints in one version: a spec "
            "generator re-describing a shared field",
        ),
    )
}
KINDS = tuple(RULES)
BREAKING = frozenset(kind for kind, rule in RULES.items() if rule.level == "breaking")


class Change(NamedTuple):
    kind: str
    field: str  # "location.name" of a request field, "response.name" of a response field, "" the endpoint
    glitch: bool
    detail: str = ""  # a type change's "old -> new", an enum change's values

    @property
    def level(self) -> str:
        return change_level(self)

    @property
    def breaking(self) -> bool:
        return self.level == "breaking"


def change_level(change: Change) -> str:
    """The rule's level; ``none`` for a glitch."""
    return "none" if change.glitch else RULES[change.kind].level


def is_breaking(change: Change) -> bool:
    return change_level(change) == "breaking"


_RANK = {level: rank for rank, level in enumerate(LEVELS)}


def worst_level(levels) -> str:
    """The worst of ``levels`` (LEVELS order), ``none`` for no level."""
    return max(levels, key=_RANK.__getitem__, default="none")


# --- one rule per atom ---------------------------------------------------------------------------------------


def _top_level(type_: str) -> list[str]:
    """The ``|``-joined forms of a type, split outside ``<...>``: ``array<a|b>|null`` -> [``array<a|b>``, ``null``]."""
    forms, depth, start = [], 0, 0
    for at, char in enumerate(type_):
        depth += (char == "<") - (char == ">")
        if char == "|" and depth == 0:
            forms.append(type_[start:at])
            start = at + 1
    return forms + [type_[start:]] if type_ else forms


def _forms(type_: str, drop_null: bool = False) -> set:
    """A type's forms, an array's spread over its items' forms (``array<a|b>`` is ``array<a>`` and
    ``array<b>``), so that items gaining or losing a form widen or narrow the array as any other type. A type
    that is only ``null`` (a schema that says ``nullable`` and nothing else) is ``any`` or null."""
    forms = set()
    for form in _top_level(type_):
        if form.startswith("array<") and form.endswith(">"):
            forms |= {f"array<{item}>" for item in _forms(form[len("array<") : -1])}
        else:
            forms.add(form)
    if forms == {"null"}:
        forms.add("any")
    return forms - {"null"} if drop_null else forms


def _covered(form: str, forms: set) -> bool:
    """Whether ``forms`` already admit every value of ``form``: an ``any`` does, and ``array<any>`` any array."""
    return "any" in forms or (form.startswith("array<") and "array<any>" in forms)


_FORMAT = re.compile(r"\([^()]*\)")  # a form's format: string(date-time)
_ANY = re.compile(r"(?<![\w-])any(?![\w-])")


def _bare(form: str) -> str:
    return _FORMAT.sub("", form)


def _vague(forms) -> bool:
    """Whether a form has an unspecified part: ``any``, ``array<any>`` (a format is no part: ``string(company)``)."""
    return any(_ANY.search(_bare(form)) for form in forms)


def type_change(side: str, location: str, old: str, new: str) -> str | None:
    """The kind of a type change. A request field breaks when its type loses a form (a value of that form is
    refused); a response field when it gains one (the client receives a form it was never told of), ``null``
    alone being a warning (``response_became_nullable``). A form the other side's ``any`` admits is neither
    lost nor gained. A type made precise where it had an unspecified part (``any``) is ``type_refined``; one
    made unspecified where it was precise is ``type_unspecified``. A format is part of a form
    (``string(date)``): one format replaced by another retypes the value; a format added refines the type,
    one dropped leaves it unspecified. ``null`` is no form of a parameter outside the body: a query string
    or header cannot carry it (absent is its null)."""
    drop_null = side == "request" and location != "body"
    before, after = _forms(old, drop_null), _forms(new, drop_null)
    if before == after:
        return None
    bare_before, bare_after = {_bare(form) for form in before}, {_bare(form) for form in after}
    if bare_before == bare_after:  # only formats changed
        dropped = {_bare(form) for form in before - after if form != _bare(form)}
        added = {_bare(form) for form in after - before if form != _bare(form)}
        if dropped & added:
            return "request_type_narrowed" if side == "request" else "response_type_changed"
        return "type_refined" if added else "type_unspecified"
    before, after = bare_before, bare_after
    lost = {form for form in before - after if not _covered(form, after)}
    gained = {form for form in after - before if not _covered(form, before)}
    if side == "request":
        if lost:
            return "type_refined" if _vague(lost) else "request_type_narrowed"
        return "type_unspecified" if _vague(gained) else "request_type_widened"
    if not gained:
        return "type_refined" if _vague(before - after) else "response_type_narrowed"
    if gained == {"null"}:
        return "response_became_nullable"
    return "type_unspecified" if _vague(gained) else "response_type_changed"


def enum_change(side: str, old: tuple, new: tuple) -> str | None:
    """The kind of an enum change; ``()`` is no enum (any value). A request narrows when a value it could
    send goes (a new enum is a narrowing too); a response widens when a value it could get appears (an enum
    dropped is a widening too)."""
    if tuple(old) == tuple(new):
        return None
    before, after = set(old), set(new)
    widened = not after or (bool(before) and before <= after)
    return f"{side}_enum_{'widened' if widened else 'narrowed'}"


def presence_change(side: str, old, new) -> str | None:
    """A field's presence flips: added (a required request field is ``request_added_required``) or removed
    (a response field by whether it was required)."""
    if (old is None) == (new is None):
        return None
    if old is None:
        return "request_added_required" if side == "request" and new.required else f"{side}_added"
    if side == "response":
        return "response_removed_required" if old.required else "response_removed_optional"
    return "request_removed"


def required_change(side: str, old: bool, new: bool) -> str | None:
    if old == new:
        return None
    return f"{side}_{'required' if new else 'optional'}"


def deprecation_change(old: bool, new: bool, what: str) -> str | None:
    """``{what}_deprecated`` when the flag or the words appear, ``{what}_undeprecated`` when they go."""
    if old == new:
        return None
    return f"{what}_{'deprecated' if new else 'undeprecated'}"


def respelled(transitions: dict, threshold: int = SPEC_WIDE) -> set:
    """The type transitions ``(version, field, old -> new)`` made on at least ``threshold`` endpoints in one
    version (``transitions``: their endpoint counts): kind ``type_respelled``."""
    return {key for key, count in transitions.items() if count >= threshold}


# --- glitches: round trips of an atom ----------------------------------------------------------------------


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

FIELD_ATOMS = ("presence", "type", "required", "enum", "deprecated")


def _fields(surface: Surface | None) -> dict:
    return {} if surface is None else {(field.side, field.location, field.name): field for field in surface.fields}


def _atom_value(field, atom: str):
    if atom == "presence":
        return field is not None
    if field is None:
        return None
    return field.deprecated if atom == "deprecated" else getattr(field, atom)


def _field_events(states: Sequence[tuple]) -> dict:
    """{(field key, atom): [(version, old, new)]} over ``states`` ([(version, Surface or None)]), version 0 the
    baseline; only the fields that change are walked (a surface has hundreds, a version changes a few)."""
    events: dict = {}
    previous: dict = {}
    for version, state in states:
        fields = _fields(state)
        if version != 0:
            for key in previous.keys() | fields.keys():
                old, new = previous.get(key), fields.get(key)
                if old == new:
                    continue
                for atom in FIELD_ATOMS:
                    before, after = _atom_value(old, atom), _atom_value(new, atom)
                    if before != after:
                        events.setdefault((key, atom), []).append((version, before, after))
        previous = fields
    return events


def _simple_events(states: Sequence[tuple], value_of) -> list[tuple]:
    events, previous = [], None
    for version, state in states:
        value = value_of(state)
        if version != 0 and value != previous:
            events.append((version, previous, value))
        previous = value
    return events


def _glitch_versions(events: Sequence[tuple], window: int) -> set:
    """Versions of the events of one atom that are glitches."""
    if window < 1:
        return set()
    return {events[index][0] for index in reverted(events, window)}


def round_trip_lags(timeline: Sequence[tuple]) -> list[tuple]:
    """[(first version, last version)] of every round trip of every atom of one endpoint, however long: the data
    the glitch window is chosen from (docs/real_drift.md)."""
    all_events = [
        _simple_events(timeline, lambda state: state is not None),
        _simple_events(timeline, lambda state: bool(state and state.deprecated)),
        *_field_events(timeline).values(),
    ]
    out = []
    for events in all_events:
        out += [(events[first][0], events[last][0]) for first, last in round_trips(events, 10**12)]
    return out


def _parents(name: str):
    """The field names above ``name`` ("a.b[].c" -> "a.b", "a"): a change of a parent covers its children."""
    while True:
        cut = max(name.rfind("."), name.rfind("[]"))
        if cut <= 0:
            return
        name = name[:cut]
        yield name


def label_timeline(timeline: Sequence[tuple], window: int = GLITCH_WINDOW) -> list[tuple]:
    """[(version, surface or None, [Change])] for each change point of one endpoint's ``timeline``
    ([(version, Surface or None)], oldest first, consecutive states different)."""
    presence_events = _simple_events(timeline, lambda state: state is not None)
    absent_glitch = _glitch_versions(presence_events, window)
    # through an absence that is a glitch the endpoint keeps its last surface
    effective, last, gap = [], None, False
    for version, state in timeline:
        if state is None and version in absent_glitch:
            gap = True
        elif state is not None:
            gap = False
        effective.append((version, last if (state is None and gap) else state))
        last = state if state is not None else last
    deprecation_glitches = _glitch_versions(
        _simple_events(effective, lambda state: bool(state and state.deprecated)), window
    )
    field_events = _field_events(effective)
    field_glitches = {atom: _glitch_versions(events, window) for atom, events in field_events.items()}
    by_version: dict = {}
    for (key, atom), events in field_events.items():
        for event in events:
            by_version.setdefault(event[0], []).append((key, atom))
    out, before, before_seen = [], None, None
    for (version, state), (_, seen) in zip(timeline, effective):
        changes = []
        if (before is None) != (state is None):
            if state is not None:
                kind = "endpoint_added"
            else:
                kind = "endpoint_removed_deprecated" if before.deprecated else "endpoint_removed"
            changes.append(Change(kind, "", version in absent_glitch))
        if before_seen is not None and seen is not None:  # a new endpoint's fields and flags break nobody
            kind = deprecation_change(before_seen.deprecated, seen.deprecated, "endpoint")
            if kind:
                changes.append(Change(kind, "", version in deprecation_glitches))
            changes += _field_changes(before_seen, seen, version, by_version.get(version, ()), field_glitches)
        out.append((version, state, changes))
        before, before_seen = state, seen
    return out


def _field_changes(old: Surface, new: Surface, version: int, atoms: Sequence, glitches: dict) -> list:
    """The changes of the fields' atoms at ``version`` (``atoms``: [(field key, atom)] that changed there)."""
    old_fields, new_fields = _fields(old), _fields(new)
    changes = []
    presence = {
        key: (old_fields.get(key) is None) for key, atom in atoms if atom == "presence"
    }  # key -> added (True) or removed (False)
    for key, atom in sorted(atoms):
        side, location, name = key
        before, after = old_fields.get(key), new_fields.get(key)
        if atom != "presence" and (before is None or after is None):
            continue  # a field that appears or goes is one presence change
        if atom == "presence" and any(
            presence.get((side, location, parent)) == presence[key] for parent in _parents(name)
        ):
            continue  # its parent appeared / went with it
        if atom == "presence":
            kind, detail = presence_change(side, before, after), ""
        elif atom == "type":
            kind, detail = type_change(side, location, before.type, after.type), f"{before.type} -> {after.type}"
        elif atom == "required":
            kind, detail = required_change(side, before.required, after.required), ""
        elif atom == "enum":
            kind = enum_change(side, before.enum, after.enum)
            detail = _enum_detail(before.enum, after.enum)
        else:
            kind, detail = deprecation_change(before.deprecated, after.deprecated, side), ""
        if kind is None:
            continue
        if location == "path" and side == "request":
            if changes and changes[-1][:2] == ("path_param_fixed", f"path.{name}"):
                continue  # one fix per path parameter and version
            kind = "path_param_fixed"
        field = f"response.{name}" if side == "response" else f"{location}.{name}"
        changes.append(Change(kind, field, version in glitches.get((key, atom), ()), detail))
    return changes


def _enum_detail(old: tuple, new: tuple) -> str:
    before, after = set(old), set(new)
    if not before or not after:
        return f"{'any' if not before else len(before)} -> {'any' if not after else len(after)} values"
    added, removed = sorted(after - before), sorted(before - after)
    return " ".join([*(f"+{value}" for value in added[:5]), *(f"-{value}" for value in removed[:5])])
