"""Regret over time: at each step, the best utility any subset of the steps so far could keep within
the budget (oracle-to-date) minus the utility the policy's store retains after that step
(retained-to-date). The spec's cumulative regret curve; its last point is the run's regret before
clipping at 0 (merges can retain more than the write-cost knapsack, so a point can be negative).

The oracle-to-date is exact: the DP over value of :mod:`wpbjax.scoring.oracle`, read off after every item
(utilities on a grid of 2^-k, as the paper's are), else a float64 DP over capacity.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from wpbjax.common.tracks import cost_track, sees_utility
from wpbjax.core import rollout
from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.policies import make
from wpbjax.scoring import oracle as oracle_lib


@functools.partial(jax.jit, static_argnums=4)
def _prefix_best_units(weights, value_units, valid, budgets, n_values):
    """[N, T, B] int32: the best value (grid units) of a subset of steps 0..t within each budget.
    weights, value_units: [N, T] int32; valid: [N, T] bool; budgets: [B] int32; n_values = V + 1 (static)."""
    unreachable = jnp.iinfo(jnp.int32).max

    def one_episode(weights, value_units, valid):
        def add_item(least, item):
            least = oracle_lib.add_to_least_weight(least, *item)
            # least[v] = least weight reaching a value >= v: non-decreasing in v, so the best value
            # within budget b is the last v whose least weight fits
            least = jax.lax.cummin(least, axis=0, reverse=True)
            return least, jnp.searchsorted(least, budgets, side="right").astype(jnp.int32) - 1

        start = jnp.full(n_values, unreachable, jnp.int32).at[0].set(0)
        return jax.lax.scan(add_item, start, (weights, value_units, valid))[1]

    return jax.vmap(one_episode)(weights, value_units, valid)


def prefix_oracle(weights: np.ndarray, values: np.ndarray, lengths: np.ndarray, budgets: Sequence[int]) -> np.ndarray:
    """Exact knapsack optimum over the steps up to each t, for every budget: [N, T, B] float64.

    ``weights``: [N, T] int (one track's write costs); ``values``: [N, T] float64 (u_t); padding
    beyond ``lengths`` adds nothing. Row t = T-1 equals :func:`wpbjax.scoring.oracle.exact_batch`.
    """
    budgets = np.asarray(budgets, np.int64)
    valid = np.arange(weights.shape[1])[None, :] < np.asarray(lengths)[:, None]
    positive = np.where(valid & (values > 0), values, 0.0)
    quantum = oracle_lib.value_grid(positive)
    if quantum is not None:
        units = np.round(positive / quantum).astype(np.int64)
        n_values = int(units.sum(axis=1).max()) + 1
        if n_values <= oracle_lib.MAX_VALUE_CELLS:
            best = _prefix_best_units(
                jnp.asarray(weights, jnp.int32),
                jnp.asarray(units, jnp.int32),
                jnp.asarray(valid),
                jnp.asarray(np.minimum(budgets, 2**31 - 1), jnp.int32),
                n_values,
            )
            return np.asarray(best, np.float64) * quantum
    out = np.zeros(weights.shape + (len(budgets),), np.float64)
    capacity = int(budgets.max())
    for n in range(weights.shape[0]):  # off-grid utilities: float64 DP over capacity, read after each item
        best = np.zeros(capacity + 1, np.float64)
        for t in range(weights.shape[1]):
            weight, value = int(weights[n, t]), float(positive[n, t])
            if 0 < weight <= capacity and value > 0:
                best[weight:] = np.maximum(best[weight:], best[:-weight] + value)
            out[n, t] = best[budgets]
    return out


def retained_to_date(retained_bits: np.ndarray, utility64: np.ndarray) -> np.ndarray:
    """Σ u_t over the retained set after each step: [N, B, T] float64 from trace bits
    [N, B, T, ceil(T/8)] and ``utility64`` [N, T]."""
    n_steps = utility64.shape[-1]
    kept = np.unpackbits(retained_bits, axis=-1, count=n_steps).astype(bool)
    return np.where(kept, utility64[:, None, None, :], 0.0).sum(axis=-1)


def regret_curves(
    encoded: EncodedEpisodes, track: str, policies: Sequence[str], budgets: Sequence[int], params: dict | None = None
) -> pd.DataFrame:
    """One row per (policy, budget, episode, real step): ``oracle_to_date``, ``retained_to_date`` and
    ``regret_to_date`` (their difference), with ``mode``, ``episode_id``, ``track``.

    ``params``: policy name -> param overrides. Runs use the same keys as a sweep over ``encoded``.
    """
    budgets = np.asarray(budgets, np.int64)
    costs = cost_track(track)  # feedback and oracle see and pay the unprivileged track's metadata
    host = encoded.host_batch(costs)
    if not sees_utility(track):  # as in a sweep: policies on these tracks cannot read the hidden utility
        host = dataclasses.replace(host, utility=np.zeros_like(host.utility))
    batch = jax.device_put(host)
    lengths = encoded.arrays.length
    oracle = prefix_oracle(encoded.track_costs(costs), encoded.utility64, lengths, budgets)  # [N, T, B]
    n_episodes, n_steps = encoded.utility64.shape
    real = np.arange(n_steps)[None, :] < lengths[:, None]  # [N, T]
    frames = []
    for name in policies:
        policy = make(name)
        run_inputs = None
        if policy.plan is not None:  # hindsight: from the exact float64 utilities, as a sweep plans
            run_inputs = policy.plan(encoded.track_costs(costs), encoded.utility64, lengths, budgets)
        trace = rollout.step_traces(
            policy,
            batch,
            budgets,
            params=(params or {}).get(name),
            episode_index=np.arange(n_episodes),
            run_inputs=run_inputs,
        )
        kept_utility = retained_to_date(np.asarray(trace.retained), encoded.utility64)  # [N, B, T]
        for b, budget in enumerate(budgets.tolist()):
            episode, step = np.nonzero(real)
            frames.append(
                pd.DataFrame(
                    {
                        "track": track,
                        "policy": name,
                        "budget_bytes": budget,
                        "mode": np.asarray(encoded.mode, object)[episode],
                        "episode_id": np.asarray(encoded.episode_id, object)[episode],
                        "episode": episode,
                        "step": step,
                        "oracle_to_date": oracle[episode, step, b],
                        "retained_to_date": kept_utility[episode, b, step],
                    }
                )
            )
    table = pd.concat(frames, ignore_index=True)
    table["regret_to_date"] = table["oracle_to_date"] - table["retained_to_date"]
    return table
