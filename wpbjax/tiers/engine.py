"""Tiered runs (docs/tiers.md): a journal and a checkpoint per run, each with its own byte budget.

One run is a ``fori_loop`` over its steps; each step: a crash check (a crash before step ``pos`` loses the
policy's unflushed buffer: ``lost_at_crash``), the policy's :class:`~wpbjax.tiers.actions.TierAction`, the store's
tier rules (:func:`wpbjax.tiers.store.tier_apply`), and every ``consolidate_every`` steps a consolidation pass
(:func:`wpbjax.tiers.store.consolidate`, O(T), a ``lax.cond`` inside the same compiled loop). Runs are vmapped over
(checkpoint budget, journal budget) pairs and episodes. The one-tier engine (wpbjax.core.rollout) is untouched.

**Crashes.** Before each real step ``pos > 0`` the run crashes with probability ``crash_rate``: an
independent draw per step from the episode's key (``jax.random.key(seed)`` folded with the episode index,
then with ``pos``); and it crashes before each step its episode's ``crashes`` label names
(wpbjax.episodes.crashes). A crash ends the session abruptly: the buffered steps not in the journal are lost
(counted), the journal and the checkpoint survive.

**Compute budget** (optional; ``calls_per_step``, ``call_burst``). A token bucket on model calls: it holds
``call_burst`` calls, starts full and gains ``calls_per_step`` before each step (up to ``call_burst``). Each
checkpoint add a policy emits takes ``CALLS_PER_ADD`` (3: extraction, embedding, dedupe) when the bucket
holds them, in the action's order; an add it cannot afford is dropped before the store sees it
(``throttled_adds``): the engine enforces the budget, as the store enforces the byte budgets. Consolidation
passes run in the background ("sleep-time") and draw on no per-step budget.

Rows (history, reads, costs) are :mod:`wpbjax.tiers.rows`; the cost model :mod:`wpbjax.tiers.costs`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.common.constants import NONE
from wpbjax.runtime import devices as devices_lib, programs
from wpbjax.tiers import actions as tier_actions, store as tier_store
from wpbjax.tiers.policies import TierPolicy, init as tier_init


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TierRun:
    """A tiered run's final store and its crash counts."""

    store: tier_store.TierStore
    crashes: jax.Array  # [] int32 crashes during the run
    lost_at_crash: jax.Array  # [] int32 buffered steps lost (not journaled) at those crashes
    throttled: jax.Array  # [] int32 checkpoint adds dropped for want of calls in the compute budget


# A checkpoint add on the hot path makes these model calls (extraction, embedding, dedupe lookup): what it
# takes from the compute budget's bucket (module note)
CALLS_PER_ADD = 3


def _within_compute_budget(action, tokens, calls_per_step, call_burst):
    """The action's checkpoint adds the bucket affords, in order, after this step's refill: (action, tokens
    left, adds dropped). ``tokens``, ``calls_per_step``, ``call_burst``: [] float32 (inf: no budget)."""
    tokens = jnp.minimum(call_burst, tokens + calls_per_step)
    emitted = action.add >= 0
    affordable = emitted & (jnp.cumsum(emitted) * CALLS_PER_ADD <= tokens)
    tokens = tokens - CALLS_PER_ADD * affordable.sum()
    dropped = (emitted & ~affordable).sum(dtype=jnp.int32)
    return dataclasses.replace(action, add=jnp.where(affordable, action.add, NONE)), tokens, dropped


