"""The request surface of every endpoint of an OpenAPI 3 or Swagger 2 document: what a client sends.

An endpoint is (server host, METHOD, path); its surface is whether it is deprecated and its parameters,
each ``Param(name, location, type, required, deprecated_flag, deprecated_text)``:

* parameters of the path item and of the operation (the operation's win on the same name and location),
  ``$ref`` resolved (within the document, or into another file of the same version by relative path);
* the request body's top-level properties as parameters in ``body`` (OpenAPI 3: the first of
  form-urlencoded, JSON, multipart, else any media type; Swagger 2: an ``in: body`` schema's properties,
  and ``formData`` parameters), required from the schema's ``required`` list;
* ``type``: the schema's allowed forms, ``|``-joined and sorted (``anyOf``/``oneOf`` members, a list
  ``type``, an array as ``array<items>``, an object as ``object``, ``""`` as an empty-string form), so a
  widening is a superset of forms; nested properties are not part of the surface;
* deprecation: the ``deprecated`` flag, and separately the words of :data:`DEPRECATION_TEXT` in the
  operation's summary / description or the parameter's description.

The host: the operation's, path item's or document's first server (OpenAPI 3), or ``host`` (Swagger 2);
"" when none is declared.
"""

from __future__ import annotations

import posixpath
import re
from typing import NamedTuple
from urllib.parse import unquote, urlparse

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
BODY_MEDIA = ("application/x-www-form-urlencoded", "application/json", "multipart/form-data")
# "This endpoint is deprecated", "Deprecated: use ...", "<strong>Deprecated</strong>", "has been deprecated",
# "[Deprecated]" — but not "replaces the deprecated `foo`" (a word about another field)
DEPRECATION_TEXT = re.compile(
    r"(?:\b(?:is|are|been|now)\s+deprecated\b|(?:^|[>\[(.]\s*|\*\*)deprecated\b)", re.IGNORECASE
)
MAX_TYPE_DEPTH = 3


class Param(NamedTuple):
    name: str
    location: str  # path | query | header | cookie | body
    type: str  # "|"-joined sorted forms
    required: bool
    deprecated_flag: bool
    deprecated_text: bool

    @property
    def deprecated(self) -> bool:
        return self.deprecated_flag or self.deprecated_text


class Surface(NamedTuple):
    deprecated_flag: bool
    deprecated_text: bool
    params: tuple  # Param, sorted by (location, name)

    @property
    def deprecated(self) -> bool:
        return self.deprecated_flag or self.deprecated_text


def deprecated_in_text(*texts) -> bool:
    """Whether any of ``texts`` says the thing it describes is deprecated (DEPRECATION_TEXT)."""
    # every match contains the word (its letters have no non-ASCII case twins), and a substring test is far
    # cheaper than the pattern's scan: most descriptions never say it (a sixth of the importer's CPU before)
    return any(
        isinstance(text, str) and "deprecated" in text.lower() and DEPRECATION_TEXT.search(text) is not None
        for text in texts
    )


class Resolver:
    """``$ref`` lookup within one version: ``documents`` {stem path: dict}; refs relative to ``current``."""

    def __init__(self, documents: dict, current: str):
        self.documents, self.current = documents, current

    def resolve(self, node, seen=()):
        """(target, resolver of the target's file); follows chains of refs, stops at a cycle."""
        resolver = self
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                return {}, resolver
            seen = seen + (ref,)
            node, resolver = resolver._lookup(ref)
        return node, resolver

    def _lookup(self, ref: str):
        file_part, _, pointer = ref.partition("#")
        current = self.current
        if file_part:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(self.current), file_part))
            stem = re.sub(r"\.(json|ya?ml)$", "", target)
            if stem not in self.documents:
                return {}, self
            current = stem
        node = self.documents[current]
        for token in pointer.split("/")[1:] if pointer else []:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return {}, self
        return node, Resolver(self.documents, current)


