"""Tiered runs (docs/tiers.md): a journal and a checkpoint per run, each with its own byte budget.

One run is a ``fori_loop`` over its steps; each step: a crash check (a crash before step ``pos`` loses the
policy's unflushed buffer: ``lost_at_crash``), the policy's :class:`~wpbjax.state.actions.TierAction`, the store's
tier rules (:func:`wpbjax.state.store.tier_apply`), and every ``consolidate_every`` steps a consolidation pass
(:func:`wpbjax.state.store.consolidate`, O(T), a ``lax.cond`` inside the same compiled loop). Runs are vmapped over
(checkpoint budget, journal budget) pairs and episodes. The one-tier engine (wpbjax.core.rollout) is untouched.

**Crashes.** Before each real step ``pos > 0`` the run crashes with probability ``crash_rate``: an
independent draw per step from the episode's key (``jax.random.key(seed)`` folded with the episode index,
then with ``pos``); and it crashes before each step its episode's ``crashes`` label names
(wpbjax.episodes.crashes). A crash ends the session abruptly: the buffered steps not in the journal are lost
(counted), the journal and the checkpoint survive.

**Write amplification** (:class:`CostModel`). Each checkpoint add (write or promote) is one extraction call
(distil the fact), one embedding call (index it) and one dedupe lookup (find its older version); each
checkpoint item a consolidation pass scans is one more dedupe lookup; a journal append costs no call
(triage is a rule). ``total_cost = bytes_written + sum(weight * calls)``, weights in byte-equivalents;
``amplification = total_cost / bytes_written``.

**Compute budget** (optional; ``calls_per_step``, ``call_burst``). A token bucket on model calls: it holds
``call_burst`` calls, starts full and gains ``calls_per_step`` before each step (up to ``call_burst``). Each
checkpoint add a policy emits takes ``CALLS_PER_ADD`` (3: extraction, embedding, dedupe) when the bucket
holds them, in the action's order; an add it cannot afford is dropped before the store sees it
(``throttled_adds``): the engine enforces the budget, as the store enforces the byte budgets. Consolidation
passes run in the background ("sleep-time") and draw on no per-step budget.

**Reads** (:func:`tier_read_columns`). Current-value and never-seen probes read the checkpoint (the journal
where the run has no checkpoint budget: ``journal_only``); as-of probes read the checkpoint and fall back
to the journal, each such probe scanning every journal record present then (``journal_scan_bytes``, the
extra cost). Each side is answered by :func:`wpbjax.scoring.reads.read_counts` from the tier's history.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes import facts as facts_lib, probes as probes_lib
from wpbjax.policies.tiers import TierPolicy, init as tier_init
from wpbjax.scoring import integrity, reads
from wpbjax.state import actions, store as store_lib
from wpbjax.state.store import STILL_HELD


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Byte-equivalent weight of each model call (user-settable). Defaults: a convention, not a measurement
    -- an extraction (an LLM call reading the raw step) outweighs an embedding, which outweighs a lookup."""

    extraction: float = 256.0
    embedding: float = 64.0
    dedupe: float = 16.0

    def __post_init__(self):
        for name in ("extraction", "embedding", "dedupe"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ArgumentError(f"{arg('costs')} {name}: expected a finite number >= 0; got {value!r}")


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TierRun:
    """A tiered run's final store and its crash counts."""

    store: store_lib.TierStore
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
    return dataclasses.replace(action, add=jnp.where(affordable, action.add, store_lib.NONE)), tokens, dropped


def run(
    policy: TierPolicy, params, episode, checkpoint_budget, journal_budget, crash_rate, key, labelled, calls
) -> TierRun:
    """One tiered run (one episode's arrays, one budget pair): its final store and crash counts.
    ``labelled``: [T] bool a labelled crash just before the step; ``calls``: [2] float32 the compute budget,
    (calls per step, bucket size) (module note)."""
    fact = episode.fact_key[:, 0]
    every = params.get("consolidate_every", jnp.zeros((), jnp.int32))

    def body(pos, carry):
        store, state, crashes, lost, tokens, throttled = carry
        drawn = jax.random.uniform(jax.random.fold_in(key, pos)) < crash_rate
        crash = (pos > 0) & episode.valid[pos] & (drawn | labelled[pos])
        buffered = state.buffer >= 0
        unsaved = buffered & ~store.in_journal[jnp.maximum(state.buffer, 0)]
        lost = lost + jnp.where(crash, unsaved.sum(dtype=jnp.int32), 0)
        state = dataclasses.replace(state, buffer=jnp.where(crash, store_lib.NONE, state.buffer))
        action, state = policy.act(params, state, store, episode, pos, checkpoint_budget)
        action = actions.mask_tier(action, episode.valid[pos])
        action, tokens, dropped = _within_compute_budget(action, tokens, calls[0], calls[1])
        store = store_lib.tier_apply(store, action, episode, pos, checkpoint_budget, journal_budget)
        due = (every > 0) & ((pos + 1) % jnp.maximum(every, 1) == 0)  # unbatched: a real branch, not a select

        def pass_(store):
            passed = store_lib.consolidate(store, episode, fact, pos, checkpoint_budget, journal_budget)
            return jax.tree_util.tree_map(lambda a, b: jnp.where(episode.valid[pos], a, b), passed, store)

        store = jax.lax.cond(due, pass_, lambda store: store, store)
        return store, state, crashes + crash, lost, tokens, throttled + dropped

    zero = jnp.zeros((), jnp.int32)
    carry = (store_lib.tier_empty(episode.valid.shape[0]), tier_init(episode), zero, zero, calls[1], zero)
    store, _, crashes, lost, _, throttled = jax.lax.fori_loop(0, episode.valid.shape[0], body, carry)
    return TierRun(store=store, crashes=crashes, lost_at_crash=lost, throttled=throttled)


@functools.partial(jax.jit, static_argnums=0)
def _simulate(
    policy, params, batch, checkpoint_budgets, journal_budgets, crash_rate, seed, episode_index, labelled, calls
):
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(seed), episode_index)
    over_budgets = jax.vmap(run, in_axes=(None, None, None, 0, 0, None, None, None, None))
    over_episodes = jax.vmap(over_budgets, in_axes=(None, None, 0, None, None, None, 0, 0, None))
    return over_episodes(policy, params, batch, checkpoint_budgets, journal_budgets, crash_rate, keys, labelled, calls)


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
) -> TierRun:
    """Tiered runs of every (episode, budget pair): leaves [N, B, ...]. ``batch``: an EpisodeBatch with fact
    tables; ``checkpoint_budgets``, ``journal_budgets``: [B] bytes each (pairs, zipped); ``crash_rate``: the
    per-step crash probability; ``crash_pos``: [N, C] labelled crash positions, -1 padding; ``calls_per_step``,
    ``call_burst``: the compute budget (module note; the bucket holds ``max(calls_per_step, CALLS_PER_ADD)``
    calls unless ``call_burst`` says); ``episode_index``: [N] each episode's number in its set, which its crash
    draws are keyed by (default 0 .. N-1)."""
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
    return _simulate(
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


# --- Rows: history, reads, costs ------------------------------------------------------------------
def _histories(store: dict) -> dict:
    """Per tier view, the reads history (``left_at``, ``written_at``, ``parent``; [n, B, T]) of final stores."""
    never = store["checkpoint_added_at"] == STILL_HELD
    checkpoint_left = np.where(store["in_checkpoint"], STILL_HELD, np.where(never, -1, store["checkpoint_left_at"]))
    checkpoint_written = np.where(never, 0, store["checkpoint_added_at"])
    journaled = store["in_journal"]
    union_written = np.minimum(store["checkpoint_added_at"], store["journal_added_at"])
    union_left = np.where(journaled, STILL_HELD, checkpoint_left)
    parent = np.full(journaled.shape, -1, np.int32)
    return {
        "checkpoint": dict(left_at=checkpoint_left, written_at=checkpoint_written, parent=parent),
        "journal": dict(
            left_at=np.where(journaled, STILL_HELD, -1),
            written_at=np.where(journaled, store["journal_added_at"], 0),
            parent=parent,
        ),
        "both": dict(
            left_at=np.where(union_written == STILL_HELD, -1, union_left),
            written_at=np.where(union_written == STILL_HELD, 0, union_written),
            parent=parent,
        ),
    }


def _with_probes(encoded, keep: np.ndarray):
    """``encoded`` with only the probes where ``keep`` ([N, Q] bool)."""
    return dataclasses.replace(encoded, probe_pos=np.where(keep, encoded.probe_pos, -1))


def tier_read_columns(host: dict, encoded, track: str, checkpoint_budgets, retriever=None, episodes=None) -> dict:
    """Read columns ([n, B, nK], K as ``retriever.top_k``) of tiered runs on the episodes ``episodes`` ([n]
    indices into ``encoded``; default every one)."""
    retriever = retriever or reads.Retriever()
    episodes = np.arange(encoded.n_episodes) if episodes is None else np.asarray(episodes)
    histories = _histories(host)
    kind, real = encoded.probe_kind, encoded.probe_pos >= 0
    no_checkpoint = np.asarray(checkpoint_budgets) == 0  # [B]
    costs = encoded.track_costs(track)
    as_of = real & (kind == probes_lib.AS_OF)
    totals = {}
    for side, keep in (("checkpoint", real & ~as_of), ("journal", real & ~as_of), ("both", as_of)):
        counts = reads.read_counts(histories[side], _with_probes(encoded, keep), episodes, costs, retriever)
        use = np.ones(len(no_checkpoint), bool) if side == "both" else (no_checkpoint == (side == "journal"))
        for name in ("n_probes", "n_right"):
            totals[name] = totals.get(name, 0) + np.where(use[None, :, None], counts[name], 0)
    # the fallback's extra cost: every journal record present when an as-of probe is asked
    record = np.asarray(store_lib.journal_cost(costs[episodes])).astype(np.int64)  # [n, T]
    present = host["in_journal"][:, :, None, :] & (
        host["journal_added_at"][:, :, None, :] <= encoded.probe_pos[episodes][:, None, :, None]
    )  # [n, B, Q, T]
    as_of = as_of[episodes]
    scan = np.where(present & as_of[:, None, :, None], record[:, None, None, :], 0).sum((2, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(totals["n_probes"] > 0, totals["n_right"] / np.maximum(totals["n_probes"], 1), np.nan)
    shape = totals["n_probes"].shape  # [n, B, nK]: the journal's scan is the same at every K
    return dict(
        n_probes=totals["n_probes"],
        read_accuracy=accuracy,
        journal_fallbacks=np.broadcast_to(as_of.sum(1)[:, None, None], shape),
        journal_scan_bytes=np.broadcast_to(scan[..., None], shape),
    )


def _coverage(in_memory: np.ndarray, batch) -> np.ndarray:
    """history_coverage ([n, B]) of the set of steps ``in_memory`` ([n, B, T] bool) holds."""
    bits = np.packbits(in_memory, axis=-1)
    held = integrity.numerators(bits, batch)["n_pairs_held"]
    pairs = facts_lib.denominators(batch)["n_pairs"][:, None]
    return np.where(pairs > 0, held / np.maximum(pairs, 1), np.nan)


def tier_rows(
    result: TierRun,
    encoded,
    track: str,
    checkpoint_budgets,
    journal_budgets,
    costs: CostModel | None = None,
    retriever=None,
    episodes=None,
    every_k: bool = False,
) -> dict:
    """The tier columns ([n, B] each) of :func:`simulate_tiers`' runs on the episodes ``episodes`` of
    ``encoded`` ([n] indices; default every one); the read columns at K = ``retriever.top_k[0]``, or with
    ``every_k`` [n, B, nK] at every K."""
    costs = costs or CostModel()
    retriever = retriever or reads.Retriever()
    host = {name: np.asarray(value) for name, value in vars(result.store).items()}
    batch = encoded.host_batch(track, episodes)
    adds = host["checkpoint_adds"].astype(np.int64)
    dedupe = adds + host["scanned"]
    written = host["bytes_written"].astype(np.int64)
    total = written + costs.extraction * adds + costs.embedding * adds + costs.dedupe * dedupe
    shape = adds.shape
    rows = dict(
        checkpoint_budget_bytes=np.broadcast_to(np.asarray(checkpoint_budgets, np.int64), shape),
        journal_budget_bytes=np.broadcast_to(np.asarray(journal_budgets, np.int64), shape),
        checkpoint_bytes=host["checkpoint_used"],
        journal_bytes=host["journal_used"],
        total_bytes=host["checkpoint_used"].astype(np.int64) + host["journal_used"],
        history_coverage=_coverage(host["in_checkpoint"] | host["in_journal"], batch),
        checkpoint_history_coverage=_coverage(host["in_checkpoint"], batch),
        journal_adds=host["journal_adds"],
        checkpoint_adds=adds,
        promotes=host["promotes"],
        demotes=host["demotes"],
        deletes=host["deletes"],
        rejected=host["rejected"],
        extraction_calls=adds,
        embedding_calls=adds,
        dedupe_lookups=dedupe,
        bytes_written=written,
        total_cost=total,
        amplification=np.where(written > 0, total / np.maximum(written, 1), np.nan),
        crashes=np.asarray(result.crashes),
        lost_at_crash=np.asarray(result.lost_at_crash),
        throttled_adds=np.asarray(result.throttled),
    )
    if encoded.probe_pos is not None:
        read_columns = tier_read_columns(host, encoded, track, checkpoint_budgets, retriever, episodes)
    else:  # no probes: the same columns, blank (as one-tier rows' read columns)
        blank = shape + (len(retriever.top_k),)
        read_columns = dict(
            n_probes=np.zeros(blank, np.int64),
            read_accuracy=np.full(blank, np.nan),
            journal_fallbacks=np.zeros(blank, np.int64),
            journal_scan_bytes=np.zeros(blank, np.int64),
        )
    rows.update({name: value if every_k else value[..., 0] for name, value in read_columns.items()})
    return rows


# The columns of a tiered sweep's results table, in order (docs/tiers.md); a param_NAME column per swept param
# follows them
TIER_COLUMNS = (
    "policy",
    "track",
    "episode_id",
    "mode",
    "budget_bytes",  # the checkpoint's
    "journal_budget_bytes",
    "checkpoint_bytes",
    "journal_bytes",
    "total_bytes",
    "history_coverage",
    "checkpoint_history_coverage",
    "journal_adds",
    "checkpoint_adds",
    "promotes",
    "demotes",
    "deletes",
    "rejected",
    "extraction_calls",
    "embedding_calls",
    "dedupe_lookups",
    "bytes_written",
    "total_cost",
    "amplification",
    "crashes",
    "lost_at_crash",
    "throttled_adds",
    "top_k",
    "n_probes",
    "read_accuracy",
    "journal_fallbacks",
    "journal_scan_bytes",
)


def tier_part(
    result: TierRun,
    encoded,
    episodes: np.ndarray,
    track: str,
    checkpoint_budgets,
    journal_budgets,
    costs: CostModel,
    retriever,
    name: str,
    set_index: np.ndarray,
    order: int,
) -> dict:
    """:func:`tier_rows` as results rows, one per (episode, budget pair, K), episode-major, with the identifying
    and row-order columns, as flat column arrays (name -> [n * R * nK]; the sweep's writer joins a chunk's
    parts): the tiered twin of :func:`wpbjax.scoring.rows.score_rows`. ``result``: runs on the episodes
    ``episodes`` ([n] indices into ``encoded``) at the [R] budget pairs; ``order``: the (track, policy) number."""
    from wpbjax.common.tracks import cost_track

    retriever = retriever or reads.Retriever()
    columns = tier_rows(
        result, encoded, cost_track(track), checkpoint_budgets, journal_budgets, costs, retriever, episodes, True
    )
    n, n_pairs = np.shape(columns["checkpoint_budget_bytes"])
    shape = (n, n_pairs, len(retriever.top_k))
    episode_axis = np.broadcast_to(episodes[:, None], (n, n_pairs))
    per_run = {name: value for name, value in columns.items() if np.ndim(value) == 2}
    per_run.update(
        budget_bytes=per_run.pop("checkpoint_budget_bytes"),
        episode_id=np.asarray(encoded.episode_id, object)[episode_axis],
        mode=np.asarray(encoded.mode, object)[episode_axis],
        _set=set_index[episode_axis],
        _budget=np.broadcast_to(np.arange(n_pairs)[None, :], (n, n_pairs)),
        _episode=episode_axis,
    )
    rows = {key: np.broadcast_to(np.asarray(value)[..., None], shape).ravel() for key, value in per_run.items()}
    rows.update({key: np.asarray(value).ravel() for key, value in columns.items() if np.ndim(value) == 3})
    rows.update(
        top_k=np.broadcast_to(np.asarray(retriever.top_k, np.int64), shape).ravel(),
        policy=np.full(n * n_pairs * shape[2], name, object),
        track=np.full(n * n_pairs * shape[2], track, object),
        _order=np.full(n * n_pairs * shape[2], order),
    )
    return rows


def tier_table(
    encoded,
    policies,
    budgets,
    journal_budgets,
    track: str = "unprivileged",
    crash_rate: float = 0.0,
    seed: int = 0,
    costs: CostModel | None = None,
    retriever=None,
    params: dict | None = None,
    calls_per_step: float = float("inf"),
    call_burst: float | None = None,
):
    """A results table of tiered runs: one row per (policy, episode, checkpoint budget, journal budget), the
    two budget axes crossed (``budgets`` size the checkpoint, ``journal_budgets`` the journal). Columns:
    ``policy``, ``track``, ``episode_id``, ``mode``, ``budget_bytes`` (the checkpoint's), then
    :func:`tier_rows`' (``journal_budget_bytes`` among them). ``calls_per_step``, ``call_burst``: the compute
    budget (:func:`simulate_tiers`)."""
    import pandas as pd

    from wpbjax.policies.tiers import get_tier_policy

    checkpoint = np.repeat(tier_budgets(budgets, "budgets"), len(np.atleast_1d(journal_budgets)))
    journal = np.tile(tier_budgets(journal_budgets, "journal_budgets"), len(np.atleast_1d(budgets)))
    from wpbjax.common.tracks import cost_track

    track_costs = cost_track(track)  # the metadata a track's items carry (and pay for)
    batch = encoded.host_batch(track_costs)
    chosen = [get_tier_policy(name) for name in policies]
    unknown = sorted(set(params or {}) - {param for policy in chosen for param in policy.params})
    if unknown:
        raise ArgumentError(f"{arg('params')}: no tier policy of the sweep has param {', '.join(unknown)}")
    tables = []
    for policy in chosen:  # each gets the params it has (as a one-tier sweep's policies do)
        name = policy.name
        own = {param: value for param, value in (params or {}).items() if param in policy.params}
        result = simulate_tiers(
            policy,
            batch,
            checkpoint,
            journal,
            params=own,
            crash_rate=crash_rate,
            seed=seed,
            crash_pos=encoded.crash_pos,
            calls_per_step=calls_per_step,
            call_burst=call_burst,
        )
        rows = tier_rows(result, encoded, track_costs, checkpoint, journal, costs, retriever)
        n, n_budgets = np.shape(rows["checkpoint_budget_bytes"])
        episode = np.repeat(np.arange(n), n_budgets)
        table = {
            "policy": name,
            "track": track,
            "episode_id": np.asarray(encoded.episode_id, object)[episode],
            "mode": np.asarray(encoded.mode, object)[episode],
            "budget_bytes": np.asarray(rows.pop("checkpoint_budget_bytes")).reshape(-1),
        }
        table.update({column: np.asarray(value).reshape(-1) for column, value in rows.items()})
        tables.append(pd.DataFrame(table))
    return pd.concat(tables, ignore_index=True)
