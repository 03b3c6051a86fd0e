"""What a client depends on at every endpoint of an OpenAPI 3 or Swagger 2 document: what it sends (the
request) and what it reads back (the success responses).

    surfaces, stats = endpoint_surfaces({"openapi/spec3": document}, load)
    surfaces[("GET", "/v1/charges/{}")] == ("/v1/charges/{charge}", Surface(...))

An endpoint's key is ``(METHOD, normalised path)``: the base path (OpenAPI 3: the path part of the first
server url of the operation, path item or document, server variables at their defaults, the host ignored;
Swagger 2: ``basePath``) joined with the path template, duplicate and trailing slashes dropped, and every
``{param}`` written ``{}``. So moving ``/v2`` between the server url and the paths, adding a server, changing
the host or renaming a path parameter changes no key. Two templates with one key: the first in sorted order.

Its :class:`Surface` is the operation's deprecation and its :class:`Field` s, sorted by (side, location, name):

* request parameters of the path item and of the operation (the operation's win on the same location and
  name), a path parameter named by its position in the template (``{0}``, ``{1}``), so a rename changes no
  field (one declared but absent from the template is dropped);
* the request body (OpenAPI 3: the first of form-urlencoded, JSON, multipart, else any media type;
  Swagger 2: an ``in: body`` schema, and ``formData`` parameters) and the success response bodies (every
  ``2xx``, ``default`` only where no ``2xx`` is declared; JSON preferred; several bodies merged as
  alternatives: forms and enums united, a field required only where every body requires it), as dotted
  fields: ``card``, ``card.exp_month``; an array's items add ``[]``: ``data``, ``data[]``, ``data[].id``; a
  top-level array body: ``[]``, ``[].id``;
* ``type``: the allowed forms, ``|``-joined and sorted (``anyOf``/``oneOf`` members, a list ``type``, an array
  as ``array<items>``, ``object``, ``""`` as an empty-string form, ``null`` when nullable: ``nullable: true``,
  a ``"null"`` type, a null member or enum), so a widening is a superset of forms; ``enum``: the allowed
  values as sorted strings (None as ``null``), () when unconstrained;
* ``required``: a parameter's ``required: true`` (a path parameter always); a body property's name in its
  object's ``required`` list (a list; anything else names nothing) and its parent required (the request body
  unless ``requestBody.required`` is false);
* composition: ``allOf`` members merged; ``anyOf``/``oneOf`` alternatives united (a property is required
  only where every alternative that has properties requires it); ``$ref`` resolved within the document or
  into another file relative to the referring one, through ``load``;
* deprecation: the ``deprecated`` flag, and separately the words of :data:`DEPRECATION_TEXT` in the
  operation's summary / description or the field's description.

Size: the surface is the observation a policy stores, so it is kept to a readable size: body fields stop at
:data:`MAX_FIELD_DEPTH` dotted segments (``[]`` is not one; 3 in a request, 2 in a response: the
reason is at the constant) and at :data:`MAX_FIELDS` body fields per side
in name order (parameters are never cut, so a new body field cannot push one out). Where the walk stops is
counted in :class:`SurfaceStats`: ``depth_cut`` (an object whose properties lie past the depth, a nesting
past :data:`MAX_NESTING`), ``cycles_cut`` (a schema that refers back to itself: through ``$ref`` /
``allOf`` / ``anyOf`` / ``items`` with no property between, or a property whose schema is its own parent's,
as a tree's ``children``: listed, not expanded; a longer loop through properties ends at the depth),
``unresolved_refs`` (a ``$ref`` that names nothing, counted once per referring file and ref, and a parameter
without a string ``name`` and ``in``, skipped). Each counts once per schema and version however many endpoints
reuse it (a subtree past the MAX_FIELDS cap is not walked, so its cuts are not counted).

Speed: the fields below a schema are worked out once per version and depth and reused, prefixed, by every
endpoint and property that refers to it. The cuts above depend on the schema alone, never on the path by
which an endpoint reached it, so one endpoint's fields do not change when another endpoint changes.
"""

from __future__ import annotations

