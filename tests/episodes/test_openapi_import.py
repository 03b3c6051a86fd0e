"""`wpbjax import-openapi` on a second OpenAPI history laid out unlike Stripe's (built here with git): a YAML-only
single file, renamed and split into one file per product, a glitch reverted the next day, a version whose
file is absent, a YAML-only version, an invalid JSON beside a valid YAML twin; labels checked by hand. And
bad input: one line naming source, commit and file, status 2, nothing written."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess

import pytest

from wpbjax.cli import main
from wpbjax.episodes.importers import openapi_import, real_drift

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SPEC_PATTERNS = "specs/*.json,api.yaml"

CORE = {
    "openapi": "3.0.0",
    "servers": [{"url": "https://api.example.com/"}],
    "paths": {
        "/items": {
            "get": {"parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}]},
            "post": {
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewItem"}}}}
            },
        },
        "/items/{id}": {
            "delete": {"parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]}
        },
    },
    "components": {
        "schemas": {
            "NewItem": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "price": {"type": "integer"}},
            }
        }
    },
}
BILLING = {
    "openapi": "3.0.0",
    "servers": [{"url": "https://billing.example.com/billing"}],
    "paths": {
        "/invoices": {
            "post": {
                "requestBody": {
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {
                                "type": "object",
                                "required": ["amount"],
                                "properties": {"amount": {"type": "integer"}},
                            }
                        }
                    }
                }
            }
        },
        "/items": {"get": {"parameters": [{"name": "customer", "in": "query", "schema": {"type": "string"}}]}},
    },
}


def _yaml(document: dict) -> str:
    """JSON is YAML; written block-style by hand for the top level so the file is plainly YAML."""
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in document.items())


def _commit(repo, day: int, files: dict, message: str) -> str:
    """Write ``files`` ({path: text, or None to delete}) and commit them dated 2020-01-<day>."""
    for path, text in files.items():
        full = repo / path
        if text is None:
            subprocess.run(["git", "-C", repo, "rm", "-q", path], check=True)
            continue
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
        subprocess.run(["git", "-C", repo, "add", path], check=True)
    date = f"2020-01-{day:02d}T12:00:00Z"
    env = dict(
        os.environ,
        GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_DATE=date,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    subprocess.run(["git", "-C", repo, "commit", "-q", "-m", message], check=True, env=env)
    return subprocess.run(
        ["git", "-C", repo, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def _edit(document: dict, change) -> dict:
    document = copy.deepcopy(document)
    change(document)
    return document


@pytest.fixture(scope="module")
def product_repo(tmp_path_factory):
    """Seven commits; returns (repo, [commit ids])."""
    repo = tmp_path_factory.mktemp("products") / "api"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", repo], check=True)
    new_item = CORE["components"]["schemas"]["NewItem"]["properties"]
    with_color = _edit(
        CORE, lambda d: d["components"]["schemas"]["NewItem"]["properties"].update(color={"type": "string"})
    )
    no_price = _edit(with_color, lambda d: d["components"]["schemas"]["NewItem"]["properties"].pop("price"))
    no_delete = _edit(with_color, lambda d: d["paths"].pop("/items/{id}"))
    limit_string = _edit(
        no_delete, lambda d: d["paths"]["/items"]["get"]["parameters"][0].update(schema={"type": "string"})
    )
    invoices_deprecated = _edit(BILLING, lambda d: d["paths"]["/invoices"]["post"].update(deprecated=True))
    name_optional = _edit(limit_string, lambda d: d["components"]["schemas"]["NewItem"].update(required=[]))
    name_optional["components"]["schemas"]["NewItem"]["properties"]["price"] = {
        "type": "integer",
        "description": "Deprecated: send amount instead.",
    }
    customer_wider = _edit(
        invoices_deprecated,
        lambda d: d["paths"]["/items"]["get"]["parameters"][0].update(
            schema={"anyOf": [{"type": "string"}, {"type": "object"}]}
        ),
    )
    assert new_item == {"name": {"type": "string"}, "price": {"type": "integer"}}
    commits = [
        _commit(repo, 1, {"api.yaml": _yaml(CORE)}, "one YAML file"),
        _commit(
            repo,
            2,
            {"api.yaml": None, "specs/core.json": json.dumps(with_color), "specs/billing.json": json.dumps(BILLING)},
            "renamed and split per product; color",
        ),
        _commit(repo, 3, {"specs/core.json": json.dumps(no_price)}, "glitch: price lost"),
        _commit(repo, 4, {"specs/core.json": json.dumps(with_color)}, "price back"),
        _commit(repo, 5, {"specs/core.json": json.dumps(no_delete, indent=1)}, "delete removed (file lost below)"),
        _commit(
            repo,
            6,
            {
                "specs/core.json": None,
                "specs/core.yaml": _yaml(limit_string),
                "specs/billing.json": json.dumps(invoices_deprecated),
            },
            "YAML only; limit a string",
        ),
        _commit(
            repo,
            7,
            {
                "specs/core.json": "{not json",
                "specs/core.yaml": _yaml(name_optional),
                "specs/billing.json": json.dumps(customer_wider),
            },
            "broken JSON beside good YAML",
        ),
    ]
    # commit 5's core.json becomes unreadable: its contents leave the object store (as large files are absent
    # from a partial mirror)
    blob = subprocess.run(
        ["git", "-C", repo, "rev-parse", f"{commits[4]}:specs/core.json"], check=True, capture_output=True, text=True
    ).stdout.strip()
    os.remove(repo / ".git" / "objects" / blob[:2] / blob[2:])
    return repo, commits


@pytest.fixture(scope="module")
def imported(product_repo, tmp_path_factory):
    repo, _commits = product_repo
    out = tmp_path_factory.mktemp("history") / "products.history.jsonl.gz"
    assert main(["import-openapi", os.fspath(repo), "--spec", SPEC_PATTERNS, "--out", os.fspath(out), "--quiet"]) == 0
    return out, openapi_import.read_history(out), json.loads((out.parent / (out.name + ".meta.json")).read_text())


def _kinds(line) -> list:
    return [(change["kind"], change["field"], change["glitch"]) for change in line["changes"]]


def test_labels_by_hand(imported, product_repo):
    _, commits = product_repo
    _out, lines, meta = imported
    got = [(line["version"], line["endpoint"], _kinds(line), line["level"]) for line in lines]
    added = [("endpoint_added", "", False)]
    # billing's server path /billing is folded into its endpoints; commit 5 is unreadable, so version 4 is
    # commit 6 and carries commit 5's removal of DELETE /items/{id}
    assert got == [
        (0, "DELETE /items/{id}", added, "info"),
        (0, "GET /items", added, "info"),
        (0, "POST /items", added, "info"),
        (1, "GET /billing/items", added, "info"),
        (1, "POST /billing/invoices", added, "info"),
        (1, "POST /items", [("request_added", "body.color", False)], "info"),
        (2, "POST /items", [("request_removed", "body.price", True)], "none"),  # undone the next version:
        (3, "POST /items", [("request_added", "body.price", True)], "none"),  # a glitch, both ways
        (4, "DELETE /items/{id}", [("endpoint_removed", "", False)], "breaking"),
        (4, "GET /items", [("request_type_narrowed", "query.limit", False)], "breaking"),
        (4, "POST /billing/invoices", [("endpoint_deprecated", "", False)], "warning"),
        (5, "GET /billing/items", [("request_type_widened", "query.customer", False)], "info"),
        (
            5,
            "POST /items",
            [("request_optional", "body.name", False), ("request_deprecated", "body.price", False)],
            "warning",
        ),
    ]
    assert [line["breaking"] for line in lines] == [line["level"] == "breaking" for line in lines]
    assert [line["commit"] for line in lines if line["version"] == 4][0] == commits[5]
    assert lines[9]["changes"][0]["detail"] == "integer -> string"
    post = lines[-1]
    assert post["request"] == [
        {"name": "color", "in": "body", "type": "string", "required": False, "enum": [], "deprecated": False},
        {"name": "name", "in": "body", "type": "string", "required": False, "enum": [], "deprecated": False},
        {"name": "price", "in": "body", "type": "integer", "required": False, "enum": [], "deprecated": True},
    ]
    assert post["response"] == [] and post["api_version"] == ""
    assert lines[8]["removed"] and lines[8]["request"] == []
    counts = meta["counts"]
    assert (counts["versions"], counts["readable"], counts["unreadable"]) == (7, 6, 1)
    assert counts["unreadable_commits"][0][0] == commits[4]
    assert (counts["read_from_twin_invalid"], counts["read_from_twin_missing"]) == (1, 0)
    assert (counts["lines"], counts["breaking_lines"], counts["glitch_changes"]) == (13, 2, 2)
    assert counts["levels"] == {"breaking": 2, "warning": 2, "info": 7, "none": 2}
    assert counts["text_only_deprecations"] == {"request": 1}
    assert meta["rows"] == 13 and meta["kind"] == "git" and meta["commits"]["first"] == commits[0]
    assert meta["spec"] == ["specs/*", "api"]
    assert [version[3] for version in meta["versions"]] == [0, 1, 2, 3, 4, 5]


def test_reimport_is_byte_identical_and_relabels(imported, product_repo, tmp_path):
    repo, _ = product_repo
    out, lines, _meta = imported
    again = tmp_path / "again.jsonl.gz"
    assert (
        main(
            [
                "import-openapi",
                os.fspath(repo),
                "--spec",
                SPEC_PATTERNS,
                "--out",
                os.fspath(again),
                "--processes",
                "1",
                "--quiet",
            ]
        )
        == 0
    )
    assert again.read_bytes() == out.read_bytes()
    assert openapi_import.relabel(lines) == lines


def test_episodes_from_the_history(imported):
    """Utility by level, criticality, facts and the visible-only priority of each step, by hand (module note of
    wpbjax.episodes.importers.real_drift): t is the line's position."""
    out, _lines, _ = imported
    (episode,) = real_drift.episodes(os.fspath(out), steps=13)
    labels, steps = episode["labels"], episode["steps"]
    assert labels["episode_id"] == "products:13:0"
    assert labels["critical_steps"] == [8, 9] and labels["total_drift_events"] == 2
    # info 0.25, glitches 0, breaking 1, warning 0.5 (the lines' levels above)
    assert [labels["utility_by_step"][str(t)] for t in range(13)] == [0.25] * 6 + [0.0, 0.0, 1.0, 1.0, 0.5, 0.25, 0.5]
    # t=6 drops a request property: breaking as far as anyone could see then (its glitch is known a version later)
    assert [step["metadata"]["priority"] for step in steps] == [0.25] * 6 + [1.0, 0.25, 1.0, 1.0, 0.5, 0.25, 0.5]
    assert labels["facts"]["6"] == [["POST /items", 2, False]] and labels["facts"]["8"] == [
        ["DELETE /items/{id}", 4, True]
    ]
    assert steps[12]["observation"] == {
        "api": "POST /items",
        "deprecated": False,
        "request": {"body.color": "string?", "body.name": "string?", "body.price": "integer? (deprecated)"},
        "response": {},
    }
    assert steps[8]["observation"] == {"api": "DELETE /items/{id}", "removed": True}
    windows = real_drift.episodes(os.fspath(out), steps=5, stride=4)
    assert [w["labels"]["episode_id"] for w in windows] == ["products:5:0", "products:5:4", "products:5:8"]