def schema_forms(schema, resolver: Resolver, depth: int = 0) -> set:
    """The set of forms a schema allows (module note)."""
    schema, resolver = resolver.resolve(schema)
    if not isinstance(schema, dict):
        return {"any"}
    forms: set = set()
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            for member in schema[key]:
                forms |= schema_forms(member, resolver, depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: set = set()
        for member in schema["allOf"]:
            merged |= schema_forms(member, resolver, depth + 1) - {"any"}
        forms |= merged or {"any"}
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if isinstance(kinds, str) else []
    for kind in kinds:
        if kind == "array":
            items = schema.get("items", {})
            inner = "|".join(sorted(schema_forms(items, resolver, depth + 1))) if depth < MAX_TYPE_DEPTH else "any"
            forms.add(f"array<{inner}>")
        elif kind == "string" and schema.get("enum") == [""]:
            forms.add('""')
        else:
            forms.add(kind)
    if not forms:
        forms.add("object" if "properties" in schema or "additionalProperties" in schema else "any")
    return forms


def type_of(schema, resolver: Resolver) -> str:
    return "|".join(sorted(schema_forms(schema, resolver)))


def _host(url) -> str:
    return urlparse(url).netloc if isinstance(url, str) and "//" in url else ""


def _server_host(*levels) -> str | None:
    for level in levels:
        servers = level.get("servers") if isinstance(level, dict) else None
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            return _host(servers[0].get("url"))
    return None


def _swagger2_param(param: dict, resolver: Resolver) -> list:
    """Params of one Swagger 2 parameter: a body schema's properties, or the parameter itself."""
    location = param.get("in")
    if location == "body":
        return _body_params(param.get("schema", {}), resolver, bool(param.get("required")))
    schema = {key: param[key] for key in ("type", "items", "enum") if key in param}
    return [
        Param(
            str(param.get("name")),
            "body" if location == "formData" else str(location),
            type_of(schema, resolver),
            bool(param.get("required")) or location == "path",
            bool(param.get("deprecated")),
            deprecated_in_text(param.get("description")),
        )
    ]


def _openapi3_param(param: dict, resolver: Resolver) -> list:
    schema = param.get("schema")
    if schema is None and isinstance(param.get("content"), dict) and param["content"]:
        schema = next(iter(param["content"].values())).get("schema", {})
    target, _ = resolver.resolve(schema) if schema is not None else ({}, resolver)
    return [
        Param(
            str(param.get("name")),
            str(param.get("in")),
            type_of(schema or {}, resolver),
            bool(param.get("required")) or param.get("in") == "path",
            bool(param.get("deprecated")),
            deprecated_in_text(
                param.get("description"), target.get("description") if isinstance(target, dict) else None
            ),
        )
    ]


def _properties(schema, resolver: Resolver) -> tuple[dict, set, Resolver]:
    """(properties, required names, resolver of the properties' file), allOf members merged."""
    schema, resolver = resolver.resolve(schema)
    if not isinstance(schema, dict):
        return {}, set(), resolver
    properties = dict(schema.get("properties") or {}) if isinstance(schema.get("properties"), dict) else {}
    required = {name for name in schema.get("required") or [] if isinstance(name, str)}
    for member in schema.get("allOf") or []:
        more, more_required, _ = _properties(member, resolver)
        properties.update(more)
        required |= more_required
    return properties, required, resolver


def _body_params(schema, resolver: Resolver, body_required: bool) -> list:
    properties, required, resolver = _properties(schema, resolver)
    params = []
    for name, prop in properties.items():
        target, _ = resolver.resolve(prop)
        target = target if isinstance(target, dict) else {}
        params.append(
            Param(
                str(name),
                "body",
                type_of(prop, resolver),
                body_required and name in required,
                bool(target.get("deprecated")),
                deprecated_in_text(target.get("description")),
            )
        )
    return params


def _request_body(body, resolver: Resolver) -> list:
    body, resolver = resolver.resolve(body)
    if not isinstance(body, dict) or not isinstance(body.get("content"), dict) or not body["content"]:
        return []
    content = body["content"]
    media = next((name for name in BODY_MEDIA if name in content), next(iter(content)))
    entry = content[media] if isinstance(content[media], dict) else {}
    # an OpenAPI 3 body is required only if requestBody.required; Stripe's form bodies leave it out and
    # mark required properties in the schema, so absent means "as the schema says"
    return _body_params(entry.get("schema", {}), resolver, body.get("required", True) is not False)


def endpoint_surfaces(documents: dict) -> dict:
    """{(host, METHOD, path): Surface} of one version; ``documents``: {stem: parsed document}."""
    surfaces: dict = {}
    for stem, document in sorted(documents.items()):
        resolver = Resolver(documents, stem)
        swagger2 = "swagger" in document
        doc_host = document.get("host", "") if swagger2 else _server_host(document)
        paths = document.get("paths") if isinstance(document.get("paths"), dict) else {}
        for path, item in paths.items():
            item, item_resolver = resolver.resolve(item)
            if not isinstance(item, dict):
                continue
            for method in METHODS:
                operation = item.get(method)
                if not isinstance(operation, dict):
                    continue
                host = doc_host if swagger2 else _server_host(operation, item, document)
                surfaces[(str(host or ""), method.upper(), str(path))] = _surface(
                    operation, item, item_resolver, swagger2
                )
    return surfaces


def _surface(operation: dict, item: dict, resolver: Resolver, swagger2: bool) -> Surface:
    to_params = _swagger2_param if swagger2 else _openapi3_param
    by_key: dict = {}
    for level in (item.get("parameters") or [], operation.get("parameters") or []):
        for param in level if isinstance(level, list) else []:
            param, param_resolver = resolver.resolve(param)
            if isinstance(param, dict):
                for entry in to_params(param, param_resolver):
                    by_key[(entry.location, entry.name)] = entry
    if not swagger2 and "requestBody" in operation:
        for entry in _request_body(operation["requestBody"], resolver):
            by_key[(entry.location, entry.name)] = entry
    return Surface(
        bool(operation.get("deprecated")),
        deprecated_in_text(operation.get("summary"), operation.get("description")),
        tuple(by_key[key] for key in sorted(by_key)),
    )


def visible(surfaces: dict) -> tuple[dict, set]:
    """(surfaces with each deprecation folded into its flag, {(endpoint, None or (location, name))} whose
    deprecation only the words show): what a history line records, and what the counts need."""
    folded, text_only = {}, set()
    for key, surface in surfaces.items():
        if surface.deprecated_text and not surface.deprecated_flag:
            text_only.add((key, None))
        params = []
        for param in surface.params:
            if param.deprecated_text and not param.deprecated_flag:
                text_only.add((key, (param.location, param.name)))
            params.append(param._replace(deprecated_flag=param.deprecated, deprecated_text=False))
        folded[key] = Surface(surface.deprecated, False, tuple(params))
    return folded, text_only