import gc
import heapq
import posixpath
import re
from itertools import chain, islice
from operator import itemgetter
from typing import NamedTuple
from urllib.parse import unquote, urlparse

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
BODY_MEDIA = ("application/x-www-form-urlencoded", "application/json", "multipart/form-data")
# "This endpoint is deprecated", "Deprecated: use ...", "<strong>Deprecated</strong>", "has been deprecated",
# "[Deprecated]" — but not "replaces the deprecated `foo`" (a word about another field)
DEPRECATION_TEXT = re.compile(
    r"(?:\b(?:is|are|been|now)\s+deprecated\b|(?:^|[>\[(.]\s*|\*\*)deprecated\b)", re.IGNORECASE
)
# dotted segments of a body field ("a.b.c"), per side. A response stops at the resource's own properties and
# their direct members: deeper levels are embedded resources (a charge's customer's address), whose contract is
# their own endpoint's; read at every endpoint that embeds them, one schema change would be counted once per
# embedding endpoint (a shared object reaches dozens), and the observation a policy stores would carry every
# embedded resource whole. A request body is the client's own composition, read a level deeper.
MAX_FIELD_DEPTH = {"request": 3, "response": 2}
MAX_FIELDS = 400  # body fields of one endpoint side, in name order
MAX_TYPE_DEPTH = 3  # nesting of "array<...>" in a type
MAX_NESTING = 64  # schema composition / array nesting followed before the walk stops
_PATH_PARAM = re.compile(r"\{([^{}/]*)\}")
_NAME = itemgetter(2)  # a Field's name
_SUCCESS = re.compile(r"2(?:\d\d|XX|xx)")


class Field(NamedTuple):
    side: str  # "request" | "response"
    location: str  # request: path | query | header | cookie | body; response: body
    name: str  # a parameter's name, "{0}" for the first path parameter, or a dotted body path "a.b", "a[].b"
    type: str  # "|"-joined sorted forms
    required: bool
    enum: tuple  # sorted allowed values as strings (None as "null"); () when unconstrained
    deprecated_flag: bool
    deprecated_text: bool

    @property
    def deprecated(self) -> bool:
        return self.deprecated_flag or self.deprecated_text


class Surface(NamedTuple):
    deprecated_flag: bool
    deprecated_text: bool
    fields: tuple  # Field, sorted by (side, location, name)

    @property
    def deprecated(self) -> bool:
        return self.deprecated_flag or self.deprecated_text


class SurfaceStats(NamedTuple):
    cycles_cut: int
    unresolved_refs: int
    depth_cut: int


def deprecated_in_text(*texts) -> bool:
    """Whether any of ``texts`` says the thing it describes is deprecated (DEPRECATION_TEXT)."""
    # every match contains the word (its letters have no non-ASCII case twins), and a substring test is far
    # cheaper than the pattern's scan: most descriptions never say it
    return any(
        isinstance(text, str) and "deprecated" in text.lower() and DEPRECATION_TEXT.search(text) is not None
        for text in texts
    )


class _Flat:
    """One schema with its composition folded in: what its fields and its type are made of.

    ``forms``: {form: None, or ("array", id) -> item members}; ``props``: {name: a schema node of
    ``props_file`` (a schema's own "properties", not copied), or (mode, members)}, mode "all" (allOf-merged)
    or "any" (alternatives), members ((schema node, file), ...); ``items``: members of the array items;
    ``objects``: ids of the nodes that declare properties (a property whose schema has all of its parent's is
    the parent again); ``shape``: equal for schemas with the same fields below them."""

    __slots__ = ("forms", "enum", "props", "required", "items", "objects", "deprecated_flag", "deprecated_text")
    __slots__ += ("shape", "props_file")

    def __init__(self, forms, enum, props, required, items, objects, flag, text, shape, props_file=""):
        self.forms, self.enum, self.props, self.required, self.items = forms, enum, props, required, items
        self.objects, self.deprecated_flag, self.deprecated_text = objects, flag, text
        self.shape, self.props_file = shape, props_file

    @property
    def null_only(self) -> bool:
        return list(self.forms) == ["null"]


_NOTHING = _Flat({}, None, {}, frozenset(), (), frozenset(), False, False, "nothing")
_INF = 1 << 30
_NONE: frozenset = frozenset()
_JSON_FORMS = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}
_JSON_FORMS.update({list: "array<any>", dict: "object"})
_FORMATTED = frozenset({"string", "integer", "number"})  # the types whose ``format`` says what a value is
_FORMAT_CHARS = re.compile(r"[^0-9A-Za-z._-]+")


def _format_suffix(format_) -> str:
    """``"(date-time)"`` for a schema's ``format``, "" for none: a format is part of a value's type (a
    ``date`` and a ``date-time`` string parse differently), as oasdiff's type checks read it. Characters
    that would clash with the type syntax (``|<>()``) become ``_``."""
    if not isinstance(format_, str) or not format_.strip():
        return ""
    return "(" + _FORMAT_CHARS.sub("_", format_.strip()) + ")"


_NOT_LEAF = frozenset({"$ref", "allOf", "anyOf", "oneOf", "properties", "items", "required"})


def _enum_of(values) -> frozenset:
    return frozenset("null" if value is None else str(value) for value in values)


