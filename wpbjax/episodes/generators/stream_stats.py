"""Statistics of an episode stream, label-light and source-blind: the numbers that say how a real drift
stream (``real:stripe``) differs from a generator's, and that a generator's knobs are fitted to.

Everything is computed from an :class:`~wpbjax.episodes.batch.EncodedEpisodes` (host numpy, no loop over
steps or episodes), so a real window and a JAX-generated episode are measured by the same code. Over the
valid steps of all episodes (N episodes, T steps):

* ``drift_rate``: fraction of steps whose endpoint was seen earlier in the episode and whose observation
  differs from that endpoint's last one (api string or any field value): the steps that carry a change.
* ``redundancy``: fraction of steps whose endpoint was seen earlier and whose observation is identical to
  its last one: the steps that carry nothing new. (The remaining steps are first sightings.)
* ``critical_fraction``: fraction of steps that are critical (labels).
* ``burstiness``: Goh & Barabási's B = (sigma - mu) / (sigma + mu) of the gaps (in steps) between
  consecutive critical steps of an episode, pooled over episodes: 0 for a Poisson stream, -1 for a
  periodic one, towards 1 when critical steps come in clumps (a release breaking many endpoints at once).
* ``bytes_per_step``: mean write cost on the unprivileged track (what a write really spends).
* ``endpoints``: mean number of distinct endpoints per episode (how wide the API an episode touches).

An *endpoint* is the api with its version segment removed (``EpisodeBatch.endpoint_index``, so a
synthetic drift ``api.v2.endpoint_3 -> api.v3.endpoint_3`` is a change of one endpoint), the api itself
where a source has no version segment.
"""

from __future__ import annotations

import numpy as np

from wpbjax.common.constants import NONE
from wpbjax.common.tracks import TRACKS

STATS = ("drift_rate", "redundancy", "critical_fraction", "burstiness", "bytes_per_step", "endpoints")
COST_TRACK = "unprivileged"


def _endpoint(arrays) -> np.ndarray:
    """[N, T] int32 the step's endpoint in its episode (NONE: no api)."""
    return np.asarray(arrays.api_index if arrays.endpoint_index is None else arrays.endpoint_index)


def repeat_flags(arrays) -> tuple[np.ndarray, np.ndarray]:
    """([N, T] bool seen: the step's endpoint was seen earlier in its episode, [N, T] bool same: and its
    observation equals that endpoint's last observation) of an :class:`EpisodeBatch` (``encoded.arrays``).
    Steps with no api are neither."""
    valid = np.asarray(arrays.valid)
    n_episodes, n_steps = valid.shape
    endpoint = _endpoint(arrays)
    # one row per step: the observation's identity (api id, then each field's value id and presence)
    identity = np.concatenate(
        [
            np.asarray(arrays.api_id)[..., None],
            np.asarray(arrays.field_value),
            np.asarray(arrays.field_present).astype(np.int32),
        ],
        axis=-1,
    )
    identity = identity.reshape(n_episodes * n_steps, -1)
    episode = np.repeat(np.arange(n_episodes), n_steps)
    flat_endpoint = endpoint.reshape(-1)
    usable = valid.reshape(-1) & (flat_endpoint != NONE)
    rows = np.flatnonzero(usable)
    # stable sort by (episode, endpoint): within a group the steps stay in time order, so each row's
    # predecessor in the sorted order is the same endpoint's previous observation
    order = rows[np.lexsort((rows, flat_endpoint[rows], episode[rows]))]
    same_group = np.zeros(order.size, bool)
    same_group[1:] = (episode[order[1:]] == episode[order[:-1]]) & (
        flat_endpoint[order[1:]] == flat_endpoint[order[:-1]]
    )
    equal = np.zeros(order.size, bool)
    equal[1:] = np.all(identity[order[1:]] == identity[order[:-1]], axis=1)
    seen = np.zeros(n_episodes * n_steps, bool)
    same = np.zeros(n_episodes * n_steps, bool)
    seen[order] = same_group
    same[order] = same_group & equal
    return seen.reshape(n_episodes, n_steps), same.reshape(n_episodes, n_steps)


def burstiness(critical: np.ndarray, valid: np.ndarray) -> float:
    """B of the gaps between consecutive critical steps within each episode, pooled; NaN with < 2 gaps.
    critical, valid: [N, T] bool (positions count valid steps only, so padding adds no gap)."""
    position = np.cumsum(valid, axis=1)  # [N, T] the step's number among valid steps
    episode, step = np.nonzero(critical & valid)  # row-major: episodes in order, steps ascending
    where = position[episode, step]
    gaps = np.diff(where)[episode[1:] == episode[:-1]]
    if gaps.size < 2:
        return float("nan")
    mean, spread = gaps.mean(), gaps.std()
    return float((spread - mean) / (spread + mean))


def stream_stats(encoded) -> dict:
    """The module's statistics of an encoded episode set (floats; see the module note)."""
    arrays = encoded.arrays
    valid = np.asarray(arrays.valid)
    n_steps = int(valid.sum())
    seen, same = repeat_flags(arrays)
    critical = np.asarray(arrays.critical) & valid
    cost = np.asarray(arrays.write_cost)[..., TRACKS.index(COST_TRACK)]
    endpoint = _endpoint(arrays)
    # distinct endpoints per episode: count each (episode, endpoint) pair once
    n_episodes = valid.shape[0]
    pairs = np.unique(np.stack([np.nonzero(valid)[0], endpoint[valid]], axis=1), axis=0)
    pairs = pairs[pairs[:, 1] != NONE]
    return {
        "drift_rate": float((seen & ~same).sum() / n_steps),
        "redundancy": float(same.sum() / n_steps),
        "critical_fraction": float(critical.sum() / n_steps),
        "burstiness": burstiness(critical, valid),
        "bytes_per_step": float(cost[valid].astype(np.int64).sum() / n_steps),
        "endpoints": float(len(pairs) / n_episodes),
    }
