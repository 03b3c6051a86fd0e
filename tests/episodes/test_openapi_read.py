"""Reading a spec's versions (wpbjax.episodes.importers.openapi_read, openapi_history): fragment files loaded through a
``$ref`` and the commits that change only them, YAML anchors / aliases / merge keys, empty YAML, integers
of thousands of digits, a directory with a non-ASCII name, symbolic links. Each on a hand-made git
repository or dated directory."""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import subprocess

import pytest

from wpbjax.cli import main
from wpbjax.episodes.importers import openapi_history, openapi_import, openapi_read
from wpbjax.episodes.importers.openapi_history import SpecError
from wpbjax.episodes.importers.openapi_surface import Field, Surface, SurfaceStats

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT_ENV = dict(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


def _git(repo, *args) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True, env=dict(os.environ, **GIT_ENV)
    ).stdout.strip()


def _commit(repo, day: int, files: dict, links: dict | None = None) -> str:
    """Write ``files`` ({path: text, None to delete}) and ``links`` ({path: target}); commit dated 2020-01-<day>."""
    for path, text in files.items():
        full = repo / path
        if text is None:
            _git(repo, "rm", "-q", path)
            continue
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")
        _git(repo, "add", path)
    for path, target in (links or {}).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, repo / path)
        _git(repo, "add", path)
    date = f"2020-01-{day:02d}T12:00:00Z"
    subprocess.run(
        ["git", "-C", repo, "commit", "-q", "-m", f"day {day}"],
        check=True,
        env=dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date, **GIT_ENV),
    )
    return _git(repo, "rev-parse", "HEAD")


def _repo(tmp_path, name="api"):
    repo = tmp_path / name
    repo.mkdir()
    subprocess.run(["git", "init", "-q", repo], check=True)
    return repo


