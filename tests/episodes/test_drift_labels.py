"""Every rule of the client-contract table (wpbjax.episodes.importers.drift_labels.RULES) on a hand-made pair of spec
versions, read through the surface reader (wpbjax.episodes.importers.openapi_surface), plus the glitch and respelling
rules on hand-made timelines."""

from __future__ import annotations

import pytest

from wpbjax.episodes.importers import drift_labels as dl
from wpbjax.episodes.importers.openapi_surface import endpoint_surfaces, visible


def _spec(
    params=None, body=None, response=None, deprecated=False, server="https://api.example.com/v1", path="/things/{id}"
):
    """One endpoint, POST {server path}{path}: ``params`` (OpenAPI 3 parameter objects), a JSON request body
    schema, a 200 response body schema."""
    operation = {
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
        + list(params or []),
        "responses": {"200": {"description": "ok"}},
    }
    if body is not None:
        operation["requestBody"] = {"content": {"application/json": {"schema": body}}}
    if response is not None:
        operation["responses"]["200"]["content"] = {"application/json": {"schema": response}}
    if deprecated:
        operation["deprecated"] = True
    document = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {path: {"post": operation}}}
    if server is not None:
        document["servers"] = [{"url": server}]
    return document


def _obj(required=(), **properties):
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


STRING, INTEGER = {"type": "string"}, {"type": "integer"}
QUERY_LIMIT = {"name": "limit", "in": "query", "schema": INTEGER}


def _surfaces(document):
    surfaces, _ = endpoint_surfaces({"spec": document})
    folded, _ = visible({key: surface for key, (_, surface) in surfaces.items()})
    return folded


def _changes(before, after, window=dl.GLITCH_WINDOW) -> set:
    """{(kind, field, level)} of the changes from ``before`` to ``after`` (one endpoint each, or none)."""
    old, new = _surfaces(before), _surfaces(after)
    out = set()
    for key in old.keys() | new.keys():
        timeline = [(0, old.get(key)), (1, new.get(key))]
        for _, _, changes in dl.label_timeline(timeline, window)[1:]:
            out |= {(change.kind, change.field, change.level) for change in changes}
    return out


