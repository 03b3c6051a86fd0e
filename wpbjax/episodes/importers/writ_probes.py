"""A WRIT scenario's probe as a ``probes`` label (wpbjax.episodes.probes): which memory events its ground truth needs.

The probe is asked after the scenario's last session. The rules, in order (the first that applies decides):

1. **Abstention.** ``probe.should_abstain`` -> ``never_seen`` about a fact the episode never carries (the right
   answer is to abstain).
2. **Constraint.** ``constraint_application`` among ``probe.required_capabilities`` -> ``current`` over the
   scenario's ``latent`` (or ``constraint``) events (the inferred constraints the answer must respect; its text describes how they
   are applied, not a stored value).
3. **The answer's events**, by value (values normalised: case; currency signs dropped; thousands separators and a
   ``k`` suffix read as the number: ``$115,000``, ``115000`` and ``$115K`` are one value; a parenthetical is a
   comment, so a value also matches without it; compared as word sequences):

   a. *equal*: exactly one event's value is the answer;
   b. *composed*: the answer's text (every leaf of an object answer) contains the values of one or more events
      (every event with a value, or a leaf of an object value, inside it);
   c. *elaborated*: the answer is contained in exactly one event's value.

   The values compared are the events' final values for a current question; every version's value
   (``previous_values`` too) for a temporal or a history question, whose answer may be an old value.
4. **Kind.** ``history_preservation`` among the required capabilities -> ``history`` (every version of those
   events, in order); a ``temporal_query`` -> ``as_of`` its session; else ``current``. A ``value_history`` alone
   does not make a history question: it also lists where a current value came from ("who is our CEO right
   now?" has two entries).
5. **Multi-hop.** ``multi_hop`` among the required capabilities adds the bridge events: an event whose value
   names an answer event (every word of its value is a word of that event's id: ``Dr. Patel`` ->
   ``dr_patel_phone``), the entity the question reaches the answer through.

A scenario none of these maps gets no probe (its read columns stay blank) and a reason (:func:`map_probe`).
"""

from __future__ import annotations

import dataclasses
import re

CAPABILITY_HISTORY = "history_preservation"
CAPABILITY_CONSTRAINT = "constraint_application"
CAPABILITY_MULTI_HOP = "multi_hop"
CONSTRAINT_TYPES = ("latent", "constraint")  # WRIT's type of an inferred preference; a "constraint" type alike
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_K_SUFFIX = re.compile(r"\b(\d+(?:\.\d+)?)k\b")
_PARENTHETICAL = re.compile(r"\([^()]*\)")
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


@dataclasses.dataclass(frozen=True)
class Mapping:
    """A scenario's probe labels and the rule that made them (``rule``), or none and why (``reason``)."""

    probes: list
    rule: str = ""
    reason: str = ""


def words(text: str) -> tuple:
    """The normalised word sequence of a value's text (module note, rule 3)."""
    text = _THOUSANDS.sub("", str(text).lower())
    text = _K_SUFFIX.sub(lambda match: f"{float(match.group(1)) * 1000:g}", text)
    return tuple(word for word in _WORD.findall(text.replace("$", " ").replace("€", " ").replace("£", " ")))


def forms(value) -> list:
    """The word sequences a value matches as: each leaf (a string or number of an object or list value), with
    and without its parentheticals; empty ones dropped."""
    if isinstance(value, dict):
        return [form for leaf in value.values() for form in forms(leaf)]
    if isinstance(value, list):
        return [form for leaf in value for form in forms(leaf)]
    if value is None or isinstance(value, bool):
        return []
    text = str(value)
    found = {words(text), words(_PARENTHETICAL.sub(" ", text))}
    return [form for form in found if form]


def _inside(needle: tuple, haystack: tuple) -> bool:
    n = len(needle)
    return any(haystack[start : start + n] == needle for start in range(len(haystack) - n + 1))


def _events(scenario: dict) -> list:
    return [event for event in scenario.get("memory_events") or [] if isinstance(event, dict)]


def _values(event: dict, every_version: bool) -> list:
    old = [entry.get("value") for entry in event.get("previous_values") or [] if isinstance(entry, dict)]
    return ([event.get("value")] + old) if every_version else [event.get("value")]


