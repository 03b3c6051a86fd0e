"""Online features of the incoming step, computed inside the scan from what came before (never ahead).

What an observer sees of a step: its observation (api string, the endpoint and version read off it,
the other fields' values by equality), its write cost, the budget and what is left of it, and, on
the privileged track, the priority. Running state per episode (the apis and endpoints seen so far,
each endpoint's last version and last position, the mean write cost so far) lives in the scan carry.

Why these features: a step is critical exactly when its endpoint drifted (SEMANTICS §6), and a
drift shows as a version above the last one seen for that endpoint (v1 for an endpoint not seen yet),
a new api string and changed params. A step can also announce a change without being one: a
migration guide has no api of its own but names the next version of an endpoint already seen
(``names_newer``; documentation pages, also without an api, name none). The cost features let one
gate trade budget for cheaper critical steps when only a few fit.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.episodes.batch import EpisodeBatch

FEATURE_NAMES = (
    "api_new",  # the api string was not seen before in this episode
    "endpoint_new",  # its endpoint (api without the version segment) was not seen before
    "version_up",  # version > the endpoint's last seen version (1 for a new endpoint)
    "version_jump",  # that difference, clipped to [-1, 3], / 3
    "fields_changed",  # fraction of the step's fields whose value differs from the endpoint's last step
    "names_newer",  # a step without an api of its own names a version above its endpoint's last seen one
    "log_cost",  # log(write cost / 200)
    "relative_cost",  # write cost / mean write cost of the steps so far, minus 1
    "remaining_fraction",  # bytes left / budget
    "cost_over_remaining",  # write cost / bytes left, clipped to [0, 2]
    "log_budget",  # (log2(budget) - 14) / 4: about -1 at 1 KB, +1.5 at 1 MB
    "since_write",  # steps since the last stored item, / 50, clipped to 1
    "drift_rate",  # fraction of the steps so far (this one included) with version_up, x 5
    "priority",  # metadata priority (privileged track; 0 on the unprivileged track)
)
N_FEATURES = len(FEATURE_NAMES)
# What the step is (the gate's detection head) vs what writing it costs now (its budget head)
DETECT_FEATURES = ("api_new", "endpoint_new", "version_up", "version_jump", "fields_changed", "names_newer", "priority")
BUDGET_FEATURES = tuple(name for name in FEATURE_NAMES if name not in DETECT_FEATURES)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class FeatureState:
    """Per-episode running state (A = api table size, which bounds the endpoint count too)."""

    api_seen: jax.Array  # [A] bool  api index seen before
    endpoint_seen: jax.Array  # [A] bool  endpoint index seen before
    endpoint_version: jax.Array  # [A] int32 the endpoint's last seen version
    endpoint_last: jax.Array  # [A] int32 position of the endpoint's last step
    cost_sum: jax.Array  # []  float32 sum of the write costs seen so far
    n_seen: jax.Array  # []  float32 steps seen so far
    n_version_up: jax.Array  # []  float32 steps so far whose version went up


def check_batch(episode: EpisodeBatch) -> None:
    """Gates read the endpoint/version arrays; say so clearly when a batch lacks them."""
    if episode.endpoint_index is None or episode.version_number is None:
        raise ValueError(
            "learned gates need EpisodeBatch.endpoint_index and version_number; encode the "
            "episodes with wpbjax.episodes.encode.encode_episodes (or a generator that fills them)"
        )


def init_state(episode: EpisodeBatch) -> FeatureState:
    """Empty running state for one episode (arrays without the N axis)."""
    check_batch(episode)
    n_apis = episode.api_ids.shape[-1]
    return FeatureState(
        api_seen=jnp.zeros(n_apis, bool),
        endpoint_seen=jnp.zeros(n_apis, bool),
        endpoint_version=jnp.zeros(n_apis, jnp.int32),
        endpoint_last=jnp.zeros(n_apis, jnp.int32),
        cost_sum=jnp.zeros((), jnp.float32),
        n_seen=jnp.zeros((), jnp.float32),
        n_version_up=jnp.zeros((), jnp.float32),
    )


def steps_since_write(last_stored, pos) -> jax.Array:
    """[] int32 steps since the last stored item (``last_stored``: its position, NONE before any)."""
    return jnp.where(last_stored >= 0, pos - last_stored, pos + 1)


def step_features(state: FeatureState, episode: EpisodeBatch, pos, budget, remaining, since_write, privileged: bool):
    """Features of step ``pos`` and the running state after it: ``([N_FEATURES] float32, FeatureState)``.

    ``remaining``: bytes left before this step (exact store, or the soft store's expectation);
    ``since_write``: steps since the last stored item. ``privileged`` (static) exposes the priority.
    """
    api, endpoint = episode.api_index[pos], episode.endpoint_index[pos]
    has_api, has_endpoint = api >= 0, endpoint >= 0
    api_slot, endpoint_slot = jnp.maximum(api, 0), jnp.maximum(endpoint, 0)
    api_new = has_api & ~state.api_seen[api_slot]
    endpoint_seen = has_endpoint & state.endpoint_seen[endpoint_slot]
    version = episode.version_number[pos]
    last_version = jnp.where(endpoint_seen, state.endpoint_version[endpoint_slot], 1)
    jump = jnp.where(has_endpoint, version - last_version, 0)
    last = state.endpoint_last[endpoint_slot]
    present = episode.field_present[pos]
    changed = present & (episode.field_value[pos] != episode.field_value[last])
    fields_changed = jnp.where(endpoint_seen, changed.sum() / jnp.maximum(present.sum(), 1), 0.0)
    names_newer = jnp.zeros((), bool)
    if episode.named_endpoint is not None:  # sources without the column name nothing
        named = episode.named_endpoint[pos]
        named_slot = jnp.maximum(named, 0)
        names_newer = (
            (named >= 0)
            & state.endpoint_seen[named_slot]
            & (episode.named_version[pos] > state.endpoint_version[named_slot])
        )

    cost = episode.write_cost[pos].astype(jnp.float32)
    budget = jnp.asarray(budget, jnp.float32)
    remaining = jnp.asarray(remaining, jnp.float32)
    cost_sum, n_seen = state.cost_sum + cost, state.n_seen + 1.0
    n_version_up = state.n_version_up + (jump > 0)
    features = jnp.stack(
        [
            api_new.astype(jnp.float32),
            (has_endpoint & ~endpoint_seen).astype(jnp.float32),
            (jump > 0).astype(jnp.float32),
            jnp.clip(jump, -1, 3).astype(jnp.float32) / 3.0,
            fields_changed.astype(jnp.float32),
            names_newer.astype(jnp.float32),
            jnp.log(jnp.maximum(cost, 1.0) / 200.0),
            cost / (cost_sum / n_seen) - 1.0,
            remaining / jnp.maximum(budget, 1.0),
            jnp.clip(cost / jnp.maximum(remaining, 1.0), 0.0, 2.0),
            (jnp.log2(jnp.maximum(budget, 1.0)) - 14.0) / 4.0,
            jnp.minimum(jnp.asarray(since_write, jnp.float32) / 50.0, 1.0),
            5.0 * n_version_up / n_seen,
            episode.priority[pos] if privileged else jnp.zeros((), jnp.float32),
        ]
    )
    new_state = FeatureState(
        api_seen=state.api_seen.at[api_slot].set(state.api_seen[api_slot] | has_api),
        endpoint_seen=state.endpoint_seen.at[endpoint_slot].set(state.endpoint_seen[endpoint_slot] | has_endpoint),
        endpoint_version=state.endpoint_version.at[endpoint_slot].set(
            jnp.where(has_endpoint, version, state.endpoint_version[endpoint_slot])
        ),
        endpoint_last=state.endpoint_last.at[endpoint_slot].set(jnp.where(has_endpoint, pos, last)),
        cost_sum=cost_sum,
        n_seen=n_seen,
        n_version_up=n_version_up,
    )
    return features, new_state