class _Reader:
    """The schemas of one version: refs resolved and every folded schema, type and field list memoised."""

    def __init__(self, documents: dict, load):
        self.documents, self.load = documents, load
        self.loaded: dict = {}
        self.files: dict = {}
        self.refs: dict = {}
        self.unresolved: set = set()
        self.cycles = self.depth_cut = 0
        self.alive: list = []  # objects whose id() keys a memo (an id is unique only while its object lives)
        self.flats: dict = {}
        self.shapes: dict = {}
        self.leaves: dict = {}
        self.wrappers: dict = {}
        self.children: dict = {}
        self.flat_stack: dict = {}
        self.combined: dict = {}
        self.infos: dict = {}
        self.forms_memo: dict = {}
        self.below_memo: dict = {}
        self.below_stack: dict = {}
        self.body_memo: dict = {}

    # --- $ref --------------------------------------------------------------------------------------------

    def resolve(self, ref: str, file: str):
        """(node, its file) that ``ref`` names from ``file``, or None (counted)."""
        key = (file, ref)
        if key in self.refs:
            return self.refs[key]
        found = self._lookup(ref, file)
        if found is None:
            self.unresolved.add(key)
        self.refs[key] = found
        return found

    def _lookup(self, ref: str, file: str):
        file_part, _, pointer = ref.partition("#")
        if file_part:
            found = self._file(posixpath.dirname(file), file_part)
            if found is None:
                return None
            file, node = found
        else:
            node = self._file_node(file)
        if node is None or (pointer and not pointer.startswith("/")):
            return None
        for token in pointer.split("/")[1:]:
            if "~" in token or "%" in token:
                token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node, file

    def _file(self, folder: str, file_part: str):
        """(file key, parsed document) that ``file_part`` names from ``folder``, or None: an entry file by its
        stem, another through ``load`` (once)."""
        key = (folder, file_part)
        if key in self.files:
            return self.files[key]
        found = None
        if "://" not in file_part:
            target = posixpath.normpath(posixpath.join(folder, unquote(file_part))).lstrip("/")
            stem = re.sub(r"\.(json|ya?ml)$", "", target)
            if stem in self.documents or target in self.documents:
                name = stem if stem in self.documents else target
                found = name, self.documents[name]
            else:
                if target not in self.loaded:
                    self.loaded[target] = self.load(target) if self.load is not None else None
                found = target, self.loaded[target]
            if found[1] is None:
                found = None
        self.files[key] = found
        return found

    def _file_node(self, file: str):
        """The parsed document of a file key (an entry's stem, or a loaded path)."""
        return self.documents[file] if file in self.documents else self.loaded.get(file)

    def follow(self, node, file: str):
        """(node, file) with a chain of ``$ref`` followed (a parameter, a body, a response), or None."""
        seen = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            if (file, node["$ref"]) in seen:
                self.cycles += 1
                return None
            seen.add((file, node["$ref"]))
            found = self.resolve(node["$ref"], file)
            if found is None:
                return None
            node, file = found
        return node, file

    # --- folding one schema ----------------------------------------------------------------------------

    def flat(self, node, file: str) -> _Flat:
        found = self.flats.get(id(node))
        return found if found is not None else self._flat(node, file)[0]

    def _flat(self, node, file: str):
        """(_Flat, lowest stack index a cycle cut reached): memoised unless a cut reached an outer schema."""
        if not isinstance(node, dict):
            return _NOTHING, _INF
        key = id(node)
        found = self.flats.get(key)
        if found is not None:
            return found, _INF
        if key in self.flat_stack:
            self.cycles += 1
            return _NOTHING, self.flat_stack[key]
        if node.keys().isdisjoint(_NOT_LEAF):
            flat = self.flats[key] = self._leaf(node, file)
            return flat, _INF
        if len(self.flat_stack) >= MAX_NESTING:
            self.depth_cut += 1
            return _NOTHING, _INF
        index = self.flat_stack[key] = len(self.flat_stack)
        try:
            flat, low = self._fold(node, file)
        finally:
            del self.flat_stack[key]
        self.alive.append(flat)
        if low >= index:
            self.flats[key] = flat
            low = _INF
        elif flat is not _NOTHING:  # cut short by a loop through an outer schema: its fields shared with no one
            flat.shape = ("partial", id(flat))
        return flat, low

    def _leaf(self, node: dict, file: str) -> _Flat:
        """A schema with nothing below it: one shared _Flat per distinct set of facts (most properties of a
        large spec are a handful of kinds: a string, a nullable integer...), so their types are worked out
        once."""
        kinds = node.get("type")
        enum = node.get("enum")
        description = node.get("description")
        signature = (
            tuple(kinds) if isinstance(kinds, list) else kinds,
            # with the values' types: True == 1 as a key, but its enum string is "True"
            (tuple(enum), tuple(map(type, enum))) if isinstance(enum, list) else None,
            (node["const"], type(node["const"])) if "const" in node else None,
            node.get("nullable") is True or node.get("x-nullable") is True,
            isinstance(node.get("additionalProperties"), dict | bool),
            node.get("deprecated") is True,
            description is not None and deprecated_in_text(description),
            node.get("format"),
        )
        try:
            found = self.leaves.get(signature)
        except TypeError:  # an unhashable "type" or value
            return self._fold(node, file)[0]
        if found is None:
            found = self.leaves[signature] = self._fold(node, file)[0]
            self.alive.append(found)
        return found

    def _fold(self, node: dict, file: str):
        if len(node) == 1 and isinstance(node.get("$ref"), str):  # a bare $ref: its target's fold
            found = self.resolve(node["$ref"], file)
            return self._flat(*found) if found is not None else (_NOTHING, _INF)
        forms: dict = {}
        kinds = node.get("type")
        kinds = kinds if isinstance(kinds, list) else (kinds,) if isinstance(kinds, str) else ()
        raw_enum = node.get("enum")
        raw_enum = raw_enum if isinstance(raw_enum, list) else [node["const"]] if "const" in node else None
        items_node = node.get("items")
        items = ((items_node, file),) if isinstance(items_node, dict) else ()
        format_ = _format_suffix(node.get("format"))
        for kind in kinds:
            if kind == "array":
                forms[("array", id(items_node))] = items
            elif kind == "string" and raw_enum == [""]:
                forms['""'] = None
            elif isinstance(kind, str):
                forms[kind + format_ if kind in _FORMATTED else kind] = None
        enum = _enum_of(raw_enum) if raw_enum is not None else None
        if raw_enum is not None:
            if None in raw_enum:
                forms["null"] = None
            if not kinds:  # the forms of the values allowed
                for value in raw_enum:
                    forms[_JSON_FORMS.get(type(value), "any") if value != "" else '""'] = None
        if node.get("nullable") is True or node.get("x-nullable") is True:
            forms["null"] = None
        props_node = node.get("properties")
        props = props_node if isinstance(props_node, dict) and props_node else {}
        props_file = file
        if not kinds and (props or isinstance(node.get("additionalProperties"), dict | bool)):
            forms["object"] = None
        required = node.get("required")
        required = (
            frozenset(name for name in required if isinstance(name, str)) if isinstance(required, list) else _NONE
        )
        objects = frozenset((id(node),)) if props else _NONE
        deprecated_flag = node.get("deprecated") is True
        description = node.get("description")
        deprecated_text = description is not None and deprecated_in_text(description)
        if "$ref" not in node and "allOf" not in node and "anyOf" not in node and "oneOf" not in node:
            shape = id(node) if props or items or required else "leaf"
            flat = _Flat(
                forms, enum, props, required, items, objects, deprecated_flag, deprecated_text, shape, props_file
            )
            return flat, _INF

        low = _INF
        members, alternatives = [], []
        ref = node.get("$ref")
        if isinstance(ref, str):
            found = self.resolve(ref, file)
            if found is not None:
                flat, sub_low = self._flat(*found)
                low = min(low, sub_low)
                members.append(flat)
        for member in _list(node.get("allOf")):
            flat, sub_low = self._flat(member, file)
            low = min(low, sub_low)
            members.append(flat)
        for word in ("anyOf", "oneOf"):
            for member in _list(node.get(word)):
                flat, sub_low = self._flat(member, file)
                low = min(low, sub_low)
                alternatives.append(flat)
        signature = None
        if not (props or items or required) and low == _INF:
            if not forms and enum is None and not alternatives and len(members) == 1:
                if not (deprecated_flag or deprecated_text):
                    return members[0], _INF  # a bare $ref (or one allOf member): its target's fold
            # the same wrapper around the same schemas (`anyOf: [string, $ref: X]`, nullable) is folded once
            signature = (
                *forms,
                enum,
                deprecated_flag,
                deprecated_text,
                *map(id, members),
                None,
                *map(id, alternatives),
            )
            found = self.wrappers.get(signature)
            if found is not None:
                return found, _INF
        # the fields below depend on props, required, items and objects only, so a schema's shape is made of
        # its own (if it declares any) and its members': every `anyOf: [string, $ref: X]` shares X's fields
        own = id(node) if props or items or required else None
        if own is None and not alternatives and len(members) == 1:
            shape = members[0].shape
        else:
            shape = (own, tuple(member.shape for member in members), tuple(member.shape for member in alternatives))
            shape = self.shapes.setdefault(shape, ("shape", len(self.shapes)))
        with_props = [member for member in (*members, *alternatives) if member.props]
        shared = not props and len(with_props) == 1
        if shared:  # no copy: a _Flat's props are never changed once made
            props, props_file = with_props[0].props, with_props[0].props_file
        elif with_props:
            own_props, props = props, {}
            _merge_props(props, own_props, file, "all")
        for member in members:  # allOf (and a $ref's target): merged
            for form, payload in member.forms.items():
                forms.setdefault(form, payload)
            if member.enum is not None:
                enum = member.enum if enum is None else enum & member.enum
            if not shared:
                _merge_props(props, member.props, member.props_file, "all")
            required |= member.required
            items += member.items
            objects |= member.objects
            deprecated_flag |= member.deprecated_flag
            deprecated_text |= member.deprecated_text
        if alternatives:  # anyOf / oneOf: united
            for member in alternatives:
                for form, payload in member.forms.items():
                    forms.setdefault(form, payload)
                if not shared:
                    _merge_props(props, member.props, member.props_file, "any")
                items += member.items
                objects |= member.objects
            valued = [member for member in alternatives if not member.null_only]
            if valued and all(member.enum is not None for member in valued):
                united = frozenset().union(*(member.enum for member in valued))
                enum = united if enum is None else enum & united
            shaped = [member for member in alternatives if member.props or member.objects]
            if shaped:
                required |= frozenset.intersection(*(member.required for member in shaped))
        flat = _Flat(forms, enum, props, required, items, objects, deprecated_flag, deprecated_text, shape, props_file)
        if signature is not None:
            self.wrappers[signature] = flat
        return flat, low

    def position(self, mode: str, members: tuple) -> _Flat:
        """The folded schema of a field whose schema is ``members`` (merged, or alternatives)."""
        if len(members) == 1:
            node, file = members[0]
            found = self.flats.get(id(node))
            return found if found is not None else self._flat(node, file)[0]
        # one schema reached twice (a property both alternatives take from one $ref) counts once
        flats = tuple({id(flat): flat for flat in (self.flat(node, file) for node, file in members)}.values())
        if len(flats) == 1:
            return flats[0]
        key = (mode, tuple(id(flat) for flat in flats))
        found = self.combined.get(key)
        if found is None:
            found = self.combined[key] = _combine(mode, flats)
            self.alive.append(found)
        return found

    # --- a field's own facts ---------------------------------------------------------------------------

    def info(self, flat: _Flat) -> tuple:
        """(type, enum, deprecated_flag, deprecated_text) of a field with this folded schema."""
        found = self.infos.get(id(flat))
        if found is None:
            enum = tuple(sorted(flat.enum)) if flat.enum is not None else ()
            if all(form.__class__ is str for form in flat.forms):
                type_ = "|".join(sorted(flat.forms)) or "any"
            else:
                type_ = "|".join(sorted(self.forms(flat, 0)))
            found = self.infos[id(flat)] = (type_, enum, flat.deprecated_flag, flat.deprecated_text)
        return found

    def forms(self, flat: _Flat, depth: int) -> frozenset:
        key = (id(flat), depth)
        found = self.forms_memo.get(key)
        if found is not None:
            return found
        out = set()
        for form, items in flat.forms.items():
            if isinstance(form, str):
                out.add(form)
            elif depth >= MAX_TYPE_DEPTH or not items:
                out.add("array<any>")
            else:
                out.add(f"array<{'|'.join(sorted(self.forms(self.position('any', items), depth + 1)))}>")
        found = self.forms_memo[key] = frozenset(out or {"any"})
        return found

    # --- the fields below a schema ---------------------------------------------------------------------

    def below(self, flat: _Flat, depth: int) -> tuple:
        return self._below(flat, depth)[0]

    def _below(self, flat: _Flat, depth: int):
        """(entries, lowest stack index a cut reached): the fields under a field whose folded schema is
        ``flat``, ``depth`` dotted segments still allowed; an entry is (suffix, type, required, enum,
        deprecated_flag, deprecated_text), suffix ".name..." or "[]...", sorted by suffix, at most
        MAX_FIELDS."""
        if not flat.props and not flat.items:
            return (), _INF
        key = (flat.shape, depth)
        found = self.below_memo.get(key)
        if found is not None:
            return found, _INF
        if key in self.below_stack:  # an array of itself
            self.cycles += 1
            return (), self.below_stack[key]
        if len(self.below_stack) >= MAX_NESTING:
            self.depth_cut += 1
            return (), _INF
        index = self.below_stack[key] = len(self.below_stack)
        try:
            entries, low = self._entries(flat, depth)
        finally:
            del self.below_stack[key]
        if low >= index:
            self.below_memo[key] = entries
            low = _INF
        return entries, low

    def _entries(self, flat: _Flat, depth: int):
        if flat.props and depth < 1:  # its properties are past the depth: only its items are read
            self.depth_cut += 1
            children, ordered = ((self._items_child(flat),) if flat.items else ()), True
        else:
            children, ordered = self._children(flat)
        low = _INF
        if ordered:  # each child's entries follow the last's: taken in turn, up to MAX_FIELDS
            out: list = []
            for head, child, required in children:
                out.append(head)
                if child is not None:
                    sub, sub_low = self._below(child, depth if head[0] == "[]" else depth - 1)
                    low = min(low, sub_low)
                    out.extend(islice(_prefixed(sub, head[0], required), MAX_FIELDS - len(out)))
                if len(out) >= MAX_FIELDS:
                    break
            return tuple(out[:MAX_FIELDS]), low
        streams = []
        for head, child, required in children:
            sub = ()
            if child is not None:
                sub, sub_low = self._below(child, depth if head[0] == "[]" else depth - 1)
                low = min(low, sub_low)
            streams.append(chain((head,), _prefixed(sub, head[0], required)))
        return tuple(islice(heapq.merge(*streams, key=itemgetter(0)), MAX_FIELDS)), low

    def _children(self, flat: _Flat) -> tuple:
        """(((head entry, folded schema to expand or None, required), ...), whether their entries come in
        name order one child after another): a schema's properties in name order, then its items ("[]"); the
        same for every schema of its shape."""
        found = self.children.get(flat.shape)
        if found is not None:
            return found
        children = []
        props, props_file, required_names, objects = flat.props, flat.props_file, flat.required, flat.objects
        try:
            names = sorted(props)
        except TypeError:  # a name that is not a string (never from JSON)
            names = sorted(props, key=str)
        for name in names:
            value = props[name]
            if value.__class__ is tuple:
                child = self.position(*value)
            else:
                child = self.flats.get(id(value)) or self._flat(value, props_file)[0]
            required = name in required_names
            type_, enum, deprecated_flag, deprecated_text = self.info(child)
            head = ("." + str(name), type_, required, enum, deprecated_flag, deprecated_text)
            if not (child.props or child.items):
                child = None
            elif objects and self._is_parent(child, objects):
                self.cycles += 1
                child = None
            children.append((head, child, required))
        if flat.items:  # "[]..." sorts after every ".name..."
            children.append(self._items_child(flat))
        # a child's entries all start with its name then "." or "["; they sort before the next child's name
        # unless that name continues this one with a character before "[" ("a" then "a-b", "a" then "aB")
        names = [head[0] for head, _, _ in children]
        ordered = not any(after.startswith(name) and after[len(name)] <= "[" for name, after in zip(names, names[1:]))
        found = self.children[flat.shape] = (tuple(children), ordered)
        return found

    def _items_child(self, flat: _Flat) -> tuple:
        child = self.position("any", flat.items)
        type_, enum, deprecated_flag, deprecated_text = self.info(child)
        head = ("[]", type_, True, enum, deprecated_flag, deprecated_text)
        return head, child if child.props or child.items else None, True

    def _is_parent(self, child: _Flat, parent_objects: frozenset) -> bool:
        """Whether the field's schema (or its items', to a few levels) declares all its parent's properties."""
        for _ in range(4):
            if child.objects and parent_objects <= child.objects:
                return True
            if not child.items:
                return False
            child = self.position("any", child.items)
        return False

    def body_fields(self, flat: _Flat, side: str, required: bool) -> tuple:
        """Field s of a body with folded schema ``flat``, sorted by name, at most MAX_FIELDS."""
        key = (flat.shape, side, required)
        found = self.body_memo.get(key)
        if found is None:
            make = tuple.__new__  # Field(...) without its Python-level __new__: one per field of a large spec
            fields = [
                make(
                    Field, (side, "body", suffix[1:] if suffix[0] == "." else suffix, type_, req and required, e, f, t)
                )
                for suffix, type_, req, e, f, t in self.below(flat, MAX_FIELD_DEPTH[side])
            ]
            if fields and fields[-1].name[0] == "[":  # a top-level "[]" sorts among the names once "." is gone
                fields.sort(key=_NAME)
            found = self.body_memo[key] = tuple(fields[:MAX_FIELDS])
        return found

    def stats(self) -> SurfaceStats:
        return SurfaceStats(self.cycles, len(self.unresolved), self.depth_cut)


