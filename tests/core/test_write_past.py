"""WRITE_PAST: the store's rule for writing a buffered earlier step (used by deferred_batch)."""

import jax.numpy as jnp
from helpers import make_episode, run_one

from wpbjax.policies.base import Policy
from wpbjax.state import actions

COST_A = 76  # {"api": "a"} under the unprivileged view, see test_store


def _init(params, episode, key):
    return jnp.zeros((), jnp.int32)  # how many scripted sources were emitted


def _act(params, state, store, episode, pos, budget):
    """At step ``params['at']``: WRITE_PAST each of ``params['sources']`` in turn; then EXPIRE the oldest
    item at the next step if ``params['expire_next']``."""
    sources = params["sources"]
    emitting = (pos == params["at"]) & (state < sources.shape[0])
    past = actions.write_past(sources[jnp.minimum(state, sources.shape[0] - 1)])
    expire = actions.expire_only(store.oldest, 1)
    later = actions.select((pos == params["at"] + 1) & (params["expire_next"] > 0), expire, actions.skip())
    return actions.select(emitting, past, later), jnp.where(emitting, state + 1, state)


POLICY = Policy(
    "write_past_script", _act, init=_init, multi_action=True, emits={"write_past", "expire"}, layout={"order"}
)


def run(sources, budget, at=3, expire_next=0, n_steps=5):
    params = {"sources": jnp.asarray(sources, jnp.int32), "at": jnp.int32(at), "expire_next": jnp.int32(expire_next)}
    _, stores, counts = run_one(POLICY, [make_episode([{"api": "a"}] * n_steps)], budget, params=params)
    return stores, counts


def test_write_past_writes_earlier_steps_at_one_step_under_the_write_rule():
    # 1 and 0 are written; 1 again is rejected (it has an item); 4 is in the future; 2 does not fit
    stores, counts = run([1, 1, 4, 0, 2], budget=2 * COST_A)
    assert stores.present[0].tolist() == [True, True, False, False, False]
    assert int(stores.used[0]) == 2 * COST_A
    assert int(counts.write_actions[0]) == 5  # emitted, rejected ones included


def test_write_past_may_name_the_current_step_once():
    stores, _ = run([3, 3, 2], budget=10**6)
    assert stores.present[0].tolist() == [False, False, True, True, False]


def test_oldest_follows_insertion_order():
    # inserted 2 then 0: the oldest *inserted* item (2) is the one the next step's EXPIRE(oldest) removes
    stores, counts = run([2, 0], budget=10**6, expire_next=1)
    assert stores.present[0].tolist() == [True, False, False, False, False]
    assert int(counts.expire_actions[0]) == 1
