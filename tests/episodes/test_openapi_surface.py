"""The surface of an endpoint (request and response fields) read from small hand-made OpenAPI 3 / Swagger 2
documents: each test names the rule it checks, and its expected values are worked out in its comments."""

from __future__ import annotations

import copy

from wpbjax.episodes.importers.openapi_surface import (
    MAX_FIELD_DEPTH,
    MAX_FIELDS,
    Field,
    Surface,
    SurfaceStats,
    endpoint_surfaces,
    visible,
)


def _read(document: dict, load=None, stem: str = "api"):
    return endpoint_surfaces({stem: document}, load)


def _fields(surface: Surface) -> dict:
    return {(field.side, field.location, field.name): field for field in surface.fields}


def _openapi(paths: dict, schemas: dict | None = None, **top) -> dict:
    return {"openapi": "3.0.3", "paths": paths, "components": {"schemas": schemas or {}}, **top}


def _json_body(schema: dict, **extra) -> dict:
    return {"content": {"application/json": {"schema": schema}}, **extra}


def _ok(schema: dict) -> dict:
    return {"200": {"description": "ok", **_json_body(schema)}}


def test_request_parameters_of_every_location_with_type_enum_required():
    document = _openapi(
        {
            "/things/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "schema": {"type": "integer"}},
                    # overridden by the operation's own "limit"
                    {"name": "limit", "in": "query", "required": True, "schema": {"type": "string"}},
                ],
                "get": {
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "enum": [20, 10]}},
                        {"name": "X-Token", "in": "header", "required": True, "schema": {"type": "string"}},
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}, "deprecated": True},
                        {"name": "q", "in": "query", "description": "This parameter is deprecated."},
                    ]
                },
            }
        }
    )
    surfaces, stats = _read(document)
    assert list(surfaces) == [("GET", "/things/{}")]
    path, surface = surfaces[("GET", "/things/{}")]
    assert path == "/things/{id}"
    assert surface.fields == (
        Field("request", "cookie", "session", "string", False, (), True, False),
        Field("request", "header", "X-Token", "string", True, (), False, False),
        # a path parameter is named by its position and always required
        Field("request", "path", "{0}", "integer", True, (), False, False),
        # the operation's "limit" wins: integer, not required, enum sorted as strings
        Field("request", "query", "limit", "integer", False, ("10", "20"), False, False),
        # no schema: any type; the deprecation is only in the words
        Field("request", "query", "q", "any", False, (), False, True),
    )
    assert stats == SurfaceStats(0, 0, 0)


def test_request_body_fields_are_dotted_and_required_through_their_parents():
    schema = {
        "type": "object",
        "required": ["card"],
        "properties": {
            "card": {
                "type": "object",
                "required": ["number"],
                "properties": {"number": {"type": "string"}, "exp_month": {"type": "integer"}},
            },
            "note": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
        },
    }
    document = _openapi({"/pay": {"post": {"requestBody": _json_body(schema, required=True)}}})
    fields = _fields(_read(document)[0][("POST", "/pay")][1])
    required = {name: field.required for (_, _, name), field in fields.items()}
    # card: in the body's list; card.number: in card's list and card required; note.text: in note's list
    # but note is optional, so it is optional too
    assert required == {"card": True, "card.exp_month": False, "card.number": True, "note": False, "note.text": False}
    assert fields[("request", "body", "card")].type == "object"
    # a body that is not required makes nothing in it required
    optional = copy.deepcopy(document)
    optional["paths"]["/pay"]["post"]["requestBody"]["required"] = False
    assert not any(field.required for field in _read(optional)[0][("POST", "/pay")][1].fields)