def _prefixed(entries: tuple, prefix: str, required: bool):
    if required:
        return ((prefix + entry[0], *entry[1:]) for entry in entries)
    return ((prefix + suffix, type_, False, enum, flag, text) for suffix, type_, _, enum, flag, text in entries)


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _merge_props(props: dict, more: dict, file: str, mode: str) -> None:
    """Add the properties ``more`` (raw nodes of ``file``, or (mode, members)) to ``props`` (mode, members)."""
    for name, value in more.items():
        sub_mode, members = value if isinstance(value, tuple) else ("all", ((value, file),))
        if name in props:
            known = props[name][1]
            known_ids = {id(node) for node, _ in known}
            props[name] = (mode, known + tuple(member for member in members if id(member[0]) not in known_ids))
        else:
            props[name] = (sub_mode, members)


def _combine(mode: str, flats: tuple) -> _Flat:
    """Several folded schemas of one field: merged ("all") or alternatives ("any", as anyOf)."""
    forms: dict = {}
    props: dict = {}
    items: tuple = ()
    objects: frozenset = frozenset()
    for flat in flats:
        for form, payload in flat.forms.items():
            forms.setdefault(form, payload)
        _merge_props(props, flat.props, flat.props_file, mode)
        items += flat.items
        objects |= flat.objects
    if mode == "all":
        enums = [flat.enum for flat in flats if flat.enum is not None]
        enum = frozenset.intersection(*enums) if enums else None
        required = frozenset().union(*(flat.required for flat in flats))
        deprecated_flag = any(flat.deprecated_flag for flat in flats)
        deprecated_text = any(flat.deprecated_text for flat in flats)
    else:
        valued = [flat for flat in flats if not flat.null_only]
        enum = (
            frozenset().union(*(flat.enum for flat in valued))
            if valued and all(flat.enum is not None for flat in valued)
            else None
        )
        shaped = [flat for flat in flats if flat.props or flat.objects]
        required = frozenset.intersection(*(flat.required for flat in shaped)) if shaped else frozenset()
        deprecated_flag = all(flat.deprecated_flag for flat in flats)
        deprecated_text = all(flat.deprecated_text for flat in flats)
    shape = ("combined", mode, tuple(flat.shape for flat in flats))
    return _Flat(forms, enum, props, required, items, objects, deprecated_flag, deprecated_text, shape)