CASES = {
    # request side: tightening what a client may send breaks it
    "request parameter removed": (_spec([QUERY_LIMIT]), _spec(), {("request_removed", "query.limit", "breaking")}),
    "optional parameter added": (_spec(), _spec([QUERY_LIMIT]), {("request_added", "query.limit", "info")}),
    "required parameter added": (
        _spec(),
        _spec([dict(QUERY_LIMIT, required=True)]),
        {("request_added_required", "query.limit", "breaking")},
    ),
    "parameter newly required": (
        _spec([QUERY_LIMIT]),
        _spec([dict(QUERY_LIMIT, required=True)]),
        {("request_required", "query.limit", "breaking")},
    ),
    "parameter made optional": (
        _spec([dict(QUERY_LIMIT, required=True)]),
        _spec([QUERY_LIMIT]),
        {("request_optional", "query.limit", "info")},
    ),
    "request property newly required": (
        _spec(body=_obj(name=STRING)),
        _spec(body=_obj(required=["name"], name=STRING)),
        {("request_required", "body.name", "breaking")},
    ),
    "request type narrowed": (
        _spec(body=_obj(amount={"type": ["integer", "string"]})),
        _spec(body=_obj(amount=INTEGER)),
        {("request_type_narrowed", "body.amount", "breaking")},
    ),
    "request type widened": (
        _spec(body=_obj(amount=INTEGER)),
        _spec(body=_obj(amount={"anyOf": [INTEGER, STRING]})),
        {("request_type_widened", "body.amount", "info")},
    ),
    "request type made precise": (
        _spec(body=_obj(meta={})),
        _spec(body=_obj(meta={"type": "object"})),
        {("type_refined", "body.meta", "info")},
    ),
    "request array items made precise": (
        _spec(body=_obj(ids={"anyOf": [{"type": "array", "items": {}}, {"type": "array", "items": STRING}]})),
        _spec(body=_obj(ids={"type": "array", "items": STRING})),
        {("type_refined", "body.ids", "info")},
    ),
    "request enum value removed": (
        _spec(body=_obj(mode={"type": "string", "enum": ["fast", "slow"]})),
        _spec(body=_obj(mode={"type": "string", "enum": ["fast"]})),
        {("request_enum_narrowed", "body.mode", "breaking")},
    ),
    "request enum value added": (
        _spec(body=_obj(mode={"type": "string", "enum": ["fast"]})),
        _spec(body=_obj(mode={"type": "string", "enum": ["fast", "slow"]})),
        {("request_enum_widened", "body.mode", "info")},
    ),
    "request parameter deprecated": (
        _spec([QUERY_LIMIT]),
        _spec([dict(QUERY_LIMIT, deprecated=True)]),
        {("request_deprecated", "query.limit", "warning")},
    ),
    "request parameter undeprecated": (
        _spec([dict(QUERY_LIMIT, deprecated=True)]),
        _spec([QUERY_LIMIT]),
        {("request_undeprecated", "query.limit", "info")},
    ),
    # a query string cannot carry null: an optional query parameter dropping `nullable` changes nothing
    "query parameter drops null": (
        _spec([{"name": "limit", "in": "query", "schema": {"type": "integer", "nullable": True}}]),
        _spec([QUERY_LIMIT]),
        set(),
    ),
    "path parameter type fixed": (
        _spec(),
        _spec(path="/things/{id}")
        | {
            "paths": {
                "/things/{id}": {
                    "post": {
                        "parameters": [{"name": "id", "in": "path", "required": True, "schema": INTEGER}],
                        "responses": {"200": {"description": "ok"}},
                    }
                }
            }
        },
        {("path_param_fixed", "path.{0}", "info")},
    ),
    # response side: loosening what a client may receive breaks it
    "required response property removed": (
        _spec(response=_obj(required=["id", "status"], id=STRING, status=STRING)),
        _spec(response=_obj(required=["id"], id=STRING)),
        {("response_removed_required", "response.status", "breaking")},
    ),
    # most specs leave response `required` lists out: an optional property removed is one clients read
    "optional response property removed": (
        _spec(response=_obj(required=["id"], id=STRING, note=STRING)),
        _spec(response=_obj(required=["id"], id=STRING)),
        {("response_removed_optional", "response.note", "breaking")},
    ),
    "response property retyped": (
        _spec(response=_obj(required=["amount"], amount=INTEGER)),
        _spec(response=_obj(required=["amount"], amount=STRING)),
        {("response_type_changed", "response.amount", "breaking")},
    ),
    # gaining only null: the value keeps its type whenever it is there (a warning, not a retyping)
    "response property becomes nullable": (
        _spec(response=_obj(required=["amount"], amount=INTEGER)),
        _spec(response=_obj(required=["amount"], amount={"type": "integer", "nullable": True})),
        {("response_became_nullable", "response.amount", "warning")},
    ),
    "response property gains null and another form": (
        _spec(response=_obj(required=["amount"], amount=INTEGER)),
        _spec(response=_obj(required=["amount"], amount={"type": ["integer", "string"], "nullable": True})),
        {("response_type_changed", "response.amount", "breaking")},
    ),
    # the spec stops saying what the property is: a description lost, not a form the API now sends
    "response property type made unspecified": (
        _spec(response=_obj(required=["meta"], meta=_obj(required=["a"], a=STRING))),
        _spec(response=_obj(required=["meta"], meta={})),
        {("type_unspecified", "response.meta", "info"), ("response_removed_required", "response.meta.a", "breaking")},
    ),
    # `nullable` alone says nothing of the type: made precise, it is refined, not retyped
    "nullable-only response property made precise": (
        _spec(response=_obj(meta={"nullable": True})),
        _spec(response=_obj(meta={"type": "integer", "nullable": True})),
        {("type_refined", "response.meta", "info")},
    ),
    # a format is part of a value's type (oasdiff's type checks read type and format together): one format
    # for another retypes it; a format added or dropped describes the same type more or less precisely
    "response property format changed": (
        _spec(response=_obj(required=["at"], at={"type": "string", "format": "date"})),
        _spec(response=_obj(required=["at"], at={"type": "string", "format": "date-time"})),
        {("response_type_changed", "response.at", "breaking")},
    ),
    "response property gains a format": (
        _spec(response=_obj(required=["id"], id=STRING)),
        _spec(response=_obj(required=["id"], id={"type": "string", "format": "uuid"})),
        {("type_refined", "response.id", "info")},
    ),
    "request property loses its format": (
        _spec(body=_obj(at={"type": "string", "format": "date"})),
        _spec(body=_obj(at=STRING)),
        {("type_unspecified", "body.at", "info")},
    ),
    "request property gains a format": (
        _spec(body=_obj(at=STRING)),
        _spec(body=_obj(at={"type": "string", "format": "date"})),
        {("type_refined", "body.at", "info")},
    ),
    "request property format changed": (
        _spec(body=_obj(at={"type": "string", "format": "date"})),
        _spec(body=_obj(at={"type": "string", "format": "date-time"})),
        {("request_type_narrowed", "body.at", "breaking")},
    ),
    "request body property type made unspecified": (
        _spec(body=_obj(note=STRING)),
        _spec(body=_obj(note={})),
        {("type_unspecified", "body.note", "info")},
    ),
    "response type narrowed": (
        _spec(response=_obj(amount={"type": ["integer", "string"]})),
        _spec(response=_obj(amount=INTEGER)),
        {("response_type_narrowed", "response.amount", "info")},
    ),
    # an array's items are its forms: items losing a form narrow it ("array<integer|string>" is not one
    # opaque form that a change swaps for another)
    "response array items narrowed": (
        _spec(response=_obj(ids={"type": "array", "items": {"type": ["integer", "string"]}})),
        _spec(response=_obj(ids={"type": "array", "items": INTEGER})),
        {("response_type_narrowed", "response.ids", "info"), ("response_type_narrowed", "response.ids[]", "info")},
    ),
    "response array items gain a form": (
        _spec(response=_obj(ids={"type": "array", "items": INTEGER})),
        _spec(response=_obj(ids={"type": "array", "items": {"type": ["integer", "string"]}})),
        {
            ("response_type_changed", "response.ids", "breaking"),
            ("response_type_changed", "response.ids[]", "breaking"),
        },
    ),
    "response property no longer required": (
        _spec(response=_obj(required=["id"], id=STRING)),
        _spec(response=_obj(id=STRING)),
        {("response_optional", "response.id", "breaking")},
    ),
    "response property newly required": (
        _spec(response=_obj(id=STRING)),
        _spec(response=_obj(required=["id"], id=STRING)),
        {("response_required", "response.id", "info")},
    ),
    "response property added": (
        _spec(response=_obj(required=["id"], id=STRING)),
        _spec(response=_obj(required=["id"], id=STRING, note=STRING)),
        {("response_added", "response.note", "info")},
    ),
    "response enum value added": (
        _spec(response=_obj(status={"type": "string", "enum": ["paid"]})),
        _spec(response=_obj(status={"type": "string", "enum": ["failed", "paid"]})),
        {("response_enum_widened", "response.status", "warning")},
    ),
    "response enum value removed": (
        _spec(response=_obj(status={"type": "string", "enum": ["failed", "paid"]})),
        _spec(response=_obj(status={"type": "string", "enum": ["paid"]})),
        {("response_enum_narrowed", "response.status", "info")},
    ),
    "response property deprecated": (
        _spec(response=_obj(note=STRING)),
        _spec(response=_obj(note=dict(STRING, deprecated=True))),
        {("response_deprecated", "response.note", "warning")},
    ),
    "response property undeprecated": (
        _spec(response=_obj(note=dict(STRING, deprecated=True))),
        _spec(response=_obj(note=STRING)),
        {("response_undeprecated", "response.note", "info")},
    ),
    # a nested object removed is one change, not one per property inside it
    "nested response object removed": (
        _spec(response=_obj(required=["card"], card=_obj(required=["last4"], last4=STRING, brand=STRING))),
        _spec(response=_obj()),
        {("response_removed_required", "response.card", "breaking")},
    ),
    # the endpoint itself
    "endpoint removed": (_spec(), {"openapi": "3.0.0", "info": {"version": "1"}, "paths": {}}, None),
    "endpoint added": ({"openapi": "3.0.0", "info": {"version": "1"}, "paths": {}}, _spec(), None),
    "endpoint deprecated": (_spec(), _spec(deprecated=True), {("endpoint_deprecated", "", "warning")}),
    "endpoint undeprecated": (_spec(deprecated=True), _spec(), {("endpoint_undeprecated", "", "info")}),
    "endpoint removed after its deprecation": (
        _spec(deprecated=True),
        {"openapi": "3.0.0", "info": {"version": "1"}, "paths": {}},
        {("endpoint_removed_deprecated", "", "warning")},
    ),
    # refactors that change nothing a client sees
    "servers prefix moved into the paths": (
        _spec(),
        _spec(server="https://api.example.com", path="/v1/things/{id}"),
        set(),
    ),
    "a server added": (
        _spec(),
        _spec() | {"servers": [{"url": "https://api.example.com/v1"}, {"url": "https://eu.example.com/v1"}]},
        set(),
    ),
    "the host changed": (_spec(), _spec(server="https://api.example.org/v1"), set()),
    "path parameter renamed": (
        _spec(),
        {
            "openapi": "3.0.0",
            "info": {"version": "1"},
            "servers": [{"url": "https://api.example.com/v1"}],
            "paths": {
                "/things/{thing_id}": {
                    "post": {
                        "parameters": [{"name": "thing_id", "in": "path", "required": True, "schema": STRING}],
                        "responses": {"200": {"description": "ok"}},
                    }
                }
            },
        },
        set(),
    ),
    "description-only change": (
        _spec([dict(QUERY_LIMIT, description="How many.")], response=_obj(id=STRING)),
        _spec([dict(QUERY_LIMIT, description="How many to return.")], response=_obj(id=dict(STRING, description="x"))),
        set(),
    ),
    "a schema moved into components behind a $ref": (
        _spec(response=_obj(required=["id"], id=STRING)),
        _spec(response={"$ref": "#/components/schemas/Thing"})
        | {"components": {"schemas": {"Thing": _obj(required=["id"], id=STRING)}}},
        set(),
    ),
}
CASES["endpoint removed"] = (*CASES["endpoint removed"][:2], {("endpoint_removed", "", "breaking")})
CASES["endpoint added"] = (*CASES["endpoint added"][:2], {("endpoint_added", "", "info")})