def test_required_given_as_a_string_names_nothing():
    # read character by character, "ab" would make both "a" and "b" required
    schema = {"type": "object", "required": "ab", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    surfaces, _ = _read(_openapi({"/x": {"post": {"requestBody": _json_body(schema)}}}))
    assert [(field.name, field.required) for field in surfaces[("POST", "/x")][1].fields] == [
        ("a", False),
        ("b", False),
    ]


def test_wrong_json_types_are_read_as_empty():
    document = _openapi(
        {
            "/x": {
                "parameters": "not a list",
                "get": {
                    "parameters": [
                        {"name": "filter", "in": "query", "content": ["application/json"]},
                        {"name": "sort", "in": "query", "content": {"application/json": "not an object"}},
                    ],
                    "requestBody": {"content": []},
                    "responses": {"200": {"content": {"application/json": {"schema": "nope"}}}},
                },
            }
        }
    )
    fields = _read(document)[0][("GET", "/x")][1].fields
    assert [(field.name, field.type) for field in fields] == [("filter", "any"), ("sort", "any")]


def test_unresolvable_refs_and_nameless_parameters_are_skipped_and_counted():
    document = _openapi(
        {
            "/x": {
                "get": {
                    "parameters": [
                        {"$ref": "#/components/parameters/Missing"},
                        {"$ref": "other.yaml#/Limit"},  # no load: another file cannot be read
                        {"in": "query", "schema": {"type": "string"}},  # no name
                        {"name": "page", "in": 3},  # "in" not a string
                        {"name": "kept", "in": "query", "schema": {"$ref": "#/components/schemas/Gone"}},
                    ],
                    "responses": _ok({"$ref": "#/components/schemas/AlsoGone"}),
                }
            }
        }
    )
    surfaces, stats = _read(document)
    # no phantom "None" parameter; the parameter with a dangling schema stays, typed "any"
    assert [(field.name, field.type) for field in surfaces[("GET", "/x")][1].fields] == [("kept", "any")]
    # 4 refs that name nothing + 2 parameters without a string name / in
    assert stats.unresolved_refs == 6


def test_response_bodies_of_success_statuses_are_merged():
    ok = {
        "type": "object",
        "required": ["id", "amount", "status"],
        "properties": {
            "id": {"type": "string"},
            "amount": {"type": "integer"},
            "status": {"type": "string", "enum": ["a"]},
        },
    }
    created = {
        "type": "object",
        "required": ["id", "status", "extra"],
        "properties": {
            "id": {"type": "integer"},
            "status": {"type": "string", "enum": ["b"]},
            "extra": {"type": "string"},
        },
    }
    responses = {
        "200": {"content": {"application/json": {"schema": ok}}},
        "201": {"content": {"application/json": {"schema": created}}},
        "400": {"content": {"application/json": {"schema": {"properties": {"error": {"type": "string"}}}}}},
        "default": {"content": {"application/json": {"schema": {"properties": {"oops": {"type": "string"}}}}}},
    }
    fields = _fields(_read(_openapi({"/x": {"post": {"responses": responses}}}))[0][("POST", "/x")][1])
    assert fields == {
        # id: both bodies require it; its forms are united
        ("response", "body", "id"): Field("response", "body", "id", "integer|string", True, (), False, False),
        # amount / extra: in one body only
        ("response", "body", "amount"): Field("response", "body", "amount", "integer", False, (), False, False),
        ("response", "body", "extra"): Field("response", "body", "extra", "string", False, (), False, False),
        ("response", "body", "status"): Field("response", "body", "status", "string", True, ("a", "b"), False, False),
    }
    # "default" is read only where no 2xx is declared
    only_default = {"default": responses["default"], "404": responses["400"]}
    surfaces, _ = _read(_openapi({"/x": {"post": {"responses": only_default}}}))
    assert [field.name for field in surfaces[("POST", "/x")][1].fields] == ["oops"]


def test_nullable_forms_of_openapi_3_0_and_3_1_and_enums():
    properties = {
        "a": {"type": "string", "nullable": True},  # 3.0
        "b": {"type": ["integer", "null"]},  # 3.1
        "c": {"anyOf": [{"$ref": "#/components/schemas/Color"}, {"type": "null"}]},
        "d": {"enum": ["x", None]},
        "e": {"type": "string", "enum": [""]},  # an empty-string form
        "f": {"anyOf": [{"type": "string", "enum": ["on", "off"]}, {"type": "string", "enum": [""]}]},
        "g": {"type": "boolean"},
    }
    schemas = {"Color": {"type": "string", "enum": ["red", "green"]}}
    document = _openapi({"/x": {"get": {"responses": _ok({"properties": properties})}}}, schemas)
    fields = {field.name: (field.type, field.enum) for field in _read(document)[0][("GET", "/x")][1].fields}
    assert fields == {
        "a": ("null|string", ()),
        "b": ("integer|null", ()),
        # the null member is a form, not an allowed value of the enum
        "c": ("null|string", ("green", "red")),
        "d": ("null|string", ("null", "x")),  # no type: the forms of its values
        "e": ('""', ("",)),
        "f": ('""|string', ("", "off", "on")),
        "g": ("boolean", ()),
    }


def test_all_of_members_are_merged():
    schemas = {
        "Base": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
        "Pet": {
            "allOf": [
                {"$ref": "#/components/schemas/Base"},
                {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "tag": {}}},
            ]
        },
    }
    document = _openapi({"/pets": {"get": {"responses": _ok({"$ref": "#/components/schemas/Pet"})}}}, schemas)
    fields = _read(document)[0][("GET", "/pets")][1].fields
    assert [(field.name, field.type, field.required) for field in fields] == [
        ("id", "string", True),
        ("name", "string", True),
        ("tag", "any", False),
    ]