def run(
    policy: TierPolicy,
    params,
    episode,
    checkpoint_budget,
    journal_budget,
    crash_rate,
    key,
    labelled,
    calls,
    fast_trace: bool = False,
) -> TierRun:
    """One tiered run (one episode's arrays, one budget pair): its final store and crash counts.
    ``labelled``: [T] bool a labelled crash just before the step; ``calls``: [2] float32 the compute budget,
    (calls per step, bucket size) (module note); ``fast_trace``: the first carry marked as varying with the
    budget and the episode, so that vmap traces the step once per level, not twice (the quick build's:
    see wpbjax.core.scan.initial_carry)."""
    fact = episode.fact_key[:, 0]
    every = params.get("consolidate_every", jnp.zeros((), jnp.int32))

    def body(pos, carry):
        store, state, crashes, lost, tokens, throttled = carry
        drawn = jax.random.uniform(jax.random.fold_in(key, pos)) < crash_rate
        crash = (pos > 0) & episode.valid[pos] & (drawn | labelled[pos])
        buffered = state.buffer >= 0
        unsaved = buffered & ~store.in_journal[jnp.maximum(state.buffer, 0)]
        lost = lost + jnp.where(crash, unsaved.sum(dtype=jnp.int32), 0)
        state = dataclasses.replace(state, buffer=jnp.where(crash, NONE, state.buffer))
        action, state = policy.act(params, state, store, episode, pos, checkpoint_budget)
        action = tier_actions.mask_tier(action, episode.valid[pos])
        action, tokens, dropped = _within_compute_budget(action, tokens, calls[0], calls[1])
        store = tier_store.tier_apply(store, action, episode, pos, checkpoint_budget, journal_budget)
        due = (every > 0) & ((pos + 1) % jnp.maximum(every, 1) == 0)  # unbatched: a real branch, not a select

        def pass_(store):
            passed = tier_store.consolidate(store, episode, fact, pos, checkpoint_budget, journal_budget)
            return jax.tree_util.tree_map(lambda a, b: jnp.where(episode.valid[pos], a, b), passed, store)

        store = jax.lax.cond(due, pass_, lambda store: store, store)
        return store, state, crashes + crash, lost, tokens, throttled + dropped

    zero = jnp.zeros((), jnp.int32)
    carry = (tier_store.tier_empty(episode.valid.shape[0]), tier_init(episode), zero, zero, calls[1], zero)
    if fast_trace:
        varies = (checkpoint_budget >= 0) | episode.valid[0]
        carry = jax.tree_util.tree_map(lambda leaf: jnp.where(varies, leaf, leaf), carry)
    store, _, crashes, lost, _, throttled = jax.lax.fori_loop(0, episode.valid.shape[0], body, carry)
    return TierRun(store=store, crashes=crashes, lost_at_crash=lost, throttled=throttled)