@pytest.mark.parametrize("name", list(CASES))
def test_rule_on_a_hand_made_pair_of_versions(name):
    before, after, expected = CASES[name]
    assert _changes(before, after) == expected


def test_every_rule_has_a_case():
    """The table and its tests move together: each kind of RULES is produced by some case above (the glitch and
    respelling rules by the tests below)."""
    seen = {kind for _, _, expected in CASES.values() for kind, _, _ in expected}
    assert set(dl.RULES) - seen == {"type_respelled"}


def test_rules_table_is_consistent():
    for kind, rule in dl.RULES.items():
        assert rule.kind == kind and rule.level in dl.LEVELS and rule.reason
    assert dl.BREAKING == {kind for kind, rule in dl.RULES.items() if rule.level == "breaking"}
    assert dl.worst_level(["info", "breaking", "warning"]) == "breaking"
    assert dl.worst_level([]) == "none"


def test_a_yaml_alias_refactor_is_no_change():
    """The same spec written with a YAML anchor and alias parses (openapi_history) to the same surface."""
    from wpbjax.episodes.importers.openapi_history import parse_document

    expanded = b"""openapi: 3.0.0
info: {title: t, version: '1'}
paths:
  /a:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
      responses: {'200': {description: ok}}
  /b:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
      responses: {'200': {description: ok}}
"""
    aliased = b"""openapi: 3.0.0
info: {title: t, version: '1'}
paths:
  /a:
    get:
      parameters:
        - &limit {name: limit, in: query, schema: {type: integer}}
      responses: {'200': {description: ok}}
  /b:
    get:
      parameters:
        - *limit
      responses: {'200': {description: ok}}
"""
    assert _changes(parse_document(expanded, ".yaml"), parse_document(aliased, ".yaml")) == set()