def test_directory_of_dated_versions(tmp_path):
    """The same kind of history as dated directories (no git): renamed file, YAML twin."""
    root = tmp_path / "versions"
    (root / "2021-05-01").mkdir(parents=True)
    (root / "2021-05-01" / "openapi.json").write_text(json.dumps(CORE))
    (root / "2021-06-01T08:00").mkdir()
    (root / "2021-06-01T08:00" / "spec.yaml").write_text(_yaml(_edit(CORE, lambda d: d["paths"].pop("/items/{id}"))))
    (root / "notes").mkdir()
    lines, meta = openapi_import.import_history(os.fspath(root), "spec.json,openapi.json", processes=1)
    assert [(line["version"], line["commit"], line["endpoint"], _kinds(line)) for line in lines][-1] == (
        1,
        "2021-06-01T08:00",
        "DELETE /items/{id}",
        [("endpoint_removed", "", False)],
    )
    assert lines[-1]["date"] == "2021-06-01T08:00:00Z" and meta["kind"] == "directory"


def _fails(capsys, tmp_path, source, spec, *needles):
    out = tmp_path / "bad.jsonl.gz"
    assert main(["import-openapi", os.fspath(source), "--spec", spec, "--out", os.fspath(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    assert os.listdir(tmp_path) == [name for name in os.listdir(tmp_path) if "bad" not in name]
    return err


def test_bad_input(product_repo, tmp_path, capsys):
    repo, _commits = product_repo
    (tmp_path / "plain").mkdir()
    _fails(capsys, tmp_path, tmp_path / "plain", "api.yaml", "not a git repository", os.fspath(tmp_path / "plain"))
    _fails(capsys, tmp_path, tmp_path / "missing", "api.yaml", "no such file")
    _fails(capsys, tmp_path, repo, "openapi/spec3.json", "no commit has a file matching", "openapi/spec3")


def test_invalid_version_without_twin(tmp_path, capsys):
    repo = tmp_path / "broken"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", repo], check=True)
    _commit(repo, 1, {"spec.json": json.dumps(CORE)}, "good")
    bad = _commit(repo, 2, {"spec.json": '{"openapi": "3.0.0", "paths": {'}, "cut")
    _fails(capsys, tmp_path, repo, "spec.json", os.fspath(repo), f"commit {bad}", "file spec.json", "not valid JSON")


def test_every_version_unreadable_is_an_empty_history(tmp_path, capsys):
    repo = tmp_path / "empty"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", repo], check=True)
    first = _commit(repo, 1, {"spec.yaml": _yaml(CORE)}, "only version")
    blob = subprocess.run(
        ["git", "-C", repo, "rev-parse", f"{first}:spec.yaml"], check=True, capture_output=True, text=True
    ).stdout.strip()
    os.remove(repo / ".git" / "objects" / blob[:2] / blob[2:])
    _fails(capsys, tmp_path, repo, "spec.yaml", f"commit {first}", "file spec", "no readable version")
