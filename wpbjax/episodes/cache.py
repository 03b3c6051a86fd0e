"""An on-disk cache of encoded episode sets that take a while to rebuild, so that a second sweep of the same
set starts at once: a real API history's windows (reading, streaming and encoding tens of thousands of
surfaces) and the published generator's sets of up to MAX_GENERATED_EPISODE_STEPS (larger ones would fill
the disk faster than they save time; they are generated on every core instead).

An entry is keyed by everything its arrays depend on: the input file's SHA-256 or the generator's configs,
the set's parameters (the caller's ``key``), and the source of the code that builds it (every module of
:mod:`wpbjax.episodes` and its subpackages, and :mod:`wpbjax.common.tracks` and
:mod:`wpbjax.common.constants`): a changed input or a changed encoder is a new key, never a stale entry.
Entries live in ``$WPBJAX_EPISODE_CACHE`` (default ``~/.cache/wpbjax/episodes``; set it empty to turn the
cache off), written to a temporary file and renamed into place, so a killed run
leaves no partial entry; an entry that cannot be read is rebuilt, and one that cannot be written is skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable

ENV = "WPBJAX_EPISODE_CACHE"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A generated set is kept when it has at most this many episode-steps: larger sets would fill the disk
# faster than reading them back saves time (entry sizes: docs/performance.md, "Episode cache").
MAX_GENERATED_EPISODE_STEPS = 2_000_000


def cache_dir() -> str | None:
    """Where entries live, or None when the cache is off (``$WPBJAX_EPISODE_CACHE`` empty)."""
    path = os.environ.get(ENV, os.path.join(os.path.expanduser("~"), ".cache", "wpbjax", "episodes"))
    return path or None


def digested_paths() -> list[str]:
    """The source files an encoded set depends on: every module under wpbjax/episodes, and two of common/."""
    episodes = os.path.join(_PACKAGE, "episodes")
    paths = sorted(
        os.path.join(folder, name) for folder, _, names in os.walk(episodes) for name in names if name.endswith(".py")
    )
    return paths + [os.path.join(_PACKAGE, "common", "tracks.py"), os.path.join(_PACKAGE, "common", "constants.py")]


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 of the source of every module an encoded set depends on (:func:`digested_paths`)."""
    digest = hashlib.sha256()
    for path in digested_paths():
        with open(path, "rb") as handle:
            digest.update(os.path.relpath(path, _PACKAGE).encode() + b"\0" + handle.read())
    return digest.hexdigest()


def entry_path(key: dict) -> str | None:
    """The file of the entry for ``key`` (JSON-able), or None when the cache is off:
    ``KEY-CODE.pkl``, the digests of the key and of the code."""
    folder = cache_dir()
    if folder is None:
        return None
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return os.path.join(folder, f"{name}-{code_digest()[:16]}.pkl")


def cached(key: dict, build: Callable[[], object]):
    """The value stored for ``key``, or ``build()``'s, stored for the next call."""
    path = entry_path(key)
    if path is not None:
        try:
            with open(path, "rb") as handle:
                return pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            pass  # absent, or unreadable: rebuilt below
    value = build()
    if path is not None:
        _store(path, value)
    return value


def _store(path: str, value) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    except OSError:
        return  # a read-only home: no cache
    try:
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
        _drop_older(path)
    except OSError:
        pass
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _drop_older(path: str) -> None:
    """Remove the entries of the same key built by other code: they can never be read again."""
    folder, name = os.path.split(path)
    key_part = name.split("-")[0]
    for other in os.listdir(folder):
        if other != name and other.startswith(key_part + "-") and other.endswith(".pkl"):
            try:
                os.unlink(os.path.join(folder, other))
            except OSError:
                pass
