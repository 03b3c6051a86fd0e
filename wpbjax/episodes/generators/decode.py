"""The JAX generator's latent → JSON episodes (host), for ``wpbjax generate --engine jax``.

The decoder replays each endpoint's param list (push ``p{j}_{version}``, pop, or revert to the list
before the endpoint's last drift) and writes the observations the arrays describe; encoding its
output gives the same sweep rows as the generated arrays (tests/episodes/test_jax_gen.py).
"""

from __future__ import annotations

import jax
import numpy as np

import wpbjax.episodes.generators.jax_gen as jax_gen
from wpbjax.episodes.generators.jax_gen import (
    API,
    DOC,
    DOC_SECTIONS,
    DOCS_TOUCH,
    GUIDE,
    POP,
    PRIORITY,
    PUSH,
    REORDER,
    REVERT,
    UTILITY,
    VERSION_STRING,
    JaxGenConfig,
)

FILLER = (
    "Requests to this endpoint are authenticated with a bearer token. Responses are JSON objects; "
    "errors carry a code and a message. Pagination uses opaque cursors, and clients should retry "
    "on rate limiting with exponential backoff. "
)


def _date(year: int, code: int) -> str:
    return f"{year}-{1 + code % 12:02d}-{1 + code // 12 % 28:02d}"


def _api(version: int, endpoint: int) -> str:
    return f"api.v{version}.endpoint_{endpoint}"


def _content(n_chars: int, offset: int) -> str:
    repeated = FILLER * (n_chars // len(FILLER) + 2)
    return repeated[offset % len(FILLER) :][:n_chars]


def decode_one(config: JaxGenConfig, latent: dict, code: np.ndarray, critical: np.ndarray, episode_id: int) -> dict:
    """One episode dict from its latent (host numpy arrays without the N axis)."""
    mode, n_apis = config.mode, config.api_pool
    params = [[f"p{j}_{k}" for k in range(int(latent["n_initial"][j]))] for j in range(n_apis)]
    before_last_drift = [None] * n_apis
    versions, docs_rev = [1] * n_apis, [0] * n_apis
    columns = {name: np.asarray(value).tolist() for name, value in latent.items() if name != "n_initial"}
    steps, utility_by_step = [], {}
    for t in range(config.steps):
        endpoint, kind, op = columns["endpoint"][t], columns["kind"][t], columns["op"][t]
        if kind == API:
            if op in (PUSH, POP, REVERT):
                versions[endpoint] += 1
                previous = list(params[endpoint])
                if op == PUSH:
                    params[endpoint].append(f"p{endpoint}_{versions[endpoint]}")
                elif op == POP:
                    params[endpoint].pop()
                else:
                    params[endpoint] = before_last_drift[endpoint]
                before_last_drift[endpoint] = previous if op != REVERT else None
            version = versions[endpoint]
            if version != columns["version"][t]:
                raise AssertionError(f"decode: version mismatch at t={t} ({version} != {columns['version'][t]})")
            listed = list(params[endpoint])
            decoy = columns["decoy"][t]
            if decoy == REORDER:
                listed = listed[1:] + listed[:1]
            observation = {
                "api": _api(version, endpoint),
                "params": listed,
                "deprecated": bool(columns["deprecated"][t]),
                "version": f"{version}.0" if decoy == VERSION_STRING else version,
            }
            if mode in jax_gen.DECOY_MODES:
                docs_rev[endpoint] += decoy == DOCS_TOUCH
                observation["docs_rev"] = docs_rev[endpoint]
        elif kind == DOC:
            section = DOC_SECTIONS[columns["doc_section"][t]]
            observation = {
                "section": f"endpoint_{endpoint}/{section}",
                "content": _content(columns["doc_chars"][t], columns["date"][t] * 7),
                "last_updated": _date(2024, columns["date"][t]),
            }
        else:
            assert kind == GUIDE
            version = versions[endpoint]
            observation = {
                "old_api": _api(version, endpoint),
                "new_api": _api(version + 1, endpoint),
                "deadline": _date(2025, columns["date"][t]),
            }
        step_code = int(code[t])
        steps.append(
            {"metadata": {"mode": mode, "priority": float(PRIORITY[step_code])}, "observation": observation, "t": t}
        )
        utility_by_step[t] = float(UTILITY[step_code])
    critical_steps = np.flatnonzero(critical).tolist()
    n_changes = len(critical_steps) if mode == "docs_migration" else int(np.sum(latent["drift"]))
    labels = {
        "episode_id": episode_id,
        "mode": mode,
        "critical_steps": critical_steps,
        "total_drift_events": n_changes,
        "utility_by_step": utility_by_step,
        "max_utility": float(sum(utility_by_step.values())),
    }
    return {"labels": labels, "steps": steps}


def decode_episodes(config: JaxGenConfig, generated: dict, start: int = 0) -> list[dict]:
    """Episode dicts of :func:`wpbjax.episodes.generators.jax_gen.generate_arrays`' output (episode ids from ``start``)."""
    host = jax.tree_util.tree_map(np.asarray, {name: generated[name] for name in ("latent", "code", "critical")})
    n_episodes = host["code"].shape[0]
    # the latent is step-major (episodes on the last axis)
    return [
        decode_one(
            config,
            {name: value[..., n] for name, value in host["latent"].items()},
            host["code"][n],
            host["critical"][n],
            start + n,
        )
        for n in range(n_episodes)
    ]


def generate_episodes(config: JaxGenConfig, n_episodes: int, chunk: int = 4096) -> list[dict]:
    """Episodes 0..n_episodes-1 as dicts (generated on device, decoded on the host)."""
    episodes = []
    for start in range(0, n_episodes, chunk):
        count = min(chunk, n_episodes - start)
        episodes.extend(decode_episodes(config, jax_gen.generate_arrays(config, count, start), start))
    return episodes
