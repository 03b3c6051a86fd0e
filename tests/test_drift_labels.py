"""Each breaking-change rule (wpbjax.episodes.drift_labels) and the request-surface reader
(wpbjax.episodes.openapi_surface) on hand-made examples."""

from __future__ import annotations

from wpbjax.episodes import drift_labels as dl
from wpbjax.episodes.openapi_surface import Param, Surface, deprecated_in_text, endpoint_surfaces


def _surface(*params, deprecated=False) -> Surface:
    return Surface(deprecated, False, tuple(sorted(params, key=lambda p: (p.location, p.name))))


def _param(name, location="body", type_="string", required=False, deprecated=False) -> Param:
    return Param(name, location, type_, required, deprecated, False)


def test_presence_change():
    assert dl.presence_change(True, False, "endpoint") == "endpoint_removed"
    assert dl.presence_change(False, True, "param") == "param_added"
    assert dl.presence_change(True, True, "param") is None


def test_type_change():
    assert dl.type_change("string", "object|string") == "type_widened"  # a form gained, none lost
    assert dl.type_change("integer|string", "string") == "type_changed"  # a form lost
    assert dl.type_change("integer", "string") == "type_changed"
    assert dl.type_change("array<any>", "array<string>") == "type_refined"  # unspecified items made precise
    assert dl.type_change("string", "string") is None


def test_required_change():
    assert dl.required_change(False, True) == "param_required"
    assert dl.required_change(True, False) == "param_optional"
    assert dl.required_change(True, True) is None


def test_deprecation_change_and_words():
    assert dl.deprecation_change(False, True, "param") == "param_deprecated"
    assert dl.deprecation_change(True, False, "endpoint") == "endpoint_undeprecated"
    assert deprecated_in_text("This parameter is deprecated in favour of `amount`.")
    assert deprecated_in_text("<p><strong>Deprecated</strong> use prices.</p>")
    assert deprecated_in_text("Deprecated: send amount instead.")
    assert deprecated_in_text("This endpoint has been deprecated.")
    assert not deprecated_in_text("Replaces the deprecated `source` field.")  # words about another field
    assert not deprecated_in_text(None)


def test_path_param_change():
    assert dl.path_param_change("path", "param_required") == "path_param_fixed"
    assert dl.path_param_change("query", "param_required") == "param_required"
    assert dl.path_param_change("path", None) is None


def test_round_trips_and_reverted():
    # an atom's values: a at v0; v3 -> b; v4 -> a (undone the next version); v9 -> c; v20 -> a (11 later)
    events = [(3, "a", "b"), (4, "b", "a"), (9, "a", "c"), (20, "c", "a")]
    assert dl.round_trips(events, 1) == [(0, 1)]
    assert dl.reverted(events, 1) == {0, 1}
    assert dl.reverted(events, 11) == {0, 1, 2, 3}
    # the shortest trip goes first: v5 b->a is undone at v6; then v2 a->b and v8 b->a are 6 apart
    nested = [(2, "a", "b"), (5, "b", "a"), (6, "a", "b"), (8, "b", "a")]
    assert dl.round_trips(nested, 10) == [(1, 2), (0, 3)]


def test_respelled():
    transitions = {
        (23, "query.expand", "array<string>|string -> array<string>"): 86,
        (73, "body.source", "object|string -> string"): 6,
    }
    assert dl.respelled(transitions, 20) == {(23, "query.expand", "array<string>|string -> array<string>")}


def test_label_timeline_by_hand():
    """One endpoint over versions 0..6: v1 adds `color`; v2 makes `name` required and removes `price`;
    v3 drops the endpoint, v4 has it back with `price` (a glitch absence: its params carry through, so v4
    shows only the one real change since v2, `size` added); v6 deprecates it."""
    name, price, color, size = _param("name"), _param("price", type_="integer"), _param("color"), _param("size")
    v0 = _surface(name, price)
    v1 = _surface(name, price, color)
    v2 = _surface(name._replace(required=True), color)
    v4 = _surface(name._replace(required=True), color, size)
    v6 = v4._replace(deprecated_flag=True)
    labelled = dl.label_timeline([(0, v0), (1, v1), (2, v2), (3, None), (4, v4), (6, v6)], window=1)
    got = [(version, [(c.kind, c.param, c.glitch) for c in changes]) for version, _, changes in labelled]
    assert got == [
        (0, [("endpoint_added", "", False)]),
        (1, [("param_added", "body.color", False)]),
        (2, [("param_required", "body.name", False), ("param_removed", "body.price", False)]),
        (3, [("endpoint_removed", "", True)]),
        (4, [("endpoint_added", "", True), ("param_added", "body.size", False)]),
        (6, [("endpoint_deprecated", "", False)]),
    ]
    breaking = [version for version, _, changes in labelled if any(dl.is_breaking(c) for c in changes)]
    assert breaking == [2, 6]


def test_new_params_break_only_when_required_and_not_in_the_path():
    before = _surface(_param("id", "path", required=True))
    after = _surface(
        _param("id", "path", required=True),
        _param("account", "path", required=True),
        _param("amount", required=True),
        _param("memo"),
    )
    (_, (_, _, changes)) = dl.label_timeline([(0, before), (1, after)], window=1)
    assert [(c.kind, c.param) for c in changes] == [
        ("param_added", "body.amount"),
        ("param_required", "body.amount"),
        ("param_added", "body.memo"),
        ("path_param_fixed", "path.account"),
    ]
    assert [c.kind for c in changes if dl.is_breaking(c)] == ["param_required"]


def test_surfaces_of_openapi3_and_swagger2():
    openapi3 = {
        "openapi": "3.0.0",
        "servers": [{"url": "https://api.example.com/v1"}],
        "components": {
            "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}},
            "schemas": {
                "Body": {
                    "allOf": [{"$ref": "#/components/schemas/Base"}, {"properties": {"note": {"type": "string"}}}]
                },
                "Base": {
                    "type": "object",
                    "required": ["amount"],
                    "properties": {"amount": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": [""]}]}},
                },
            },
        },
        "paths": {
            "/pay": {
                "parameters": [{"$ref": "#/components/parameters/Limit"}],
                "post": {
                    "deprecated": True,
                    "requestBody": {
                        "content": {
                            "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/Body"}}
                        }
                    },
                },
            }
        },
    }
    ((key, surface),) = endpoint_surfaces({"spec": openapi3}).items()
    assert key == ("api.example.com", "POST", "/pay") and surface.deprecated
    assert [(p.name, p.location, p.type, p.required) for p in surface.params] == [
        ("amount", "body", '""|integer', True),
        ("note", "body", "string", False),
        ("limit", "query", "integer", False),
    ]
    swagger2 = {
        "swagger": "2.0",
        "host": "api.example.com",
        "paths": {
            "/pay/{id}": {
                "post": {
                    "parameters": [
                        {"name": "id", "in": "path", "type": "string"},
                        {
                            "name": "tags",
                            "in": "formData",
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "This field is deprecated.",
                        },
                        {
                            "name": "payload",
                            "in": "body",
                            "required": True,
                            "schema": {"required": ["amount"], "properties": {"amount": {"type": ["integer"]}}},
                        },
                    ]
                }
            }
        },
    }
    ((key, surface),) = endpoint_surfaces({"spec": swagger2}).items()
    assert key == ("api.example.com", "POST", "/pay/{id}")
    assert [(p.name, p.location, p.type, p.required, p.deprecated) for p in surface.params] == [
        ("amount", "body", "integer", True, False),
        ("tags", "body", "array<string>", False, True),
        ("id", "path", "string", True, False),
    ]
