"""The published WritePolicyBench generator, draw for draw (SEMANTICS §6).

Episode ``i`` of a set uses ``random.Random(seed + i)``; the order of random draws is part of
the contract, so its JSONL is byte-identical to the published frozen files.
"""

from __future__ import annotations

import dataclasses
import random

MODES = ("default", "burst_drift", "redundancy", "burst_redundancy")


@dataclasses.dataclass(frozen=True)
class DriftConfig:
    """Every knob of the published generator, with its defaults."""

    mode: str = "default"
    steps: int = 200
    api_pool: int = 8
    drift_prob: float = 0.08
    max_params: int = 6
    seed: int = 0
    burst_interval: int = 50
    burst_len: int = 8
    burst_drift_prob: float = 0.6
    redundancy_prob: float = 0.7

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1; got {self.steps}")
        if self.api_pool < 1:
            raise ValueError(f"api_pool must be >= 1; got {self.api_pool}")
        if self.max_params < 2:
            raise ValueError(f"max_params must be >= 2 (endpoints draw randint(2, max_params)); got {self.max_params}")
        if self.burst_interval < 0 or self.burst_len < 0:
            raise ValueError("burst_interval and burst_len must be >= 0")
        for name in ("drift_prob", "burst_drift_prob", "redundancy_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1]; got {value}")


def draw_episode(config: DriftConfig, episode_id: int) -> tuple[list[int], list[tuple[int, bool, bool, bool]]]:
    """The random draws of episode ``episode_id``, in the published order, from
    ``random.Random(config.seed + episode_id)``: (initial param count per endpoint, and per step
    (endpoint, drift, coin, deprecated)). ``coin`` says pop rather than push on a drift (a pop of
    an empty list pushes instead); ``coin`` and ``deprecated`` are False without a drift.
    Both :func:`generate_episode` and the array path (:mod:`wpbjax.episodes.generators.published_arrays`) replay these."""
    rng = random.Random(config.seed + episode_id)
    bursty = config.mode in ("burst_drift", "burst_redundancy")
    redundant = config.mode in ("redundancy", "burst_redundancy")
    n_initial = [rng.randint(2, config.max_params) for _ in range(config.api_pool)]
    draws, endpoint, uniform, bits = [], 0, rng.random, rng.getrandbits
    n_apis, width = config.api_pool, config.api_pool.bit_length()
    burst_interval, burst_len, redundancy_prob = config.burst_interval, config.burst_len, config.redundancy_prob
    drift_prob, burst_drift_prob = config.drift_prob, config.burst_drift_prob
    for t in range(config.steps):
        in_burst = burst_interval > 0 and (t % burst_interval) < burst_len
        if not (redundant and t > 0 and uniform() < redundancy_prob):  # else: the previous step's endpoint again
            # rng.randrange(n_apis), inlined (its draws exactly: CPython's getrandbits rejection loop);
            # the generator is Python-bound, and this call is a large share of it
            endpoint = bits(width)
            while endpoint >= n_apis:
                endpoint = bits(width)
        drift = uniform() < (burst_drift_prob if bursty and in_burst else drift_prob)
        if drift:
            coin = uniform() < 0.5
            draws.append((endpoint, True, coin, uniform() < 0.3))
        else:
            draws.append((endpoint, False, False, False))
    return n_initial, draws


def generate_episode(config: DriftConfig, episode_id: int) -> dict:
    """One episode as a dict, drawing from ``random.Random(config.seed + episode_id)``."""
    mode = config.mode
    bursty = mode in ("burst_drift", "burst_redundancy")
    redundant = mode in ("redundancy", "burst_redundancy")
    n_initial, draws = draw_episode(config, episode_id)
    versions = [1] * config.api_pool
    params = [[f"p{endpoint}_{k}" for k in range(count)] for endpoint, count in enumerate(n_initial)]

    steps, critical, utility_by_step, utilities = [], [], {}, []
    for t, (endpoint, drift, coin, deprecated) in enumerate(draws):
        in_burst = config.burst_interval > 0 and (t % config.burst_interval) < config.burst_len
        if drift:
            versions[endpoint] += 1
            if coin and params[endpoint]:
                params[endpoint].pop()
            else:
                params[endpoint].append(f"p{endpoint}_{versions[endpoint]}")
        api = f"api.v{versions[endpoint]}.endpoint_{endpoint}"
        observation = {
            "api": api,
            "params": list(params[endpoint]),
            "deprecated": deprecated,
            "version": versions[endpoint],
        }
        if drift:
            utility = 6.0 if bursty and in_burst else 5.0
            critical.append(t)
        else:
            # Quirk kept: the published code means "repeat of the previous endpoint" but its
            # comparison is always true, so every redundant-mode step after the first is 0.5.
            utility = 0.5 if redundant and t > 0 else 1.0
        priority = min(max(utility / 6.0, 0.0), 1.0)
        steps.append({"metadata": {"mode": mode, "priority": priority}, "observation": observation, "t": t})
        # Int keys on purpose: json.dumps(sort_keys=True) then orders them numerically, as the
        # published files do; on disk (and after loading) they are strings.
        utility_by_step[t] = utility
        utilities.append(utility)

    labels = {
        "episode_id": episode_id,
        "mode": mode,
        "critical_steps": critical,
        "total_drift_events": len(critical),
        "utility_by_step": utility_by_step,
        "max_utility": sum(utilities),
    }
    return {"labels": labels, "steps": steps}


def generate_episodes(config: DriftConfig, n_episodes: int) -> list[dict]:
    """Episodes ``0 .. n_episodes-1`` of one set."""
    if n_episodes < 1:
        raise ValueError(f"n_episodes must be >= 1; got {n_episodes}")
    return [generate_episode(config, i) for i in range(n_episodes)]


def paper_filename(config: DriftConfig, n_episodes: int) -> str:
    """The published file name for a set, e.g. ``episodes__schema=priority_v1__mode=default__...jsonl``."""
    return (
        f"episodes__schema=priority_v1__mode={config.mode}__seed={config.seed}"
        f"__steps={config.steps}__n={n_episodes}.jsonl"
    )