def test_one_of_alternatives_give_every_property_required_only_where_all_require_it():
    schemas = {
        "Card": {
            "type": "object",
            "required": ["brand", "last4"],
            "properties": {"brand": {"type": "string"}, "last4": {"type": "string"}},
        },
        "Bank": {
            "type": "object",
            "required": ["last4", "bank_name"],
            "properties": {"last4": {"type": "integer"}, "bank_name": {"type": "string"}},
        },
    }
    source = {
        "oneOf": [{"type": "string"}, {"$ref": "#/components/schemas/Card"}, {"$ref": "#/components/schemas/Bank"}]
    }
    body = {"type": "object", "required": ["source"], "properties": {"source": source}}
    document = _openapi({"/charges": {"get": {"responses": _ok(body)}}}, schemas)
    fields = _read(document)[0][("GET", "/charges")][1].fields
    assert [(field.name, field.type, field.required) for field in fields] == [
        ("source", "object|string", True),
        # brand / bank_name: in one alternative; last4: required by both object alternatives
        ("source.bank_name", "string", False),
        ("source.brand", "string", False),
        ("source.last4", "integer|string", True),
    ]


def test_recursive_schemas_are_cut_and_counted():
    schemas = {
        # a tree: a property whose schema is its parent's own is listed, not expanded
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "child": {"$ref": "#/components/schemas/Node"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            },
        },
        # a loop through $ref / anyOf / allOf / items with no property between
        "Loop": {"anyOf": [{"$ref": "#/components/schemas/Loop"}, {"type": "string"}]},
        "Merged": {"allOf": [{"$ref": "#/components/schemas/Merged"}, {"properties": {"x": {"type": "integer"}}}]},
        "Nested": {"type": "array", "items": {"$ref": "#/components/schemas/Nested"}},
        "A": {"$ref": "#/components/schemas/B"},
        "B": {"$ref": "#/components/schemas/A"},
    }

    def ref(name):
        return {"$ref": f"#/components/schemas/{name}"}

    body = {"properties": {name.lower(): ref(name) for name in ("Node", "Loop", "Merged", "Nested", "A")}}
    surfaces, stats = _read(_openapi({"/x": {"get": {"responses": _ok(body)}}}, schemas))
    fields = {field.name: field.type for field in surfaces[("GET", "/x")][1].fields}
    assert fields == {
        "a": "any",
        "loop": "string",
        "merged": "object",
        "merged.x": "integer",
        "nested": "array<array<array<array<any>>>>",
        "nested[]": "array<array<array<array<any>>>>",  # the same schema; "array<" nests MAX_TYPE_DEPTH deep
        "node": "object",
        "node.child": "object",
        "node.children": "array<object>",
        "node.name": "string",
    }
    # Node: child and children (2); Loop, Merged, A -> B -> A (3); Nested's items are itself (1)
    assert stats.cycles_cut == 6


def test_a_longer_loop_through_properties_ends_at_the_depth(monkeypatch):
    monkeypatch.setitem(MAX_FIELD_DEPTH, "response", 3)  # the walk, not the depth, is tested here
    schemas = {
        "A": {"properties": {"b": {"$ref": "#/components/schemas/B"}, "n": {"type": "integer"}}},
        "B": {"properties": {"a": {"$ref": "#/components/schemas/A"}}},
    }
    document = _openapi({"/x": {"get": {"responses": _ok({"$ref": "#/components/schemas/A"})}}}, schemas)
    surfaces, stats = _read(document)
    names = [field.name for field in surfaces[("GET", "/x")][1].fields]
    # three dotted segments at most; "b.a.b" has properties below it that are not listed
    assert names == ["b", "b.a", "b.a.b", "b.a.n", "n"]
    assert stats.depth_cut == 1 and stats.cycles_cut == 0


