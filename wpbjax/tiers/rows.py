"""The rows of tiered runs (docs/tiers.md): history, reads and costs of their final stores, as results columns.

**Reads** (:func:`tier_read_columns`). Current-value and never-seen probes read the checkpoint (the journal
where the run has no checkpoint budget: ``journal_only``); as-of probes read the checkpoint and fall back
to the journal, each such probe scanning every journal record present then (``journal_scan_bytes``, the
extra cost). Each side is answered by :func:`wpbjax.scoring.reads.read_counts` from the tier's history.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes import facts as facts_lib, probes as probes_lib
from wpbjax.scoring import integrity, reads
from wpbjax.state.store import STILL_HELD
from wpbjax.tiers import store as tier_store
from wpbjax.tiers.costs import CostModel
from wpbjax.tiers.engine import TierRun, simulate_tiers, tier_budgets


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
    record = np.asarray(tier_store.journal_cost(costs[episodes])).astype(np.int64)  # [n, T]
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

    from wpbjax.tiers.policies import get_tier_policy

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