def _spec(paths: dict, **top) -> str:
    return json.dumps({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": paths, **top})


def _surface_of(fragment) -> Surface:
    """A surface that shows a loaded fragment (its JSON as one field's type; ``null`` for a missing one)."""
    text = json.dumps(fragment, sort_keys=True)
    return Surface(False, False, (Field("response", "body", "fragment", text, False, (), False, False),))


def _following_surfaces(calls: list):
    """A stand-in for openapi_surface.endpoint_surfaces under its (documents, load) contract: follows every
    external ``$ref`` (relative to the file holding it) through ``load``, and gives one surface per loaded
    fragment (so what was loaded is visible): {("", "GET", path): (path, fragment)}."""

    def surfaces(documents: dict, load):
        found, todo = {}, [(stem, document) for stem, document in documents.items()]
        while todo:
            where, node = todo.pop()
            stack = [node]
            while stack:
                item = stack.pop()
                if isinstance(item, dict):
                    ref = item.get("$ref")
                    if isinstance(ref, str) and not ref.startswith("#"):
                        path = posixpath.normpath(posixpath.join(posixpath.dirname(where), ref.split("#")[0]))
                        calls.append(path)
                        target = load(path)
                        found[("", "GET", path)] = (path, _surface_of(target))
                        if target is not None:
                            todo.append((path, target))
                    stack.extend(item.values())
                elif isinstance(item, list):
                    stack.extend(item)
        return found, SurfaceStats(0, 0, 0)

    return surfaces


def _read_all(source, patterns, processes=1):
    versions, is_git = openapi_import.find_versions(os.fspath(source), openapi_history.parse_patterns(patterns))
    return versions, list(openapi_read.read_surfaces(os.fspath(source), versions, is_git, processes=processes))


@pytest.fixture
def fragment_repo(tmp_path):
    """spec/api.yaml refers to spec/resources/items.yaml (which refers to spec/models/item.yaml). Commits:
    1 all; 2 only a model fragment; 3 only spec/notes.json (read by no version); 4 only other/x.json
    (outside the entry's directory); 5 the entry file; 6 a fragment the entry no longer refers to."""
    repo = _repo(tmp_path)
    entry = "openapi: 3.0.0\ninfo: {title: t, version: '2.0'}\npaths:\n  /items:\n    $ref: resources/items.yaml\n"
    items = "get:\n  responses:\n    '200':\n      $ref: ../models/item.yaml\n"
    commits = [
        _commit(
            repo,
            1,
            {"spec/api.yaml": entry, "spec/resources/items.yaml": items, "spec/models/item.yaml": "type: object\n"},
        ),
        _commit(repo, 2, {"spec/models/item.yaml": "type: string\n"}),
        _commit(repo, 3, {"spec/notes.json": "{}"}),
        _commit(repo, 4, {"other/x.json": "{}"}),
        _commit(repo, 5, {"spec/api.yaml": entry.replace("resources/items.yaml", "resources/other.yaml")}),
        _commit(repo, 6, {"spec/resources/items.yaml": items + "post: {}\n"}),
    ]
    return repo, commits


def test_fragment_only_commits_are_versions(fragment_repo, monkeypatch):
    repo, commits = fragment_repo
    calls: list = []
    monkeypatch.setattr(openapi_read.openapi_surface, "endpoint_surfaces", _following_surfaces(calls))
    for processes in (1, 2):
        versions, read = _read_all(repo, "spec/api.yaml", processes)
        # candidates: every commit touching a .json/.yaml under spec/ (not 4: other/ is outside it)
        assert [(v.commit, v.entry_changed) for v in versions] == [
            (commits[0], True),
            (commits[1], False),
            (commits[2], False),
            (commits[4], True),
            (commits[5], False),
        ]
        # versions: 1, 2 (a fragment version 1 read changed), 5 (the entry); not 3 (notes.json is read by no
        # version) nor 6 (items.yaml is no longer read by version 5)
        assert [version.commit for version, _, _ in read] == [commits[0], commits[1], commits[4]]
        first, second, third = (result for _, result, _ in read)
        assert first.surfaces[("", "GET", "spec/models/item.yaml")] == _surface_of({"type": "object"})
        assert second.surfaces[("", "GET", "spec/models/item.yaml")] == _surface_of({"type": "string"})
        assert third.surfaces == {("", "GET", "spec/resources/other.yaml"): _surface_of(None)}
        assert third.paths == {("", "GET", "spec/resources/other.yaml"): "spec/resources/other.yaml"}
        assert read[2][2] == [("fragment_unreadable", "spec/resources/other.yaml", "missing")]
        assert first.api_version == "2.0"


def test_a_fragment_beside_a_one_file_spec_adds_no_version(tmp_path):
    """Stripe keeps fixtures3.json beside spec3.json: a commit changing only it is a candidate, never a version."""
    repo = _repo(tmp_path)
    one = _commit(repo, 1, {"openapi/spec3.json": _spec({"/a": {"get": {}}}), "openapi/fixtures3.json": "{}"})
    _commit(repo, 2, {"openapi/fixtures3.json": '{"a": 1}'})
    three = _commit(repo, 3, {"openapi/spec3.json": _spec({"/b": {"get": {}}})})
    versions, read = _read_all(repo, "openapi/spec3.json", processes=2)
    assert len(versions) == 3 and [version.commit for version, _, _ in read] == [one, three]


def test_the_loader(fragment_repo, tmp_path):
    """Git: COMMIT:PATH through the worker's cat-file process, cached per version, None (and a note) when
    absent, unparseable, not a mapping or outside the repository. Directory: the file under the version."""
    repo, commits = fragment_repo
    (repo / "spec" / "bad.yaml").write_text("a: [1\n")
    (repo / "spec" / "list.json").write_text("[1, 2]")
    _git(repo, "add", "spec")
    _git(repo, "commit", "-q", "-m", "bad fragments")
    version = openapi_history.Version(_git(repo, "rev-parse", "HEAD"), "", "", ())
    reader = openapi_history.BlobReader(os.fspath(repo))
    try:
        fragments = openapi_read._Fragments(version, os.fspath(repo), reader)
        assert fragments.load("spec/resources/../models/item.yaml") == {"type": "string"}  # as of commit 2
        assert fragments.load("spec/models/item.yaml") is fragments.load("spec/models/./item.yaml")  # cached
        for path in ("spec/nope.yaml", "spec/bad.yaml", "spec/list.json", "../../../etc/passwd", "/etc/passwd"):
            assert fragments.load(path) is None, path
        reasons = [(path, reason.split(" (")[0]) for _, path, reason in fragments.notes]
        assert reasons == [
            ("spec/nope.yaml", "missing"),
            ("spec/bad.yaml", "not valid YAML"),
            ("spec/list.json", "not a mapping"),
            ("../../../etc/passwd", "outside the repository"),
            ("/etc/passwd", "outside the repository"),
        ]
        assert set(fragments.seen) == {"spec/models/item.yaml", "spec/nope.yaml", "spec/bad.yaml", "spec/list.json"}
    finally:
        reader.close()
    root = tmp_path / "dated"
    (root / "2021-01-01" / "models").mkdir(parents=True)
    (root / "2021-01-01" / "models" / "item.json").write_text('{"type": "integer"}')
    (root / "outside.json").write_text("{}")
    dated = openapi_history.Version("2021-01-01", "", "", ())
    fragments = openapi_read._Fragments(dated, os.fspath(root), None)
    assert fragments.load("models/item.json") == {"type": "integer"}
    assert fragments.load("../outside.json") is None and fragments.load("models/none.json") is None


YAML_WITH_ANCHORS = """\
openapi: 3.0.0
info: {title: t, version: '1'}
x-string: &str {type: string}
components:
  schemas:
    Base: &base
      type: object
      properties:
        id: {type: string}
    Also: *base
    Again: *base
    Merged:
      description: mine
      <<: *base
      type: array
    Listed:
      <<: [*base, *str]
paths: {}
"""
EXPANDED = {
    "openapi": "3.0.0",
    "info": {"title": "t", "version": "1"},
    "x-string": {"type": "string"},
    "components": {
        "schemas": {
            "Base": {"type": "object", "properties": {"id": {"type": "string"}}},
            "Also": {"type": "object", "properties": {"id": {"type": "string"}}},
            "Again": {"type": "object", "properties": {"id": {"type": "string"}}},
            # the mapping's own keys win over the merged ones, wherever the merge key stands
            "Merged": {"description": "mine", "type": "array", "properties": {"id": {"type": "string"}}},
            # the first mapping of a merge list wins
            "Listed": {"type": "object", "properties": {"id": {"type": "string"}}},
        }
    },
    "paths": {},
}


def test_yaml_anchors_aliases_and_merge_keys():
    assert openapi_history.parse_document(YAML_WITH_ANCHORS.encode(), ".yaml") == EXPANDED
    quoted = openapi_history.parse_data(b"a: &x 1\nb: '*x'\nc: \"<<\"\n", ".yaml")
    assert quoted == {"a": 1, "b": "*x", "c": "<<"}  # a quoted '*x' is text, not an alias
    with pytest.raises(ValueError, match="not valid YAML.*nope"):
        openapi_history.parse_data(b"a: *nope\n", ".yaml")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n", "42\n", "just text\n", "- a\n- b\n"])
def test_empty_or_scalar_yaml_is_not_a_spec(tmp_path, capsys, text):
    repo = _repo(tmp_path)
    commit = _commit(repo, 1, {"api.yaml": text})
    out = tmp_path / "out.jsonl"
    assert main(["import-openapi", os.fspath(repo), "--spec", "api.yaml", "--out", os.fspath(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in (os.fspath(repo), f"commit {commit}", "file api.yaml", "not an OpenAPI or Swagger document"):
        assert needle in err, err
    assert not out.exists()


def test_integers_of_thousands_of_digits(tmp_path):
    big = "7" * 5000
    parameter = '{"name": "n", "in": "query", "schema": {"maximum": ' + big + "}}"
    paths = '{"/a": {"get": {"parameters": [' + parameter + "]}}}"
    repo = _repo(tmp_path)
    _commit(repo, 1, {"api.json": '{"openapi": "3.0.0", "info": {"version": ' + big + '}, "paths": ' + paths + "}"})
    _commit(repo, 2, {"api.yaml": f"openapi: 3.0.0\ninfo: {{version: {big}}}\npaths: {paths}\n", "api.json": None})
    versions, read = _read_all(repo, "api.json")
    assert [result.api_version for _, result, _ in read] == [big, big]
    out = tmp_path / "big.jsonl"
    assert main(["import-openapi", os.fspath(repo), "--spec", "api.json", "--out", os.fspath(out), "--quiet"]) == 0
    assert openapi_import.read_history(out)[0]["endpoint"] == "GET /a"


def test_a_directory_with_a_non_ascii_name(tmp_path):
    repo = _repo(tmp_path)
    first = _commit(repo, 1, {"spécs/api.json": _spec({"/a": {"get": {}}})})
    second = _commit(repo, 2, {"spécs/api.json": _spec({"/a": {"get": {}}, "/b": {"get": {}}})})
    versions, read = _read_all(repo, "spécs/api.json")
    assert [version.commit for version, _, _ in read] == [first, second]
    assert all(result is not None for _, result, _ in read)


def test_symbolic_links(tmp_path, capsys):
    """A linked spec is read from the file it points to in the same commit (a change to that file alone is a
    new version); one pointing outside the repository is an error saying where it points."""
    repo = _repo(tmp_path)
    first = _commit(repo, 1, {"real/spec.json": _spec({"/a": {"get": {}}})}, links={"api.json": "real/spec.json"})
    second = _commit(repo, 2, {"real/spec.json": _spec({"/b": {"get": {}}})})
    out = tmp_path / "linked.jsonl"
    assert main(["import-openapi", os.fspath(repo), "--spec", "api.json", "--out", os.fspath(out), "--quiet"]) == 0
    lines = openapi_import.read_history(out)
    assert [(line["commit"], line["endpoint"], line["removed"]) for line in lines] == [
        (first, "GET /a", False),
        (second, "GET /a", True),
        (second, "GET /b", False),
    ]
    bad = _repo(tmp_path, "bad")
    commit = _commit(bad, 1, {}, links={"api.json": "../../outside/spec.json"})
    capsys.readouterr()
    out = tmp_path / "bad.jsonl"
    assert main(["import-openapi", os.fspath(bad), "--spec", "api.json", "--out", os.fspath(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"commit {commit}" in err and "file api.json" in err, err
    assert "a symbolic link to ../../outside/spec.json" in err and "not valid JSON" not in err, err


def test_symbolic_link_in_a_dated_directory(tmp_path):
    root = tmp_path / "dated"
    (root / "2021-01-01").mkdir(parents=True)
    (tmp_path / "elsewhere.json").write_text(_spec({}))
    os.symlink(tmp_path / "elsewhere.json", root / "2021-01-01" / "api.json")
    with pytest.raises(SpecError, match="a symbolic link to .*elsewhere.json"):
        openapi_import.import_history(os.fspath(root), "api.json", processes=1)


def test_a_worker_resends_a_surface_to_an_earlier_candidate(fragment_repo, monkeypatch):
    """A pool worker may read a later candidate first (one read ahead, another asked for when it is reached):
    a surface it sent with the later candidate's read is sent again with the earlier one's, which the
    importer takes in first; with the later one's it is left out only after an earlier read carried it."""
    repo, commits = fragment_repo
    monkeypatch.setattr(openapi_read.openapi_surface, "endpoint_surfaces", _following_surfaces([]))
    versions, is_git = openapi_import.find_versions(os.fspath(repo), openapi_history.parse_patterns("spec/api.yaml"))
    first, second = versions[0], versions[1]  # both read spec/resources/items.yaml's unchanged surface
    openapi_read._start_worker(os.fspath(repo), is_git)
    try:
        later = openapi_read._read_version(second, order=1)[0]
        earlier = openapi_read._read_version(first, order=0)[0]
        again = openapi_read._read_version(second, order=2)[0]  # as a third candidate with these surfaces
    finally:
        openapi_read._stop_worker()
    key = ("", "GET", "spec/resources/items.yaml")
    assert later.digests[key] == earlier.digests[key]
    assert later.digests[key] in later.new and earlier.digests[key] in earlier.new  # sent with both
    assert again.new == {}  # earlier candidates' reads carried every surface


def test_shown_surfaces_are_reused_only_for_equal_surfaces(monkeypatch):
    """The worker's memo of shown surfaces and digests (ShownSurfaces): an equal surface made anew (other
    objects) is taken from the memo, its digest not encoded again; a surface whose referenced schema changed
    (a new description that says deprecated) is worked out afresh, as visible() and _digest give it."""
    from wpbjax.episodes.importers.openapi_surface import endpoint_surfaces, visible

    def version(description: str) -> dict:
        schema = {"type": "object", "properties": {"id": {"type": "string", "description": description}}}
        get = {"responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/c"}}}}}}
        document = json.loads(_spec({"/c": {"get": get}}, components={"schemas": {"c": schema}}))
        return {key: surface for key, (_, surface) in endpoint_surfaces({"spec": document})[0].items()}

    encoded = []
    digest = openapi_read._digest
    monkeypatch.setattr(openapi_read, "_digest", lambda surface: encoded.append(surface) or digest(surface))
    memo = openapi_read.ShownSurfaces()
    first, same, changed = version("An id."), version("An id."), version("This field is deprecated.")
    results = [memo.of(surfaces) for surfaces in (first, same, changed)]
    for surfaces, (shown, text_only, digests) in zip((first, same, changed), results):
        expected, expected_text_only = visible(surfaces)
        assert shown == expected and text_only == expected_text_only
        assert digests == {key: digest(surface) for key, surface in expected.items()}
    assert len(encoded) == 2  # the first version and the changed one; the equal one came from the memo
    key = ("GET", "/c")
    assert results[1][2][key] == results[0][2][key] != results[2][2][key]
    assert (key, ("response", "body", "id")) in results[2][1]