def test_depth_cap_does_not_count_array_items():
    deep = {"properties": {"d": {"properties": {"e": {"type": "string"}}}}}
    body = {
        "properties": {
            "a": {"properties": {"b": {"properties": {"c": deep}}}},
            "list": {"type": "array", "items": {"properties": {"x": {"properties": {"y": {"type": "integer"}}}}}},
        }
    }
    assert MAX_FIELD_DEPTH == {"request": 3, "response": 2}
    document = _openapi({"/x": {"post": {"requestBody": _json_body(body), "responses": _ok(body)}}})
    surfaces, stats = _read(document)
    fields = surfaces[("POST", "/x")][1].fields
    request = [field.name for field in fields if field.side == "request"]
    response = [field.name for field in fields if field.side == "response"]
    assert request == ["a", "a.b", "a.b.c", "list", "list[]", "list[].x", "list[].x.y"]
    # a response stops at the resource's properties and their members: a.b.c and list[].x.y are embedded
    assert response == ["a", "a.b", "list", "list[]", "list[].x"]
    # request: a.b.c's own properties (one subtree); response: a.b's and list[].x's
    assert stats.depth_cut == 3


def test_a_top_level_array_body_and_the_field_cap():
    item = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}
    many = {"properties": {f"p{index:03d}": {"type": "integer"} for index in range(MAX_FIELDS + 50)}}
    paths = {
        "/list": {"get": {"responses": _ok({"type": "array", "items": item})}},
        "/wide": {"get": {"responses": _ok(many)}},
    }
    surfaces, _ = _read(_openapi(paths))
    assert [(field.name, field.type, field.required) for field in surfaces[("GET", "/list")][1].fields] == [
        ("[]", "object", True),
        ("[].id", "string", True),
    ]
    names = [field.name for field in surfaces[("GET", "/wide")][1].fields]
    assert names == [f"p{index:03d}" for index in range(MAX_FIELDS)]


def test_refs_into_other_files_relative_to_the_referring_file(monkeypatch):
    monkeypatch.setitem(MAX_FIELD_DEPTH, "response", 3)  # the walk, not the depth, is tested here
    # a DigitalOcean-like layout: the entry file points into resources/, which points up into shared/
    entry = {
        "openapi": "3.0.0",
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/v2/droplets": {"get": {"$ref": "resources/droplets/droplets_list.yml"}}},
    }
    files = {
        "specification/resources/droplets/droplets_list.yml": {
            "parameters": [{"$ref": "../../shared/parameters.yml#/per_page"}],
            "responses": {"200": {"$ref": "responses/list.yml"}},
        },
        "specification/resources/droplets/responses/list.yml": {
            "content": {
                "application/json": {
                    "schema": {
                        "properties": {
                            "droplets": {"type": "array", "items": {"$ref": "../models/droplet.yml"}},
                            "meta": {"$ref": "../../../shared/meta.yml#/meta"},
                        }
                    }
                }
            }
        },
        "specification/resources/droplets/models/droplet.yml": {
            "type": "object",
            "required": ["id"],
            "properties": {"id": {"type": "integer"}, "region": {"$ref": "../../regions/models/region.yml"}},
        },
        "specification/resources/regions/models/region.yml": {"properties": {"slug": {"type": "string"}}},
        "specification/shared/parameters.yml": {
            "per_page": {"name": "per_page", "in": "query", "schema": {"type": "integer"}}
        },
        "specification/shared/meta.yml": {"meta": {"properties": {"total": {"type": "integer"}}}},
    }
    asked = []

    def load(path):
        asked.append(path)
        return files.get(path)

    surfaces, stats = endpoint_surfaces({"specification/DigitalOcean-public.v2": entry}, load)
    fields = [(field.side, field.name, field.type) for field in surfaces[("GET", "/v2/droplets")][1].fields]
    assert fields == [
        ("request", "per_page", "integer"),
        ("response", "droplets", "array<object>"),
        ("response", "droplets[]", "object"),
        ("response", "droplets[].id", "integer"),
        ("response", "droplets[].region", "object"),
        ("response", "droplets[].region.slug", "string"),
        ("response", "meta", "object"),
        ("response", "meta.total", "integer"),
    ]
    assert sorted(set(asked)) == sorted(files) and len(asked) == len(files)  # each file read once
    assert stats == SurfaceStats(0, 0, 0)


