"""Hand-built episodes, a scripted policy that emits a given action list, and an encoding comparison, for tests."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.core import rollout
from wpbjax.episodes.encode import encode_episodes
from wpbjax.policies.base import Policy
from wpbjax.runtime import devices as devices_lib
from wpbjax.scoring import metrics
from wpbjax.state import actions, store as store_lib


def make_episode(observations, metadata=None, utilities=None, critical=(), episode_id=0, mode="hand", t_values=None):
    """An episode dict with one step per observation (t = 0, 1, ... unless given)."""
    t_values = list(range(len(observations))) if t_values is None else list(t_values)
    metadata = metadata or [{"mode": mode}] * len(observations)
    utilities = utilities or [1.0] * len(observations)
    steps = [{"metadata": md, "observation": obs, "t": t} for obs, md, t in zip(observations, metadata, t_values)]
    labels = {
        "episode_id": episode_id,
        "mode": mode,
        "critical_steps": list(critical),
        "total_drift_events": len(critical),
        "utility_by_step": {str(t): u for t, u in zip(t_values, utilities)},
    }
    return {"labels": labels, "steps": steps}


def scripted_init(params, episode, key):
    return jnp.zeros((), jnp.int32)  # how many of this step's scripted EXPIREs were emitted


def scripted_act(params, state, store, episode, pos, budget):
    """Emit step ``pos``'s scripted EXPIREs one per call (CONTINUE), then its main action."""
    expiring = state < params["n_expire"][pos]
    slot = params["expire"][pos, jnp.minimum(state, params["expire"].shape[1] - 1)]
    kind, target = params["kind"][pos], params["target"][pos]
    main = actions.select(
        kind == actions.MERGE,
        actions.merge(store_lib.quote_merge(episode, pos, target)),
        actions.Action(
            expire_slots=jnp.full(1, -1, jnp.int32),
            n_expire=jnp.int32(0),
            kind=kind,
            target=target,
            merge_cost=jnp.int32(0),
        ),
    )
    action = actions.select(expiring, actions.expire_and_continue(slot), main)
    return action, jnp.where(expiring, state + 1, 0)


SCRIPTED = Policy(
    "scripted", scripted_act, init=scripted_init, multi_action=True, doc="emits params' per-step actions (tests only)"
)


def scripted_once_act(params, state, store, episode, pos, budget):
    """Emit step ``pos``'s scripted EXPIREs and its main action as one action (K = the script's
    ``max_expires``): a policy that acts once per step."""
    slots, n_expire = params["expire"][pos], params["n_expire"][pos]
    kind, target = params["kind"][pos], params["target"][pos]
    action = actions.select(
        kind == actions.MERGE,
        actions.merge(store_lib.quote_merge(episode, pos, target), slots, n_expire),
        actions.Action(expire_slots=slots, n_expire=n_expire, kind=kind, target=target, merge_cost=jnp.int32(0)),
    )
    return action, state


SCRIPTED_ONCE = Policy("scripted_once", scripted_once_act, doc="params' per-step actions, one call a step (tests only)")


def script(n_steps, plan, max_expires=4):
    """Params for SCRIPTED. ``plan``: {pos: (kind, target, [expire positions, in order])}."""
    kind = np.zeros(n_steps, np.int32)
    target = np.full(n_steps, -1, np.int32)
    expire = np.full((n_steps, max_expires), -1, np.int32)
    n_expire = np.zeros(n_steps, np.int32)
    for pos, (step_kind, step_target, step_expires) in plan.items():
        kind[pos], target[pos] = step_kind, step_target
        expire[pos, : len(step_expires)] = step_expires
        n_expire[pos] = len(step_expires)
    return {
        "kind": jnp.asarray(kind),
        "target": jnp.asarray(target),
        "expire": jnp.asarray(expire),
        "n_expire": jnp.asarray(n_expire),
    }


# The rollouts' quick build (tests run few steps: compiling is most of their time; both builds give the same
# stores, tests/core/test_compile.py)
@functools.partial(jax.jit, static_argnums=0, compiler_options=devices_lib.QUICK_COMPILER_OPTIONS)
def _rollouts(policy, params, batch, budget):
    keys = jax.random.split(jax.random.key(0), batch.n_episodes)
    stores = jax.vmap(lambda episode, key: rollout.rollout(policy, params, episode, budget, key, fast_trace=True))(
        batch, keys
    )
    return stores, jax.vmap(metrics.count)(stores, batch)


def run_one(policy, episode_dicts, budget, track="unprivileged", params=None):
    """Final stores and counts of ``policy`` on each episode at one budget (host numpy).
    Compiles once per (policy, shapes)."""
    encoded = encode_episodes(episode_dicts)
    params = policy.default_params() if params is None else params
    stores, counts = _rollouts(policy, params, encoded.batch(track), np.int32(budget))
    return encoded, jax.tree_util.tree_map(np.asarray, stores), jax.tree_util.tree_map(np.asarray, counts)


def assert_same_encoding(direct, via_json):
    """Two encodings of the same episodes agree on bytes, labels and the equality classes of ids
    (numbering may differ: ids are compared only within an episode)."""
    assert np.array_equal(direct.write_cost, via_json.write_cost)
    assert np.array_equal(direct.utility64, via_json.utility64)
    assert np.array_equal(direct.priority64, via_json.priority64)
    assert np.array_equal(direct.n_critical, via_json.n_critical)
    assert np.array_equal(direct.total_drift_events, via_json.total_drift_events)
    for name in (
        "critical",
        "api_is_str",
        "valid",
        "step_t",
        "t_last",
        "length",
        "version_number",
        "named_version",
        "fact_pair",
        "fact_key",
        "fact_prev",
        "fact_latest",
        "fact_probes",
        "transient",
    ):
        assert np.array_equal(getattr(direct.arrays, name), getattr(via_json.arrays, name)), name
    # ids differ in numbering only: equal ids <=> equal values among steps of one api (all the store compares)
    slots = [via_json.field_keys.index(key) for key in direct.field_keys if key in via_json.field_keys]
    present = via_json.arrays.field_present[:, :, slots]
    assert np.array_equal(direct.arrays.field_present[:, :, : len(slots)], present)
    assert np.array_equal(direct.arrays.field_frag_len[:, :, : len(slots)], via_json.arrays.field_frag_len[:, :, slots])
    for n in range(direct.n_episodes):
        for name in ("api_id", "endpoint_index"):  # the same equality classes (numbering may differ)
            ours, theirs = getattr(direct.arrays, name)[n], getattr(via_json.arrays, name)[n]
            assert np.array_equal(ours[:, None] == ours[None, :], theirs[:, None] == theirs[None, :]), name
        # a step names the endpoint of the same api steps in either numbering
        ours = direct.arrays.named_endpoint[n][:, None] == direct.arrays.endpoint_index[n][None, :]
        theirs = via_json.arrays.named_endpoint[n][:, None] == via_json.arrays.endpoint_index[n][None, :]
        assert np.array_equal(ours, theirs), "named_endpoint"
        api_json = via_json.arrays.api_id[n]
        same_api = (api_json[:, None] == api_json[None, :]) & (api_json[:, None] >= 0)
        for k, slot in enumerate(slots):
            value_direct = direct.arrays.field_value[n, :, k]
            value_json = via_json.arrays.field_value[n, :, slot]
            equal_direct = value_direct[:, None] == value_direct[None, :]
            equal_json = value_json[:, None] == value_json[None, :]
            assert np.array_equal(equal_direct & same_api, equal_json & same_api)