def _simulate(
    policy,
    params,
    batch,
    checkpoint_budgets,
    journal_budgets,
    crash_rate,
    seed,
    episode_index,
    labelled,
    calls,
    inputs,
    fast_trace: bool = False,
):
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(seed), episode_index)

    run_one = functools.partial(run, policy, crash_rate=crash_rate, calls=calls, fast_trace=fast_trace)

    def one(inputs, episode, checkpoint_budget, journal_budget, key, labelled):  # per-run inputs join the params
        return run_one({**params, **inputs}, episode, checkpoint_budget, journal_budget, key=key, labelled=labelled)

    over_budgets = jax.vmap(one, in_axes=(0, None, 0, 0, None, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(0, 0, None, None, 0, 0))
    return over_episodes(inputs, batch, checkpoint_budgets, journal_budgets, keys, labelled)


# Small tiered sweeps (a test's, a quick look) are mostly compiling: they take the quick build (identical runs).
_simulate_full, _simulate_quick = programs.full_and_quick(
    _simulate, functools.partial(_simulate, fast_trace=True), static_argnums=0
)


def tier_budgets(budgets, name: str) -> np.ndarray:
    """[B] int32 bytes of one tier; 0 is allowed (the run has no such tier)."""
    values = np.atleast_1d(np.asarray(budgets))
    if (
        values.ndim != 1
        or not values.size
        or not np.issubdtype(values.dtype, np.integer)
        or (values < 0).any()
        or (values > 2**31 - 1).any()
    ):
        raise ArgumentError(f"{arg(name)}: expected whole numbers of bytes within 0..2^31-1; got {values.tolist()}")
    return values.astype(np.int32)


def simulate_tiers(
    policy: TierPolicy,
    batch,
    checkpoint_budgets,
    journal_budgets,
    params=None,
    crash_rate=0.0,
    seed: int = 0,
    crash_pos=None,
    calls_per_step: float = float("inf"),
    call_burst: float | None = None,
    episode_index=None,
    run_inputs=None,
    work: int | None = None,
) -> TierRun:
    """Tiered runs of every (episode, budget pair): leaves [N, B, ...]. ``batch``: an EpisodeBatch with fact
    tables; ``checkpoint_budgets``, ``journal_budgets``: [B] bytes each (pairs, zipped); ``crash_rate``: the
    per-step crash probability; ``crash_pos``: [N, C] labelled crash positions, -1 padding; ``calls_per_step``,
    ``call_burst``: the compute budget (module note; the bucket holds ``max(calls_per_step, CALLS_PER_ADD)``
    calls unless ``call_burst`` says); ``episode_index``: [N] each episode's number in its set, which its crash
    draws are keyed by (default 0 .. N-1); ``run_inputs``: name -> [N, B, ...] per-run inputs the policy reads
    beside its params (a Python policy's action log, :mod:`wpbjax.host.tiers`); ``work``: run-steps the caller
    will run with this compiled program (default: this call's, N·B·T); below ``QUICK_COMPILE_BELOW``
    (wpbjax.runtime.devices) a quicker-compiling, slower-running build is used, with identical runs."""
    checkpoint = tier_budgets(checkpoint_budgets, "budgets")
    journal = tier_budgets(journal_budgets, "journal_budgets")
    if checkpoint.shape != journal.shape:
        raise ArgumentError(
            f"{arg('journal_budgets')}: expected one per checkpoint budget ({checkpoint.shape[0]}); "
            f"got {journal.shape[0]}"
        )
    if batch.fact_key is None:
        raise ArgumentError(f"{arg('episodes')}: tiered runs need fact tables (episodes with apis or a facts label)")
    if not 0 <= crash_rate <= 1:
        raise ArgumentError(f"{arg('crash_rate')}: expected a probability within [0, 1]; got {crash_rate!r}")
    index = np.arange(batch.valid.shape[0]) if episode_index is None else np.asarray(episode_index)
    index = index.astype(np.uint32)
    calls = compute_budget(calls_per_step, call_burst)
    if work is None:
        work = batch.valid.shape[0] * checkpoint.shape[0] * batch.valid.shape[1]  # run-steps
    program = _simulate_quick if work < devices_lib.QUICK_COMPILE_BELOW else _simulate_full
    return program(
        policy,
        policy.resolve_params(params or {}),
        batch,
        checkpoint,
        journal,
        jnp.float32(crash_rate),
        int(seed),
        index,
        labelled_crashes(crash_pos, batch.valid.shape),
        calls,
        {} if run_inputs is None else {name: jnp.asarray(value) for name, value in run_inputs.items()},
    )


def compute_budget(calls_per_step, call_burst) -> jax.Array:
    """[2] float32 (calls per step, bucket size), checked; inf, inf without a budget."""
    rate = float(calls_per_step)
    burst = max(rate, CALLS_PER_ADD) if call_burst is None else float(call_burst)
    if not rate >= 0:
        raise ArgumentError(f"{arg('calls_per_step')}: expected a number of calls >= 0; got {calls_per_step!r}")
    if not burst >= CALLS_PER_ADD:
        raise ArgumentError(
            f"{arg('call_burst')}: expected at least one add's {CALLS_PER_ADD} calls; got {call_burst!r}"
        )
    return jnp.asarray([rate, burst], jnp.float32)


def labelled_crashes(crash_pos, shape) -> np.ndarray:
    """[N, T] bool a labelled crash just before the step, from [N, C] positions (-1 padding; None: none)."""
    out = np.zeros(shape, bool)
    if crash_pos is not None:
        episode, pos = np.nonzero(np.asarray(crash_pos) >= 0)
        out[episode, np.asarray(crash_pos)[episode, pos]] = True
    return out