# --- endpoints -------------------------------------------------------------------------------------------


def _join(base: str, template: str) -> str:
    path = re.sub(r"/{2,}", "/", "/" + base.strip("/") + "/" + template.lstrip("/"))
    return path.rstrip("/") or "/"


def _base_path(url) -> str:
    if not isinstance(url, str):
        return ""
    parsed = urlparse(url if "//" in url else "http://host/" + url.lstrip("/"))
    return parsed.path


def _server_base(levels) -> str:
    """The path part of the first server url found at ``levels`` (operation, path item, document)."""
    for level in levels:
        servers = level.get("servers") if isinstance(level, dict) else None
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            server = servers[0]
            url = server.get("url")
            if not isinstance(url, str):
                return ""
            variables = server.get("variables") if isinstance(server.get("variables"), dict) else {}
            for name, variable in variables.items():
                if isinstance(variable, dict) and isinstance(variable.get("default"), str | int | float):
                    url = url.replace("{" + str(name) + "}", str(variable["default"]))
            return _base_path(url)
    return ""


def _media(content: dict, preferred: tuple):
    """The entry of the preferred media type present (else any JSON type, else the first)."""
    for name in preferred:
        if name in content:
            return content[name]
    for name in content:
        if isinstance(name, str) and "json" in name:
            return content[name]
    return next(iter(content.values()))