def test_glitch_undone_at_the_next_version_is_level_none():
    """v1 drops a required response property, v2 has it back: both changes are glitches (level none); with a
    window of 0 the drop breaks."""
    with_status = _surfaces(_spec(response=_obj(required=["status"], status=STRING)))
    without = _surfaces(_spec(response=_obj()))
    (key,) = with_status
    timeline = [(0, with_status[key]), (1, without[key]), (2, with_status[key])]
    points = dl.label_timeline(timeline, window=1)
    assert [(c.kind, c.glitch, c.level) for c in points[1][2]] == [("response_removed_required", True, "none")]
    assert [(c.kind, c.glitch, c.level) for c in points[2][2]] == [("response_added", True, "none")]
    points = dl.label_timeline(timeline, window=0)
    assert [(c.kind, c.level) for c in points[1][2]] == [("response_removed_required", "breaking")]


def test_glitch_absence_keeps_the_fields():
    """The endpoint vanishes at v1 and is back at v2 with `limit` newly required: the absence is a glitch and
    v2 shows only the one real change since v0."""
    before = _surfaces(_spec([QUERY_LIMIT]))
    after = _surfaces(_spec([dict(QUERY_LIMIT, required=True)]))
    (key,) = before
    points = dl.label_timeline([(0, before[key]), (1, None), (2, after[key])], window=1)
    assert [(c.kind, c.glitch) for c in points[1][2]] == [("endpoint_removed", True)]
    assert [(c.kind, c.field, c.glitch) for c in points[2][2]] == [
        ("endpoint_added", "", True),
        ("request_required", "query.limit", False),
    ]


