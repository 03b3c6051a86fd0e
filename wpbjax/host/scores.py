"""Per-step scores computed once (a classifier, a model call), cached on disk, and read by JAX policies.

``score_steps(fn, episodes, cache="scores.jsonl")`` calls ``fn(step) -> float`` once per step (``step``: the
:class:`wpbjax.host.Step` a policy on ``track`` sees), or ``fn([step, ...]) -> [float, ...]`` on batches of
``batch`` steps. Each score is appended to ``cache`` as one JSON line ``{"episode": ID, "t": T, "score": S}``
(ID: the episode's ``mode/episode_id``) the moment it is known, so a run killed or rate-limited midway resumes where it stopped and never asks
``fn`` again for a step the cache holds (a line torn by a kill is dropped on the next open). The result,
:class:`Scores`, is an episode array ([N, T]) that the scored policies (:mod:`wpbjax.policies.scored`)
read as a per-run input, their ``threshold`` swept like any param.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

import numpy as np

from wpbjax.common.tracks import cost_track
from wpbjax.host.drive import PolicyError
from wpbjax.host.run import episode_key, prepare_episodes
from wpbjax.host.store import make_step
from wpbjax.runtime.progress import Progress

SYNC_EVERY = 256  # scores appended between fsyncs (and at close)


class ScoreCache:
    """The scores on disk: (episode id, t) -> score, appended line by line."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = None if path is None else os.fspath(path)
        self.scores: dict[tuple, float] = {}
        self._fd, self._unsynced = None, 0
        if self.path is None:
            return
        if os.path.exists(self.path):
            self._load()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _load(self) -> None:
        with open(self.path, "rb") as handle:
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line torn by a kill has no newline: drop it
        if len(complete) < len(data):
            with open(self.path, "r+b") as handle:
                handle.truncate(len(complete))
        for number, line in enumerate(complete.decode().splitlines(), 1):
            try:
                record = json.loads(line)
                self.scores[str(record["episode"]), int(record["t"])] = float(record["score"])
            except (ValueError, KeyError, TypeError):
                raise PolicyError(f"{self.path}:{number}: not a score line ({line[:80]!r})") from None

    def put(self, episode, t: int, score: float) -> None:
        self.put_many([(episode, t, score)])

    def put_many(self, entries: list[tuple]) -> None:
        """(episode id, t, score) of each entry, in one append (one system call per scorer batch)."""
        lines, names = [], {}
        for episode, t, score in entries:
            self.scores[str(episode), int(t)] = score
            name = names.get(episode) or names.setdefault(episode, json.dumps(str(episode)))
            lines.append(f'{{"episode": {name}, "t": {int(t)}, "score": {float(score)!r}}}\n')
        if self._fd is None:
            return
        os.write(self._fd, "".join(lines).encode())
        self._unsynced += len(lines)
        if self._unsynced >= SYNC_EVERY:
            os.fsync(self._fd)
            self._unsynced = 0

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


@dataclasses.dataclass
class Scores:
    """Every step's score: ``values`` [N, T] float32 (0 on padding), rows in the episodes' encoded order."""

    values: np.ndarray
    keys: list  # [N] episode_key of each row (on ``track``'s costs)
    calls: int  # calls of ``fn`` this run made (0: every score came from the cache)
    episodes: object = None  # the episodes scored, encoded: ``wj.sweep(scores.episodes, ...)`` loads them once

    def plan(self, write_cost, utility, length, budgets) -> dict:
        """The per-run input ``score`` [n, B, T] of a sweep chunk (looked up by episode content)."""
        rows = {key: row for key, row in zip(self.keys, self.values)}
        out = []
        for n in range(len(length)):
            row = rows.get(episode_key(write_cost[n], utility[n], int(length[n])))
            if row is None:
                raise PolicyError(f"episode {n} of the sweep: no scores for it (score_steps ran on other episodes)")
            out.append(np.broadcast_to(row, (len(budgets),) + row.shape))
        return {"score": np.stack(out)}

    def register(self, name: str) -> list[str]:
        """Register ``scored_threshold_NAME``, ``scored_recency_NAME`` and ``scored_greedy_NAME`` (replacing
        earlier ones of that name): the policy names a sweep takes."""
        from wpbjax.policies.registry import register
        from wpbjax.policies.scored import scored_policies

        policies = scored_policies(self.plan, name)
        for policy in policies.values():
            register(policy, replace=True)
        return [policy.name for policy in policies.values()]


def score_steps(
    fn,
    episodes=None,
    cache=None,
    track: str = "unprivileged",
    batch: int | None = None,
    quiet: bool = True,
    **generated,
) -> Scores:
    """``fn``'s score of every step of ``episodes`` (paths, ``real:`` / ``changelog:`` specs, an
    EpisodeSource, dict episodes, or None to generate: ``generated`` as :func:`wpbjax.api.sweep`'s), through
    the ``cache`` file (module note). A score must be a finite number; anything else is a PolicyError
    naming the episode and t."""
    host_episodes, encoded, _ = prepare_episodes(episodes, **generated)
    from wpbjax.host.run import dict_episodes

    dicts = host_episodes if isinstance(host_episodes, list) else dict_episodes(host_episodes)
    store = ScoreCache(cache)
    costs = encoded.track_costs(cost_track(track))  # each step's write cost on the track, as the engine's
    values = np.zeros(encoded.arrays.valid.shape, np.float32)
    todo = []  # (n, pos, episode id, step) not in the cache
    ids = [f"{encoded.mode[n]}/{encoded.episode_id[n]}" for n in range(len(dicts))]  # ids repeat across modes
    if len(set(ids)) < len(ids):
        repeated = next(name for name in ids if ids.count(name) > 1)
        raise PolicyError(f"episodes: two episodes are {repeated} (mode/episode_id); the score cache keys by it")
    for n, episode in enumerate(dicts):
        episode_id = ids[n]
        for pos, raw in enumerate(episode["steps"]):
            cached = store.scores.get((str(episode_id), int(raw["t"])))
            if cached is None:
                todo.append((n, pos, episode_id, make_step(raw, track, int(costs[n, pos]))))
            else:
                values[n, pos] = cached
    size = batch or 1
    try:
        with Progress(len(todo), enabled=not quiet) as progress:
            for first in range(0, len(todo), size):
                part = todo[first : first + size]
                got = _call(fn, [entry[3] for entry in part], batch is not None, part)
                for (n, pos, _, _), score in zip(part, got):
                    values[n, pos] = score
                store.put_many([(entry[2], entry[3].t, score) for entry, score in zip(part, got)])
                progress.advance(len(part), "scored")
    finally:
        store.close()
    keys = [episode_key(costs[n], encoded.utility64[n], int(encoded.arrays.length[n])) for n in range(len(dicts))]
    return Scores(values=values, keys=keys, calls=len(todo), episodes=encoded)


def _call(fn, steps: list, batched: bool, part: list) -> list[float]:
    first = part[0]
    where = f"episode {first[2]}, t={first[3].t}"
    try:
        got = list(fn(steps)) if batched else [fn(steps[0])]
    except PolicyError:
        raise
    except Exception as err:
        raise PolicyError(f"{where}: the scorer raised {type(err).__name__}: {err}") from err
    if len(got) != len(steps):
        raise PolicyError(f"{where}: the scorer returned {len(got)} scores for {len(steps)} steps")
    scores = []
    for (_, _, episode_id, step), score in zip(part, got):
        try:
            value = float(score)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise PolicyError(f"episode {episode_id}, t={step.t}: the scorer returned {score!r}, not a finite number")
        scores.append(value)
    return scores