_RESPONSE_MEDIA = ("application/json", *BODY_MEDIA)


class _Operation(NamedTuple):
    """One operation to read: its node and file, its path item's, the template, the document's version."""

    operation: dict
    operation_file: str
    item: dict
    item_file: str
    template: str
    swagger2: bool


def endpoint_surfaces(documents: dict, load=None) -> tuple[dict, SurfaceStats]:
    """({(METHOD, normalised path): (path as written in this version, Surface)}, stats) of one version.

    ``documents``: {stem: parsed dict} of the version's entry files (stem: repo-relative path without its
    extension); ``load(path)``: the parsed document of any other repo-relative file path (with extension),
    None when absent or unreadable; None: only ``documents`` resolve."""
    # the walk makes many small tuples and no reference cycles; a full collection during it would traverse
    # the whole parsed document again and again
    paused = gc.isenabled()
    gc.disable()
    try:
        return _endpoint_surfaces(documents, load)
    finally:
        if paused:
            gc.enable()


def _endpoint_surfaces(documents: dict, load) -> tuple[dict, SurfaceStats]:
    reader = _Reader(documents, load)
    found: dict = {}
    for stem in sorted(documents):
        document = documents[stem]
        if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
            continue
        swagger2 = "swagger" in document
        for template, item in document["paths"].items():
            if not isinstance(template, str):
                continue
            followed = reader.follow(item, stem)
            if followed is None or not isinstance(followed[0], dict):
                continue
            item, item_file = followed
            for method in METHODS:
                followed = reader.follow(item.get(method), item_file)
                if followed is None or not isinstance(followed[0], dict):
                    continue
                operation, operation_file = followed
                if swagger2:
                    base = document.get("basePath") if isinstance(document.get("basePath"), str) else ""
                else:
                    base = _server_base((operation, item, document))
                path = _join(base, template)
                key = (method.upper(), _PATH_PARAM.sub("{}", path))
                candidate = (path, stem, _Operation(operation, operation_file, item, item_file, template, swagger2))
                if key not in found or candidate[:2] < found[key][:2]:
                    found[key] = candidate
    surfaces = {key: (path, _surface(reader, read)) for key, (path, _, read) in found.items()}
    return surfaces, reader.stats()