def test_round_trips_and_reverted():
    # an atom's values: a at v0; v3 -> b; v4 -> a (undone the next version); v9 -> c; v20 -> a (11 later)
    events = [(3, "a", "b"), (4, "b", "a"), (9, "a", "c"), (20, "c", "a")]
    assert dl.round_trips(events, 1) == [(0, 1)]
    assert dl.reverted(events, 1) == {0, 1}
    assert dl.reverted(events, 11) == {0, 1, 2, 3}
    # the shortest trip goes first: v5 b->a is undone at v6; then v2 a->b and v8 b->a are 6 apart
    nested = [(2, "a", "b"), (5, "b", "a"), (6, "a", "b"), (8, "b", "a")]
    assert dl.round_trips(nested, 10) == [(1, 2), (0, 3)]


def test_respelling_on_many_endpoints_is_level_none():
    """The same transition of `expand` on SPEC_WIDE endpoints in one version is a generator's respelling; on
    fewer it is the breaking change it looks like."""
    from wpbjax.episodes.importers.openapi_import import label_lines

    def timeline(type_):
        return _surfaces(_spec([{"name": "expand", "in": "query", "schema": type_}]))

    old = timeline({"anyOf": [STRING, {"type": "array", "items": STRING}]})
    new = timeline({"type": "array", "items": STRING})
    ((_, old_surface),), ((_, new_surface),) = old.items(), new.items()

    class Versions:
        def __getitem__(self, index):
            return type("V", (), {"commit": f"c{index}", "date": f"2020-01-0{index + 1}", "api_version": ""})

    for endpoints, level in ((dl.SPEC_WIDE, "none"), (dl.SPEC_WIDE - 1, "breaking")):
        timelines = {("POST", f"/e{n}"): [(0, old_surface), (1, new_surface)] for n in range(endpoints)}
        names = {key: f"POST {key[1]}" for key in timelines}
        lines = [line for line in label_lines(Versions(), timelines, names) if line["version"] == 1]
        assert len(lines) == endpoints
        assert {line["level"] for line in lines} == {level}
        kinds = {change["kind"] for line in lines for change in line["changes"]}
        assert kinds == ({"type_respelled"} if level == "none" else {"request_type_narrowed"})


def rules_markdown() -> str:
    """docs/real_drift.md's table of the rules, from RULES."""
    rows = ["| kind | level | oasdiff check | why |", "| --- | --- | --- | --- |"]
    for rule in dl.RULES.values():
        checks = " / ".join(f"`{check.strip()}`" for check in rule.oasdiff.split("/")) if rule.oasdiff else "—"
        rows.append(f"| `{rule.kind}` | {rule.level} | {checks} | {rule.reason} |")
    return "\n".join(rows)


def test_the_docs_rules_table_is_the_rules():
    from conftest import REPO

    assert rules_markdown() in (REPO / "docs" / "real_drift.md").read_text()
