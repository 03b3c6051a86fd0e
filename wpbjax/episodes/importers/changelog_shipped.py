"""The changelogs shipped in ``wpbjax/data/changelog/`` and how they are rebuilt from a clone, byte for byte.

Each is a project's ``CHANGELOG.md`` at one commit, unchanged but gzip-compressed (no name or timestamp in
the header, so equal text gives equal bytes), with ``FILE.meta.json`` (source, commit, its date, the
licence text at that commit, counts of what :mod:`wpbjax.episodes.importers.changelog` reads) and ``NAME.NOTICE``.
:func:`rebuild` writes all three from a clone (bare or not)::

    python -c "from wpbjax.episodes.importers.changelog_shipped import rebuild; rebuild('stripe-python', 'CLONE', 'DIR')"
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess

from wpbjax.episodes.importers.changelog import parse_changelog
from wpbjax.episodes.importers.changelog_episode import DATA_DIR, SHIPPED

# name -> (repository URL, licence, path of the changelog in the repository, path of the licence)
SOURCES = {
    "stripe-python": ("https://github.com/stripe/stripe-python", "MIT", "CHANGELOG.md", "LICENSE"),
    "openai-python": ("https://github.com/openai/openai-python", "Apache-2.0", "CHANGELOG.md", "LICENSE"),
}


def _git(repo: str, *args: str) -> bytes:
    try:
        return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout
    except subprocess.CalledProcessError as err:
        message = err.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ValueError(f"{repo}: git {' '.join(args)} failed ({message[-1] if message else err})") from None
    except FileNotFoundError:
        raise ValueError("git: not found (rebuilding a shipped changelog reads a clone with git)") from None


def counts(text: str) -> dict:
    """What the parser reads in a changelog's text (the sidecar's ``counts``)."""
    changelog = parse_changelog(text)
    dates = sorted(release.date for release in changelog.releases if release.date)
    return {
        "releases": len(changelog.releases),
        "releases_breaking": len({entry.release for entry in changelog.entries if entry.level == "breaking"}),
        "entries": len(changelog.entries),
        "levels": changelog.level_counts,
        "formats": changelog.formats,
        "styles": changelog.styles,
        "markers": dict(sorted(changelog.marker_counts.items())),
        "first_date": dates[0] if dates else "",
        "last_date": dates[-1] if dates else "",
    }


def shipped_files(name: str, repo: str, commit: str = "HEAD") -> dict:
    """{file name: bytes} of a shipped changelog built from a clone at ``commit`` (module note)."""
    if name not in SOURCES:
        raise ValueError(f"{name}: not a shipped changelog (shipped: {', '.join(SOURCES)})")
    url, licence, changelog_file, licence_file = SOURCES[name]
    sha = _git(repo, "rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    date = _git(repo, "show", "-s", "--format=%cI", sha).decode().strip()
    text = _git(repo, "show", f"{sha}:{changelog_file}")
    licence_text = _git(repo, "show", f"{sha}:{licence_file}").decode("utf-8")
    data = gzip.compress(text, mtime=0)
    file = SHIPPED[name]
    meta = {
        "name": name,
        "file": file,
        "source": url,
        "path": changelog_file,
        "commit": sha,
        "commit_date": date,
        "blob": _git(repo, "rev-parse", f"{sha}:{changelog_file}").decode().strip(),
        "licence": licence,
        "licence_text": licence_text,
        "sha256": hashlib.sha256(data).hexdigest(),
        "counts": counts(text.decode("utf-8")),
    }
    notice = (
        f"wpbjax/data/changelog/{file} is {changelog_file} of {url} at commit {sha} ({date}),\n"
        "unmodified, gzip-compressed. The source is distributed under the following licence "
        f"({licence}):\n\n{licence_text}"
    )
    return {
        file: data,
        f"{file}.meta.json": (json.dumps(meta, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"),
        f"{name}.NOTICE": notice.encode("utf-8"),
    }


def rebuild(name: str, repo: str, out_dir: str = DATA_DIR, commit: str | None = None) -> list[str]:
    """Write a shipped changelog's files from a clone into ``out_dir`` (atomically); ``commit`` defaults to
    the one the shipped sidecar records (else HEAD). Returns the paths written."""
    from wpbjax.files.atomic import atomic_file

    if commit is None:
        recorded = os.path.join(DATA_DIR, SHIPPED.get(name, "") + ".meta.json")
        commit = json.load(open(recorded, encoding="utf-8"))["commit"] if os.path.isfile(recorded) else "HEAD"
    written = []
    for file, data in shipped_files(name, repo, commit).items():
        path = os.path.join(out_dir, file)
        with atomic_file(path, "wb") as handle:
            handle.write(data)
        written.append(path)
    return written