def _surface(reader: _Reader, read: _Operation) -> Surface:
    operation = read.operation
    positions = {name: index for index, name in reversed(list(enumerate(_PATH_PARAM.findall(read.template))))}
    params: dict = {}
    body: tuple = ()
    for level, file in (
        (read.item.get("parameters"), read.item_file),
        (operation.get("parameters"), read.operation_file),
    ):
        for param in _list(level):
            followed = reader.follow(param, file)
            if followed is None or not isinstance(followed[0], dict):
                if followed is not None:
                    reader.unresolved.add(("parameter", id(param)))
                continue
            param, param_file = followed
            name, location = param.get("name"), param.get("in")
            if not isinstance(name, str) or not isinstance(location, str):
                reader.unresolved.add(("parameter", id(param)))
                continue
            if read.swagger2 and location == "body":
                body = reader.body_fields(
                    reader.flat(param.get("schema"), param_file), "request", param.get("required") is True
                )
                continue
            field = _param_field(reader, param, param_file, read.swagger2)
            if location == "path":
                if name not in positions:
                    continue
                field = field._replace(name=f"{{{positions[name]}}}", required=True)
            params[(field.location, name)] = field
    if not read.swagger2:
        followed = reader.follow(operation.get("requestBody"), read.operation_file)
        if followed is not None and isinstance(followed[0], dict):
            request_body, body_file = followed
            content = request_body.get("content")
            if isinstance(content, dict) and content:
                entry = _media(content, BODY_MEDIA)
                if isinstance(entry, dict) and "schema" in entry:
                    # an OpenAPI 3 body is required only if requestBody.required; Stripe's form bodies leave
                    # it out and mark required properties in the schema, so absent means "as the schema says"
                    body = reader.body_fields(
                        reader.flat(entry["schema"], body_file), "request", request_body.get("required") is not False
                    )
    request = body
    if params:
        named = {(field.location, field.name): field for field in params.values()}
        if any(location == "body" for location, _ in named):  # Swagger 2 formData beside a body schema
            named = {**{(field.location, field.name): field for field in body}, **named}
            body = ()
        # "body" sorts before every other location
        request = body + tuple(named[key] for key in sorted(named))
    return Surface(
        operation.get("deprecated") is True,
        deprecated_in_text(operation.get("summary"), operation.get("description")),
        request + _response_fields(reader, operation.get("responses"), read),
    )