def test_base_path_host_and_path_parameter_names_change_no_key_and_no_surface():
    operation = {
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": _ok({"properties": {"id": {"type": "string"}}}),
    }
    before = _openapi({"/things/{id}": {"get": operation}}, servers=[{"url": "https://api.example.com/v2"}])
    renamed = copy.deepcopy(operation)
    renamed["parameters"][0]["name"] = "thing_id"
    # /v2 moved into the path, the host changed, a second server added, the path parameter renamed
    after = _openapi(
        {"/v2/things/{thing_id}/": {"get": renamed}},
        servers=[{"url": "https://api.example.org/"}, {"url": "https://sandbox.example.com/v9"}],
    )
    # a server url with variables at their defaults, and a relative one
    templated = _openapi(
        {"things/{id}": {"get": operation}},
        servers=[{"url": "https://{region}.example.com/{version}", "variables": {"version": {"default": "v2"}}}],
    )
    relative = _openapi({"/things/{id}": {"get": operation}}, servers=[{"url": "/v2/"}])
    reads = [_read(document)[0] for document in (before, after, templated, relative)]
    assert all(list(read) == [("GET", "/v2/things/{}")] for read in reads)
    assert len({read[("GET", "/v2/things/{}")][1] for read in reads}) == 1
    assert [read[("GET", "/v2/things/{}")][0] for read in reads] == [
        "/v2/things/{id}",
        "/v2/things/{thing_id}",
        "/v2/things/{id}",
        "/v2/things/{id}",
    ]


def test_operation_servers_first_and_one_key_for_two_templates():
    document = _openapi(
        {
            "/a/{x}": {"get": {}, "servers": [{"url": "/item"}]},
            "/a/{y}": {"get": {"parameters": [{"name": "q", "in": "query"}]}},
            "/b": {"get": {"servers": [{"url": "https://h/op"}]}, "servers": [{"url": "/item"}]},
        },
        servers=[{"url": "/doc"}],
    )
    surfaces, _ = _read(document)
    assert sorted(surfaces) == [("GET", "/doc/a/{}"), ("GET", "/item/a/{}"), ("GET", "/op/b")]
    # "/doc/a/{y}" alone normalises to /doc/a/{}; "/a/{x}" is under the path item's own server
    assert surfaces[("GET", "/doc/a/{}")][0] == "/doc/a/{y}"
    clash = _openapi({"/a/{y}": {"get": {"parameters": [{"name": "q", "in": "query"}]}}, "/a/{x}": {"get": {}}})
    surfaces, _ = _read(clash)
    # the first of the two templates in sorted order ("/a/{x}") is kept
    assert surfaces == {("GET", "/a/{}"): ("/a/{x}", Surface(False, False, ()))}


def test_path_parameters_are_named_by_position_and_undeclared_ones_dropped():
    parameters = [
        {"name": "invoice", "in": "path", "schema": {"type": "string"}},
        {"name": "customer", "in": "path", "schema": {"type": "integer"}},
        {"name": "gone", "in": "path", "schema": {"type": "string"}},
    ]
    surfaces, _ = _read(_openapi({"/customers/{customer}/invoices/{invoice}": {"delete": {"parameters": parameters}}}))
    fields = surfaces[("DELETE", "/customers/{}/invoices/{}")][1].fields
    assert [(field.name, field.type) for field in fields] == [("{0}", "integer"), ("{1}", "string")]