def answer_events(scenario: dict, every_version: bool) -> tuple[list, str]:
    """(event ids, rule) of the memory events whose values make the ground truth's ``current_value`` (rule 3);
    ([], reason) where none do."""
    truth = scenario.get("ground_truth") if isinstance(scenario.get("ground_truth"), dict) else {}
    answer = truth.get("current_value")
    if answer is None:
        return [], "the ground truth has no current_value"
    events = [event for event in _events(scenario) if isinstance(event.get("id"), str)]
    whole = words(" | ".join(" ".join(form) for form in forms(answer)))
    answer_forms = forms(answer)

    def equal(event):
        return any(
            value == answer or (not isinstance(answer, (dict, list)) and words(value) == whole and whole)
            for value in _values(event, every_version)
            if value is not None
        )

    equals = [event["id"] for event in events if equal(event)]
    if len(equals) == 1:
        return equals, "equal"
    if len(equals) > 1:
        return [], f"{len(equals)} memory events hold the answer"
    composed = [
        event["id"]
        for event in events
        if any(_inside(form, whole) for value in _values(event, every_version) for form in forms(value))
    ]
    if composed:
        return composed, "composed"
    elaborated = [
        event["id"]
        for event in events
        if any(
            _inside(part, form)
            for value in _values(event, every_version)
            for form in forms(value)
            for part in answer_forms
        )
    ]
    if len(elaborated) == 1:
        return elaborated, "elaborated"
    return [], "no memory event's value is in the answer or holds it (a paraphrased answer)"


def _bridges(scenario: dict, asked: list) -> list:
    """Rule 5: events whose value's words are all words of an answer event's id."""
    ids = [set(words(name.replace("_", " "))) for name in asked]
    out = []
    for event in _events(scenario):
        if event.get("id") in asked or not isinstance(event.get("id"), str):
            continue
        value = words(event.get("value")) if isinstance(event.get("value"), (str, int, float)) else ()
        named = {word for word in value if not re.fullmatch(r"dr|mr|mrs|ms|prof", word)}  # titles name no one
        if named and any(named <= id_words for id_words in ids):
            out.append(event["id"])
    return out


def map_probe(scenario: dict, where: str, as_of: int | None) -> Mapping:
    """The scenario's probe as ``probes`` labels (module note); ``as_of``: the probe step of its temporal query
    (the last session at or before it) or None."""
    probe = scenario.get("probe")
    if not isinstance(probe, dict):
        return Mapping([], reason="no probe")
    last = len(scenario["sessions"]) - 1
    if probe.get("should_abstain") is True:
        fact = f"never_seen:{scenario.get('scenario_id', where)}"
        return Mapping([{"t": last, "fact": fact, "kind": "never_seen"}], rule="abstention")
    capabilities = probe.get("required_capabilities") or []
    capabilities = capabilities if isinstance(capabilities, list) else []
    if CAPABILITY_CONSTRAINT in capabilities:
        latent = [event["id"] for event in _events(scenario) if event.get("type") in CONSTRAINT_TYPES]
        if latent:
            return Mapping([_label(last, latent, "current")], rule="constraint")
    history = CAPABILITY_HISTORY in capabilities
    asked, rule = answer_events(scenario, every_version=history or as_of is not None)
    if not asked:
        return Mapping([], reason=rule)
    if CAPABILITY_MULTI_HOP in capabilities:
        bridges = _bridges(scenario, asked)
        asked, rule = (bridges + asked, f"{rule}, multi-hop") if bridges else (asked, rule)
    if history:
        return Mapping([_label(last, asked, "history")], rule=f"{rule}, history")
    if as_of is not None:
        return Mapping([dict(_label(last, asked, "as_of"), as_of=as_of)], rule=f"{rule}, as of")
    return Mapping([_label(last, asked, "current")], rule=rule)


def _label(t: int, asked: list, kind: str) -> dict:
    """The one-fact form where one fact is asked (as the import wrote before several could be)."""
    return {"t": t, "fact": asked[0], "kind": kind} if len(asked) == 1 else {"t": t, "facts": asked, "kind": kind}