def _param_field(reader: _Reader, param: dict, file: str, swagger2: bool) -> Field:
    location = param["in"]
    if swagger2:
        schema = {key: param[key] for key in ("type", "format", "items", "enum", "x-nullable") if key in param}
        reader.alive.append(schema)
        location = "body" if location == "formData" else location
    else:
        schema = param.get("schema")
        content = param.get("content")
        if schema is None and isinstance(content, dict) and content:
            entry = next(iter(content.values()))
            schema = entry.get("schema") if isinstance(entry, dict) else None
    type_, enum, flag, text = reader.info(reader.flat(schema, file))
    return Field(
        "request",
        location,
        param["name"],
        type_,
        param.get("required") is True,
        enum,
        param.get("deprecated") is True or flag,
        deprecated_in_text(param.get("description")) or text,
    )


def _response_fields(reader: _Reader, responses, read: _Operation) -> tuple:
    """Fields of the success responses' bodies, merged as alternatives."""
    if not isinstance(responses, dict):
        return ()
    statuses = [status for status in responses if _SUCCESS.fullmatch(str(status))]
    if not statuses and "default" in responses:
        statuses = ["default"]
    members = []
    for status in sorted(statuses, key=str):
        followed = reader.follow(responses[status], read.operation_file)
        if followed is None or not isinstance(followed[0], dict):
            continue
        response, file = followed
        if read.swagger2:
            schema = response.get("schema")
        else:
            content = response.get("content")
            entry = _media(content, _RESPONSE_MEDIA) if isinstance(content, dict) and content else None
            schema = entry.get("schema") if isinstance(entry, dict) else None
        if isinstance(schema, dict):
            members.append((schema, file))
    if not members:
        return ()
    return reader.body_fields(reader.position("any", tuple(members)), "response", True)


def visible(surfaces: dict) -> tuple[dict, set]:
    """(surfaces with each deprecation folded into its flag, {(endpoint, None or (side, location, name))}
    whose deprecation only the words show): what a history line records, and what the counts need.
    ``surfaces``: {key: Surface}; unchanged fields and surfaces are returned as they are."""
    folded, text_only = {}, set()
    for key, surface in surfaces.items():
        if surface.deprecated_text and not surface.deprecated_flag:
            text_only.add((key, None))
        fields = surface.fields
        if any(field.deprecated_text for field in fields):
            changed = []
            for field in fields:
                if field.deprecated_text:
                    if not field.deprecated_flag:
                        text_only.add((key, (field.side, field.location, field.name)))
                    field = field._replace(deprecated_flag=True, deprecated_text=False)
                changed.append(field)
            fields = tuple(changed)
        if fields is surface.fields and not surface.deprecated_text:
            folded[key] = surface
        else:
            folded[key] = Surface(surface.deprecated, False, fields)
    return folded, text_only
