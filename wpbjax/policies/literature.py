"""Practitioners' write policies, under one byte model: triage/dedupe gates, MemoryBank-style decay,
rate limits, session-end batching and novelty gates.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from wpbjax.common.constants import NONE
from wpbjax.policies.base import Policy
from wpbjax.policies.common import EVICTS_OLDEST, fields_equal, gated_recency
from wpbjax.policies.published import UNPRIVILEGED
from wpbjax.state import actions, store as store_lib


# --- dedupe_gate ------------------------------------------------------------------------------------
def dedupe_init(params, episode, key):
    return jnp.full(episode.api_ids.shape[-1], NONE, jnp.int32)  # [A] latest stored step per api


def dedupe_gate(params, latest_stored, store, episode, pos, budget):
    """Skip a step whose observation equals (api and every field) the latest stored item of the same
    api; admit everything else. Recency eviction only drops the oldest items, so an item is still
    stored iff it is not older than ``store.oldest``."""
    previous = pos - 1
    wrote_previous = (previous >= 0) & (store.newest == previous)
    latest_stored = store_lib.set_where(
        latest_stored, episode.api_index[jnp.maximum(previous, 0)], previous, wrote_previous
    )
    api = episode.api_index[pos]
    last = jnp.where(api >= 0, latest_stored[jnp.maximum(api, 0)], NONE)
    still_stored = (last >= 0) & (store.oldest >= 0) & (last >= store.oldest)
    return ~(still_stored & fields_equal(episode, pos, last)), latest_stored


# --- novelty_gate -----------------------------------------------------------------------------------
def novelty_init(params, episode, key):
    return jnp.zeros(episode.api_ids.shape[-1], bool)  # [A] api values seen in the episode


def novelty_gate(params, seen, store, episode, pos, budget):
    """Admit a step whose api value has not been seen earlier in the episode (steps without an api:
    never)."""
    api = episode.api_index[pos]
    safe = jnp.maximum(api, 0)
    novel = (api >= 0) & ~seen[safe]
    return novel, seen.at[safe].set(seen[safe] | (api >= 0))


# --- token_bucket -----------------------------------------------------------------------------------
def token_bucket_init(params, episode, key):
    return jnp.asarray(params["burst"], jnp.float32)  # [] tokens; the bucket starts full


def token_bucket_gate(params, tokens, store, episode, pos, budget):
    """Each step adds ``rate`` tokens (capped at ``burst``); a step is admitted iff a whole token is
    there, and takes it. So any w consecutive steps admit at most burst + rate·(w − 1)."""
    tokens = jnp.minimum(tokens + jnp.where(pos > 0, params["rate"], 0.0), params["burst"])
    admit = tokens >= 1.0
    return admit, tokens - jnp.where(admit, 1.0, 0.0)


dedupe_gate_act, dedupe_gate_init = gated_recency(dedupe_gate, dedupe_init)
novelty_gate_act, novelty_gate_init = gated_recency(novelty_gate, novelty_init)
token_bucket_act, token_bucket_init = gated_recency(token_bucket_gate, token_bucket_init)


DEDUPE_GATE = Policy(
    "dedupe_gate",
    dedupe_gate_act,
    UNPRIVILEGED,
    init=dedupe_gate_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="skips exact repeats of the latest stored item of the same api; else recency",
)
NOVELTY_GATE = Policy(
    "novelty_gate",
    novelty_gate_act,
    UNPRIVILEGED,
    init=novelty_gate_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="writes steps whose api was not seen before; recency eviction",
)
TOKEN_BUCKET = Policy(
    "token_bucket",
    token_bucket_act,
    UNPRIVILEGED,
    {"rate": 0.25, "burst": 4.0},
    init=token_bucket_init,
    multi_action=True,
    **EVICTS_OLDEST,
    doc="admits steps at most at `rate` per step with bursts of `burst`; recency eviction",
)


# --- memorybank_decay -------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class MemoryBankState:
    strength: jax.Array  # [T] float32 S of the item keyed by each step
    recalled: jax.Array  # [T] int32   t at which the item was written or last recalled
    latest: jax.Array  # [A] int32   latest written step per api (-1 none)
    at: jax.Array  # []  int32   the step whose arrival was processed


def memorybank_init(params, episode, key):
    n_steps = episode.valid.shape[0]
    return MemoryBankState(
        strength=jnp.ones(n_steps, jnp.float32),
        recalled=jnp.zeros(n_steps, jnp.int32),
        latest=jnp.full(episode.api_ids.shape[-1], NONE, jnp.int32),
        at=jnp.full((), NONE, jnp.int32),
    )


def memorybank_decay_act(params, state, store, episode, pos, budget):
    """MemoryBank's forgetting curve: an item has strength S (``strength0`` when written) and
    retention exp(−age/S), age = t − t of its last recall. A step whose api equals a stored item's
    recalls that item (S += ``growth``, age back to 0). Every step is written; when it does not fit,
    the lowest-retention item (largest age/S; the oldest among ties) is evicted, one per call, until
    it does. SKIP if it would not fit an empty store. Each call is O(T) (an argmin over the slots)."""
    fresh = state.at != pos
    now, api = episode.step_t[pos], episode.api_index[pos]
    last = jnp.where(api >= 0, state.latest[jnp.maximum(api, 0)], NONE)
    recall = fresh & store_lib.holds(store, last)
    strength = store_lib.set_where(
        state.strength, last, state.strength[jnp.maximum(last, 0)] + params["growth"], recall
    )
    recalled = store_lib.set_where(state.recalled, last, now, recall)
    strength = store_lib.set_where(strength, pos, params["strength0"], fresh)
    recalled = store_lib.set_where(recalled, pos, now, fresh)

    cost, room = episode.write_cost[pos], store_lib.remaining(store, budget)
    go = cost <= budget
    slots = jnp.arange(strength.shape[0])
    decay = jnp.where(store.present & (slots < pos), (now - recalled) / jnp.maximum(strength, 1e-6), -jnp.inf)
    victim = jnp.argmax(decay).astype(jnp.int32)
    evict = go & (room < cost) & (decay[victim] > -jnp.inf)
    freed = jnp.where(evict, store_lib.cost_of(store, episode, victim), 0)
    victim = jnp.where(evict, victim, NONE)
    walk_on = actions.select(evict, actions.expire_and_continue(victim), actions.skip())
    action = actions.select(
        go & (room + freed >= cost),
        actions.write(victim, evict.astype(jnp.int32)),
        actions.select(go, walk_on, actions.skip()),
    )
    latest = store_lib.set_where(state.latest, api, pos, fresh & go)
    return action, MemoryBankState(strength=strength, recalled=recalled, latest=latest, at=jnp.asarray(pos, jnp.int32))


MEMORYBANK_DECAY = Policy(
    "memorybank_decay",
    memorybank_decay_act,
    UNPRIVILEGED,
    {"strength0": 10.0, "growth": 10.0},
    init=memorybank_init,
    multi_action=True,
    emits=frozenset({"write", "expire"}),
    layout=frozenset(),
    doc="writes every step; evicts the lowest retention exp(-age/S), S growing on recall",
)


# --- deferred_batch ---------------------------------------------------------------------------------
MAX_WINDOW = 32  # static buffer size; the ``window`` param is clipped to 1..MAX_WINDOW


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class DeferredState:
    score: jax.Array  # [T] float32 score of each step, set on arrival
    latest_seen: jax.Array  # [A] int32   latest step seen per api (-1 none)
    considered: jax.Array  # [MAX_WINDOW] bool buffered steps already decided at this window's end (by age)
    at: jax.Array  # []  int32   the step whose arrival was processed


def deferred_init(params, episode, key):
    return DeferredState(
        score=jnp.zeros(episode.valid.shape[0], jnp.float32),
        latest_seen=jnp.full(episode.api_ids.shape[-1], NONE, jnp.int32),
        considered=jnp.zeros(MAX_WINDOW, bool),
        at=jnp.full((), NONE, jnp.int32),
    )


def deferred_batch_act(params, state, store, episode, pos, budget):
    """Buffer ``window`` steps; at the window's end (and at the last step), write the best-scoring
    buffered steps that fit, best first, one WRITE_PAST per call. Score = priority (0 where hidden)
    + 1 if the step is new: its api was not seen before, or its fields differ from the last step with
    that api (steps without an api count as new). Ties go to the later step. Never evicts."""
    fresh = state.at != pos
    window = jnp.clip(params["window"], 1, MAX_WINDOW)
    api = episode.api_index[pos]
    previous = jnp.where(api >= 0, state.latest_seen[jnp.maximum(api, 0)], NONE)
    new = (api < 0) | ~fields_equal(episode, pos, previous)
    score = store_lib.set_where(state.score, pos, episode.priority[pos] + new.astype(jnp.float32), fresh)
    latest_seen = store_lib.set_where(state.latest_seen, api, pos, fresh)

    offsets = jnp.arange(MAX_WINDOW)
    buffered = pos - offsets  # this window's steps, newest first
    window_end = ((pos + 1) % window == 0) | (pos == episode.length - 1)
    considered = jnp.where(fresh, False, state.considered)
    open_ = window_end & (offsets <= pos % window) & (buffered >= 0) & ~considered
    best = jnp.argmax(jnp.where(open_, score[jnp.maximum(buffered, 0)], -jnp.inf))
    best_step = buffered[best]
    any_open = open_[best]
    fits = episode.write_cost[jnp.maximum(best_step, 0)] <= store_lib.remaining(store, budget)
    considered = considered.at[best].set(considered[best] | any_open)
    action = actions.select(
        any_open,
        actions.select(fits, actions.write_past(best_step), actions.expire_and_continue(NONE, 0)),
        actions.skip(),
    )
    return action, DeferredState(
        score=score, latest_seen=latest_seen, considered=considered, at=jnp.asarray(pos, jnp.int32)
    )


DEFERRED_BATCH = Policy(
    "deferred_batch",
    deferred_batch_act,
    UNPRIVILEGED,
    {"window": 10},
    init=deferred_init,
    multi_action=True,
    emits=frozenset({"write_past"}),
    layout=frozenset(),
    doc="at each window's end writes the best-scoring buffered steps that fit",
)