def test_swagger_2_base_path_body_and_form_data():
    document = {
        "swagger": "2.0",
        "host": "api.example.com",
        "basePath": "/v1",
        "paths": {
            "/pets": {
                "post": {
                    "parameters": [
                        {"name": "pet", "in": "body", "required": True, "schema": {"$ref": "#/definitions/Pet"}},
                        {"name": "dry_run", "in": "query", "type": "boolean"},
                    ],
                    "responses": {"201": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}},
                },
                "put": {
                    "parameters": [
                        {"name": "photo", "in": "formData", "type": "file", "required": True},
                        {"name": "tags", "in": "formData", "type": "array", "items": {"type": "string"}},
                        {"name": "size", "in": "formData", "type": "string", "enum": ["s", "m"], "x-nullable": True},
                    ]
                },
            }
        },
        "definitions": {
            "Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "age": {}}}
        },
    }
    surfaces, _ = _read(document)
    assert sorted(surfaces) == [("POST", "/v1/pets"), ("PUT", "/v1/pets")]
    post = [(f.side, f.location, f.name, f.type, f.required) for f in surfaces[("POST", "/v1/pets")][1].fields]
    assert post == [
        ("request", "body", "age", "any", False),
        ("request", "body", "name", "string", True),
        ("request", "query", "dry_run", "boolean", False),
        ("response", "body", "age", "any", False),
        ("response", "body", "name", "string", True),
    ]
    put = surfaces[("PUT", "/v1/pets")][1].fields
    assert put == (
        Field("request", "body", "photo", "file", True, (), False, False),
        Field("request", "body", "size", "null|string", False, ("m", "s"), False, False),
        Field("request", "body", "tags", "array<string>", False, (), False, False),
    )


def test_deprecation_flags_words_and_visible():
    document = _openapi(
        {
            "/x": {
                "get": {
                    "summary": "This endpoint is deprecated.",
                    "responses": _ok(
                        {
                            "properties": {
                                "old": {"type": "string", "description": "Deprecated: use new."},
                                "flagged": {"type": "string", "deprecated": True},
                                "new": {"type": "string", "description": "Replaces the deprecated old."},
                            }
                        }
                    ),
                }
            }
        }
    )
    surfaces, _ = _read(document)
    surface = surfaces[("GET", "/x")][1]
    assert (surface.deprecated_flag, surface.deprecated_text, surface.deprecated) == (False, True, True)
    flags = {field.name: (field.deprecated_flag, field.deprecated_text) for field in surface.fields}
    assert flags == {"flagged": (True, False), "new": (False, False), "old": (False, True)}
    folded, text_only = visible({key: surface for key, (_, surface) in surfaces.items()})
    key = ("GET", "/x")
    assert text_only == {(key, None), (key, ("response", "body", "old"))}
    assert folded[key].deprecated_flag and not folded[key].deprecated_text
    assert [(field.name, field.deprecated_flag, field.deprecated_text) for field in folded[key].fields] == [
        ("flagged", True, False),
        ("new", False, False),
        ("old", True, False),
    ]


def _paths_in(node, at=()):
    """Every (path of keys / indexes) to a value inside ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield at + (key,)
        yield from _paths_in(value, at + (key,))


def test_any_value_of_the_wrong_json_type_is_read_without_an_exception():
    # every value of a document that uses each feature, replaced in turn by each of these
    document = _openapi(
        {
            "/a/{id}": {
                "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
                "post": {
                    "servers": [{"url": "/v1", "variables": {"x": {"default": "y"}}}],
                    "parameters": [
                        {"$ref": "#/components/parameters/Limit"},
                        {"name": "f", "in": "query", "content": {"application/json": {"schema": {"type": "object"}}}},
                    ],
                    "requestBody": _json_body(
                        {
                            "allOf": [{"$ref": "#/components/schemas/Node"}],
                            "required": ["n"],
                            "properties": {"n": {"oneOf": [{"type": "null"}, {"enum": ["a", None]}]}},
                        }
                    ),
                    "responses": {
                        "200": _json_body({"type": "array", "items": {"$ref": "#/components/schemas/Node"}}),
                        "201": {"$ref": "#/components/responses/Made"},
                    },
                },
            }
        },
        {
            "Node": {
                "type": "object",
                "required": ["kids"],
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}},
                "anyOf": [{"$ref": "#/components/schemas/Node"}, {"type": ["string", "null"], "nullable": True}],
            }
        },
    )
    document["components"]["parameters"] = {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}
    document["components"]["responses"] = {"Made": _json_body({"properties": {"id": {"type": "string"}}})}
    bad_values = [None, 1, "s", [], {}, [1], {"$ref": "#/nope"}, {"$ref": 5}, {"type": ["array"], "items": []}]
    runs = 0
    for path in list(_paths_in(document)):
        for bad in bad_values:
            changed = copy.deepcopy(document)
            parent = changed
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = bad
            surfaces, stats = _read(changed)
            assert all(isinstance(surface, Surface) for _, surface in surfaces.values())
            visible({key: surface for key, (_, surface) in surfaces.items()})
            runs += 1
    assert runs > 500


def test_an_endpoints_fields_do_not_depend_on_the_other_endpoints(monkeypatch):
    monkeypatch.setitem(MAX_FIELD_DEPTH, "response", 3)  # the walk, not the depth, is tested here
    # schemas reached through loops: whichever endpoint is read first must not shape another's fields
    schemas = {
        "A": {"anyOf": [{"$ref": "#/components/schemas/B"}, {"type": "string"}, {"properties": {"a": {}}}]},
        "B": {"anyOf": [{"$ref": "#/components/schemas/A"}, {"type": "integer"}, {"properties": {"b": {}}}]},
        "Card": {
            "properties": {
                "customer": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Customer"}]},
                "last4": {"type": "string"},
            }
        },
        "Customer": {"properties": {"card": {"$ref": "#/components/schemas/Card"}, "email": {"type": "string"}}},
    }

    def body(**refs):
        return _ok({"properties": {name: {"$ref": f"#/components/schemas/{ref}"} for name, ref in refs.items()}})

    paths = {
        "/a": {"get": {"responses": body(x="A", c="Card")}},
        "/b": {"get": {"responses": body(y="B", k="Customer")}},
    }
    both = _read(_openapi(paths, schemas))[0]
    for path in paths:
        alone = _read(_openapi({path: paths[path]}, schemas))[0]
        assert alone == {key: value for key, value in both.items() if key[1] == path}
    names = [field.name for field in both[("GET", "/b")][1].fields]
    assert names[:4] == ["k", "k.card", "k.card.customer", "k.card.last4"]
    assert "y.a" in names and "y.b" in names


def test_equal_looking_enums_of_other_types_stay_apart():
    # True == 1 == 1.0 in Python; their allowed values are written apart
    properties = {"a": {"enum": [True]}, "b": {"enum": [1]}, "c": {"enum": [1.0]}, "d": {"const": False}}
    surfaces, _ = _read(_openapi({"/x": {"get": {"responses": _ok({"properties": properties})}}}))
    fields = {field.name: (field.type, field.enum) for field in surfaces[("GET", "/x")][1].fields}
    assert fields == {
        "a": ("boolean", ("True",)),
        "b": ("integer", ("1",)),
        "c": ("number", ("1.0",)),
        "d": ("boolean", ("False",)),
    }


def test_very_deep_nesting_is_cut_without_a_recursion_error(monkeypatch):
    monkeypatch.setitem(MAX_FIELD_DEPTH, "response", 3)  # the walk, not the depth, is tested here
    deep_all, deep_items, deep_props, deep_refs = {"type": "string"}, {"type": "string"}, {"type": "string"}, {}
    for _ in range(600):
        deep_all = {"allOf": [deep_all]}
        deep_items = {"type": "array", "items": deep_items}
        deep_props = {"properties": {"p": deep_props}}
    # a chain of 600 refs, each naming the next schema
    schemas = {f"S{index}": {"$ref": f"#/components/schemas/S{index + 1}"} for index in range(600)}
    schemas["S600"] = {"type": "integer"}
    deep_refs = {"$ref": "#/components/schemas/S0"}
    body = {"properties": {"all": deep_all, "items": deep_items, "props": deep_props, "refs": deep_refs}}
    surfaces, stats = _read(_openapi({"/x": {"get": {"responses": _ok(body)}}}, schemas))
    fields = {field.name: field.type for field in surfaces[("GET", "/x")][1].fields}
    # past MAX_NESTING (64) levels of composition / arrays the walk stops: any type, no items listed deeper
    assert fields["all"] == "any" and fields["refs"] == "any"
    assert fields["items"] == "array<array<array<array<any>>>>"
    assert [name for name in fields if name.startswith("items[]")][-1] == "items" + "[]" * 63
    assert [name for name in fields if name.startswith("props")] == ["props", "props.p", "props.p.p"]
    assert stats.depth_cut >= 3
