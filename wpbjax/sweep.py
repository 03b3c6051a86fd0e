"""Sweeps: episodes × budgets × tracks × policies → one results table (the published columns).

The grid is cut into chunks of episodes sized from a memory cap (and at most RUNS_PER_CALL runs per
device); every chunk is padded to the same shape, so each policy compiles once and the chunks
reuse it. Chunks are sharded over the local devices. Rows come in the published harness's order (episode set, budget, episode, track, policy)
within each chunk; a sweep that fits one chunk (the paper grid does) is in exactly that order.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from wpbjax import devices as devices_lib, integrity, oracle as oracle_lib, simulate
from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.metrics import policy_utility, score
from wpbjax.policies import lineup, make
from wpbjax.progress import Progress
from wpbjax.results_io import ResultsWriter  # noqa: F401  (re-exported: wpbjax.sweep.ResultsWriter)
from wpbjax.tracks import TRACKS as PUBLISHED_TRACKS, check_any_track, cost_track, sees_utility

PAPER_BUDGETS = (1024, 2048, 4096, 8192, 10240, 16384, 32768, 65536, 102400, 262144, 1048576)
PUBLISHED_COLUMNS = ("avg_staleness", "budget_bytes", "bytes_used", "drift_coverage", "episode_id",
                     "expire_actions", "expire_rate", "f1", "mode", "oracle_utility", "policy",
                     "policy_utility", "precision", "recall", "regret", "regret_write_only", "track",
                     "utility_per_kb", "utilization", "write_actions", "write_density")
COLUMNS = PUBLISHED_COLUMNS + ("merge_actions",)
# Retained (W) vs critical (R) steps as exact counts, for confusion matrices (docs/reports.md):
# tp = |W∩R|, fp = |W|-|W∩R|, fn = |R|-|W∩R|, tn = steps neither retained nor critical.
CONFUSION_COLUMNS = ("tp", "fp", "fn", "tn")
COLUMNS = COLUMNS + CONFUSION_COLUMNS + integrity.COLUMNS  # write integrity (docs/integrity.md); blank if undefined
DEFAULT_MEMORY_CAP = 2 << 30  # bytes of device memory one chunk may use; safe on a 24 GiB machine
BYTES_PER_RUN_STEP = 160      # store + policy state + XLA temporaries, per (run, step); measured
BYTES_PER_EPISODE_STEP = 64   # episode arrays (+ 12 per field slot)
# a slice of a large param grid, per run-step: 20,000 thresholds at a 256M cap peaked 477 MB over
# the interpreter's 310 MB when sized at BYTES_PER_RUN_STEP, 420 MB at 320, 335 MB (1.3x) at 400
GRID_BYTES_PER_RUN_STEP = 400
RUNS_PER_CALL = 16384         # beyond this, bigger calls stop paying on CPU (cache effects), measured


def check_budgets(budgets: Sequence[int]) -> np.ndarray:
    budgets = np.asarray(list(budgets))
    if budgets.size == 0:
        raise ValueError("budgets: give at least one budget")
    if not np.issubdtype(budgets.dtype, np.integer) or (budgets < 1).any() or (budgets >= 2**31).any():
        raise ValueError(f"budgets must be whole numbers of bytes between 1 and 2^31-1; got {budgets.tolist()}")
    return budgets.astype(np.int64)


def resolve_policies(spec: str | Sequence[str], tracks: Sequence[str]) -> dict[str, list[str]]:
    """Track → policy names. ``"reference"`` is the published line-up per track; otherwise the
    named policies each run on the asked tracks they support."""
    for track in tracks:
        check_any_track(track)
    if spec == "reference":
        if set(tracks) - set(PUBLISHED_TRACKS):
            raise ValueError(f"--policies reference: the published line-up covers {', '.join(PUBLISHED_TRACKS)} only; "
                             f"name the policies to run on {', '.join(sorted(set(tracks) - set(PUBLISHED_TRACKS)))}")
        return {track: list(lineup(track)) for track in tracks}
    names = [name for name in (spec.split(",") if isinstance(spec, str) else spec) if name]
    for name in names:
        if not set(make(name).tracks) & set(tracks):
            raise ValueError(f"policy {name!r} runs on tracks {', '.join(make(name).tracks)}, "
                             f"none of which was asked ({', '.join(tracks)})")
    return {track: [name for name in names if track in make(name).tracks] for track in tracks}


def chunk_size(encoded: EncodedEpisodes, n_budgets: int, memory_cap: int, n_devices: int) -> int:
    """Episodes per chunk: within the memory cap and RUNS_PER_CALL runs per device, balanced so
    the padded last chunk wastes little, and a multiple of the device count."""
    n_steps, n_fields = encoded.n_steps, encoded.arrays.field_value.shape[-1]
    per_episode = n_steps * (n_budgets * BYTES_PER_RUN_STEP + BYTES_PER_EPISODE_STEP + 12 * n_fields)
    per_device = max(min(memory_cap // per_episode // n_devices, RUNS_PER_CALL // n_budgets), 1)
    per_device_needed = -(-encoded.n_episodes // n_devices)
    n_chunks = -(-per_device_needed // per_device)
    return int(-(-per_device_needed // n_chunks) * n_devices)


def points_per_slice(encoded: EncodedEpisodes, n_budgets: int, n_points: int, memory_cap: int, n_devices: int) -> int:
    """Param grid points one call may run (with one episode per device): all ``n_points`` unless
    that would pass the memory cap or RUNS_PER_CALL; then the grid is run in slices of this many."""
    n_steps, n_fields = encoded.n_steps, encoded.arrays.field_value.shape[-1]
    episode_bytes = n_steps * (BYTES_PER_EPISODE_STEP + 12 * n_fields)
    by_memory = (memory_cap // n_devices - episode_bytes) // (n_steps * n_budgets * GRID_BYTES_PER_RUN_STEP)
    return int(max(1, min(n_points, by_memory, RUNS_PER_CALL // n_budgets)))


def _grid_slice(grid: dict | None, lo: int, hi: int) -> tuple[dict | None, int]:
    """(points ``lo:hi`` of a policy's grid, padded to ``hi - lo`` with its last point so that every
    slice has one shape (one compile); the number of real points). (None, 1) for no grid."""
    if grid is None:
        return None, 1
    real = {param: values[lo:hi] for param, values in grid.items()}
    n_real = len(next(iter(real.values())))
    if n_real == 0:
        return real, 0
    return {param: np.concatenate([values, np.repeat(values[-1:], hi - lo - n_real)]) for param, values in real.items()}, n_real


def oracle_table(encoded: EncodedEpisodes, track: str, budgets: np.ndarray, mode: str, indices) -> np.ndarray:
    """[n, B] oracle utility for the episodes ``indices`` under ``track``'s write costs."""
    costs = encoded.track_costs(track)[indices]
    lengths = encoded.arrays.length[indices]
    utility = encoded.utility64[indices]
    if mode == "exact":
        return oracle_lib.exact_batch(costs, utility, lengths, budgets)
    return np.stack([oracle_lib.reference(costs[n, :lengths[n]], utility[n, :lengths[n]], budgets)
                     for n in range(len(indices))])


def iter_sweep(encoded: EncodedEpisodes, budgets: Sequence[int] = PAPER_BUDGETS,
               policies: str | Sequence[str] = "reference", tracks: Sequence[str] = ("unprivileged", "privileged"),
               oracle: str = "exact", set_index: Sequence[int] | None = None, memory_cap: int = DEFAULT_MEMORY_CAP,
               devices=None, progress: Progress | None = None, params: dict | None = None,
               cluster=None, first_chunk: int = 0) -> Iterator[pd.DataFrame]:
    """Yield the results table chunk by chunk (see :func:`run_sweep`). ``cluster``: this process's
    place among several (``wpbjax.distributed``): it runs its share of every chunk, and only process 0
    yields, the whole chunk's rows. ``first_chunk``: skip the chunks before it (a resumed sweep;
    the chunk plan depends only on the arguments, the devices and the core count)."""
    budgets = check_budgets(budgets)
    if oracle not in oracle_lib.ORACLE_MODES:
        raise ValueError(f"unknown oracle mode {oracle!r}; expected one of {', '.join(oracle_lib.ORACLE_MODES)}")
    if memory_cap < 1:
        raise ValueError(f"memory cap must be a positive number of bytes; got {memory_cap}")
    plan = resolve_policies(policies, tracks)
    grids = param_grids(params, [name for names in plan.values() for name in names])
    param_columns = [f"param_{name}" for name in (params or {})]
    devices = devices or devices_lib.local_devices()
    n_episodes, n_budgets = encoded.n_episodes, len(budgets)
    set_index = np.zeros(n_episodes, np.int64) if set_index is None else np.asarray(set_index)
    n_points = max([len(next(iter(grid.values()))) for grid in grids.values() if grid] + [1])
    names = list(dict.fromkeys(name for names in plan.values() for name in names))
    # The first chunk compiles every policy's program: one thread per core overlaps one policy's
    # tracing (Python) with another's compiling (XLA, outside the GIL), 10-20% off a paper-grid sweep.
    # Later chunks reuse the programs and run one call at a time. Chunks fit the cap either way.
    first_chunk_workers = min(len(names), len(os.sched_getaffinity(0)))
    # a grid too large for one call runs in slices of points: each (chunk, slice) is one unit of
    # rows, in the published order within it
    per_slice = points_per_slice(encoded, n_budgets, n_points, memory_cap // first_chunk_workers, len(devices))
    slices = [(lo, lo + per_slice) for lo in range(0, n_points, per_slice)]  # the last one padded
    size = chunk_size(encoded, n_budgets * per_slice, memory_cap // first_chunk_workers, len(devices))
    # run-steps each policy's compiled program will do over the whole sweep (all chunks and tracks)
    n_chunks = -(-n_episodes // size)
    chunk_size_here = size if cluster is None else cluster.share_size(size, len(devices))
    work = {name: n_chunks * chunk_size_here * n_budgets * encoded.n_steps * sum(name in names for names in plan.values())
            for names in plan.values() for name in names}
    units = [(start, lo, hi) for start in range(0, n_episodes, size) for lo, hi in slices][first_chunk:]
    batches, oracles, chunk_start = None, None, None
    for unit, (start, lo, hi) in enumerate(units):
        real = np.arange(start, min(start + size, n_episodes))
        if cluster is not None:
            real = cluster.share(real)
            if len(real) == 0:  # more processes than this chunk's episodes: nothing to run here
                gathered = cluster.gather(None)
                if gathered is not None:
                    yield _in_order(gathered, param_columns)
                continue
        padded = np.concatenate([real, np.full(chunk_size_here - len(real), real[-1])])  # one shape for every chunk
        if start != chunk_start:  # a new chunk of episodes (its slices share batches and oracle)
            batches, oracles, chunk_start = _chunk_batches(encoded, plan, padded, devices), None, start
        # policies without swept params run once per chunk (in its first slice)
        slice_grids = {name: _grid_slice(grids[name], lo, hi) for name in names if grids[name] is not None or lo == 0}
        slice_grids = {name: grid for name, grid in slice_grids.items() if grid[1]}
        frames, oracles = _unit_frames(encoded, plan, slice_grids, lo, real, padded, budgets, batches, oracle, oracles,
                                       set_index, work, first_chunk_workers if unit == 0 else 1, progress)
        table = pd.concat(frames, ignore_index=True)
        if cluster is not None:
            table = cluster.gather(table)  # every process's share, in process order, on process 0
            if table is None:
                continue
            if progress is not None:  # the other processes' runs
                progress.advance(len(table) - sum(len(frame) for frame in frames), "other processes")
        yield _in_order(table, param_columns)


def _unit_frames(encoded, plan, slice_grids, lo, real, padded, budgets, batches, oracle, oracles, set_index, work,
                 workers, progress):
    """One unit's rows (a chunk's episodes x a slice of grid points): a frame per (track, policy) that
    runs in it, in the table's order, and the chunk's oracle (a future, submitted by its first unit)."""
    def policy_frames(name: str) -> dict:
        """Track -> results frame of policy ``name`` on this unit (every asked track it runs on)."""
        frames = {}
        for track_number, track in enumerate(plan):
            if name in plan[track]:
                run = _PolicyRun(name, track, (track_number, plan[track].index(name)), *slice_grids[name], lo)
                frames[track] = run.frame(encoded, real, padded, budgets, batches[track],
                                          lambda costs=cost_track(track): oracles.result()[costs], set_index, work[name])
        return frames

    by_policy = {}
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        # the oracle first (the policies' rows wait on it); one task for every cost track, so that
        # its program compiles once (two threads would both compile it)
        if oracles is None:
            oracles = pool.submit(lambda: {costs: oracle_table(encoded, costs, budgets, oracle, real)
                                           for costs in dict.fromkeys(map(cost_track, plan))})
        # longest compiles first (multi-action walks, more action kinds), so the threads finish together
        by_size = sorted(slice_grids, key=lambda name: -(2 * make(name).multi_action + len(make(name).kinds)))
        futures = {name: pool.submit(policy_frames, name) for name in by_size}
        for name, future in futures.items():
            by_policy[name] = future.result()
            if progress is not None:
                for track, frame in by_policy[name].items():
                    progress.advance(len(frame), f"{track} {name}")
    return [by_policy[name][track] for track in plan for name in plan[track] if name in by_policy], oracles


def _chunk_batches(encoded: EncodedEpisodes, plan: dict, padded: np.ndarray, devices) -> dict:
    """Track -> the chunk's episodes ``padded`` as that track's policies see them, on ``devices``."""
    batches = {}
    for track in plan:
        batch = encoded.host_batch(cost_track(track), padded)  # feedback and oracle pay unprivileged costs
        if not sees_utility(track):  # policies on these tracks cannot read the hidden utility
            batch = dataclasses.replace(batch, utility=np.zeros_like(batch.utility))
        batches[track] = devices_lib.place(batch, devices)
    return batches


def _in_order(table: pd.DataFrame, param_columns: list[str]) -> pd.DataFrame:
    """A chunk's rows in the published order (set, budget, episode, track and policy, grid point),
    with the published columns and one column per swept param (NaN where a policy has no such param)."""
    for column in param_columns:
        if column not in table:
            table[column] = np.nan
    sort_keys = ["_set", "_budget", "_episode", "_order"] + (["_point"] if "_point" in table else [])
    table = table.sort_values(sort_keys, kind="stable")
    return table[list(COLUMNS) + param_columns].reset_index(drop=True)


def parse_param_values(text: str) -> np.ndarray:
    """``start:stop:count`` (inclusive linspace) or ``v1,v2,...`` as a [P] float64 array (an array,
    not a list: a 100-million-point range is 800 MB here, not 3 GB of Python floats)."""
    try:
        if ":" in text:
            start, stop, count = text.split(":")
            if int(count) < 1 or not np.isfinite([float(start), float(stop)]).all():
                raise ValueError
            values = np.linspace(float(start), float(stop), int(count))
        else:
            values = np.asarray([float(part) for part in text.split(",") if part.strip()], np.float64)
    except (ValueError, MemoryError):
        raise ValueError(f"expected start:stop:count or comma-separated numbers, got {text!r}") from None
    if not values.size:
        raise ValueError(f"expected at least one value, got {text!r}")
    if not np.all(np.isfinite(values)):  # a NaN or inf param would give NaN metrics, not an error
        raise ValueError(f"expected finite numbers, got {text!r}")
    # repeated grid points would give duplicate rows (a range repeats only where float64 runs out
    # of resolution: neighbours compare equal)
    repeats = np.any(values[1:] == values[:-1]) if ":" in text else np.unique(values).size < values.size
    if repeats:
        raise ValueError(f"values repeat in {text!r}; list each grid point once")
    return values


def check_params(params: dict | None, names: Sequence[str]) -> dict:
    """Policy name -> its swept params (names), checking that every swept param belongs to some
    policy in ``names`` and that integer params get whole numbers."""
    params = {name: np.asarray(values) for name, values in (params or {}).items()}
    for param, values in params.items():
        owners = [name for name in dict.fromkeys(names) if param in make(name).params]
        if not owners:
            known = "; ".join(f"{name}: {', '.join(make(name).params) or 'none'}" for name in dict.fromkeys(names))
            raise ValueError(f"--param {param}: no selected policy has a param {param!r} (their params: {known})")
        if not values.size:
            raise ValueError(f"--param {param}: give at least one value")
        for name in owners:
            default = make(name).params[param]
            if isinstance(default, int) and np.any(values.astype(np.float64) != np.round(values.astype(np.float64))):
                raise ValueError(f"--param {param}: {name}'s {param} is an integer; got {values.tolist()[:20]}")
    return {name: [param for param in params if param in make(name).params] for name in dict.fromkeys(names)}


def grid_points(params: dict | None, names: Sequence[str]) -> dict[str, int]:
    """Policy name -> grid points it runs (the product of its swept params' value counts; 1 if none),
    without building the grid."""
    swept = check_params(params, names)
    return {name: int(np.prod([len(params[param]) for param in swept[name]], dtype=np.int64)) for name in swept}


def param_grids(params: dict | None, names: Sequence[str]) -> dict:
    """Policy name -> ``{param: [P] values}`` over the Cartesian product of the swept params it has
    (P points, the first param varying slowest), or None if it has none of them. A swept param that
    no policy in ``names`` has is an error, as is a non-integral value for an integer param."""
    swept = check_params(params, names)
    grids = {}
    for name, its_params in swept.items():
        if not its_params:
            grids[name] = None
            continue
        axes = np.meshgrid(*(np.asarray(params[param]) for param in its_params), indexing="ij")
        grids[name] = {param: axis.ravel() for param, axis in zip(its_params, axes)}
    return grids


@dataclasses.dataclass(frozen=True)
class _PolicyRun:
    """One policy on one track of a chunk: simulated, scored and laid out as results rows."""

    name: str
    track: str
    order: tuple        # (track number, policy number): the published row order within an episode
    grid: dict | None   # swept params of this policy ({param: [P] values}), or None
    n_points: int = 1     # real points of ``grid`` (the rest pad a slice of a large grid)
    first_point: int = 0  # the grid's first point in the whole grid (a slice of a large grid)

    def frame(self, encoded, real, padded, budgets, batch, oracle_utility, set_index, work) -> pd.DataFrame:
        """``oracle_utility()``: the [n, B] oracle utilities, asked for once the policy has run (so
        that the oracle, on another thread, computes meanwhile)."""
        policy = make(self.name)
        if self.grid is None and policy.plan is None:
            counts = simulate.simulate(policy, batch, budgets, episode_index=padded, work=work)
            host = {field: np.asarray(value)[:len(real)] for field, value in vars(counts).items()}
            return _rows(encoded, real, budgets, host, oracle_utility(), self.track, self.name, set_index, self.order)
        run_inputs = None
        if policy.plan is not None:  # hindsight: from the exact float64 utilities
            costs_from = cost_track(self.track)
            run_inputs = policy.plan(encoded.track_costs(costs_from)[padded], encoded.utility64[padded],
                                     encoded.arrays.length[padded], budgets)
        counts = simulate.simulate_grid(policy, batch, budgets, params=self.grid, run_inputs=run_inputs,
                                        episode_index=padded)
        # all grid points at once: [P, n, B] counts read as P * n episodes
        n_grid = self.n_points if self.grid else 1
        host = {field: np.asarray(value)[:n_grid, :len(real)].reshape((n_grid * len(real),) + value.shape[2:])
                for field, value in vars(counts).items()}
        frame = _rows(encoded, np.tile(real, n_grid), budgets, host, np.tile(oracle_utility(), (n_grid, 1)),
                      self.track, self.name, set_index, self.order)
        point = np.repeat(np.arange(n_grid), len(real) * len(budgets))
        for param, column in (self.grid or {}).items():
            frame[f"param_{param}"] = column[point]  # (real points only: point < n_grid)
        frame["_point"] = point + self.first_point
        return frame


def _rows(encoded, real, budgets, host, oracle_utility, track, name, set_index, order) -> pd.DataFrame:
    n, n_budgets = len(real), len(budgets)
    utility = policy_utility(host["retained"], encoded.utility64[real][:, None, :])
    columns = score(host, utility, oracle_utility, encoded.n_critical[real][:, None],
                    encoded.total_drift_events[real][:, None], encoded.arrays.length[real][:, None],
                    budgets[None, :])
    columns.update(confusion_counts(host, encoded.arrays.critical[real], encoded.arrays.valid[real],
                                    encoded.n_critical[real]))
    columns.update(integrity.columns(host, encoded.arrays, real, host["n_retained"]))
    episode_axis = np.broadcast_to(real[:, None], (n, n_budgets))
    columns.update(budget_bytes=budgets[None, :], episode_id=np.asarray(encoded.episode_id, object)[episode_axis],
                   mode=np.asarray(encoded.mode, object)[episode_axis], policy=name, track=track,
                   merge_actions=host["merge_actions"].astype(np.int64), _set=set_index[episode_axis],
                   _budget=np.arange(n_budgets)[None, :], _episode=episode_axis, _order=order[0] * 1000 + order[1])
    return pd.DataFrame({key: np.broadcast_to(value, (n, n_budgets)).ravel() for key, value in columns.items()})


def confusion_counts(host: dict, critical: np.ndarray, valid: np.ndarray, n_critical: np.ndarray) -> dict:
    """tp/fp/fn/tn per run ([n, B] int64) from the counts; ``critical``, ``valid``: [n, T] bool;
    ``n_critical``: [n] |R| (labels, so a critical t that names no step counts as a miss).
    W lies within the steps, so tn = steps − |W| − (critical steps − |W∩R|)."""
    n_hit, n_retained = host["n_hit"].astype(np.int64), host["n_retained"].astype(np.int64)
    n_steps = valid.sum(axis=-1, dtype=np.int64)[:, None]
    critical_steps = (critical & valid).sum(axis=-1, dtype=np.int64)[:, None]
    return {"tp": n_hit, "fp": n_retained - n_hit, "fn": n_critical.astype(np.int64)[:, None] - n_hit,
            "tn": n_steps - n_retained - (critical_steps - n_hit)}


def total_runs(encoded: EncodedEpisodes, n_budgets: int, policies, tracks, params: dict | None = None) -> int:
    """Runs of a sweep (a policy with swept params counts once per grid point)."""
    plan = resolve_policies(policies, tracks)
    points = grid_points(params, [name for names in plan.values() for name in names])
    return encoded.n_episodes * n_budgets * sum(points[name] for names in plan.values() for name in names)


def run_sweep(encoded: EncodedEpisodes, budgets: Sequence[int] = PAPER_BUDGETS,
              policies: str | Sequence[str] = "reference", tracks: Sequence[str] = ("unprivileged", "privileged"),
              oracle: str = "exact", set_index: Sequence[int] | None = None, quiet: bool = True,
              memory_cap: int = DEFAULT_MEMORY_CAP, devices=None, params: dict | None = None) -> pd.DataFrame:
    """Every (episode, budget, track, policy) run as one row with the published columns (+ merge_actions).

    ``set_index`` [N] groups episodes into sets (e.g. one per input file) for row order. ``params``:
    param name -> values; each policy runs over the Cartesian product of the swept params it has
    (vmapped: one compile per policy), with a ``param_NAME`` column per swept param (NaN for
    policies without it).
    """
    progress = Progress(total_runs(encoded, len(budgets), policies, tracks, params), enabled=not quiet)
    chunks = list(iter_sweep(encoded, budgets, policies, tracks, oracle, set_index, memory_cap, devices, progress,
                             params=params))
    progress.close()
    return pd.concat(chunks, ignore_index=True)


def leaderboard_sums(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """One ``(track, policy, budget_bytes)`` -> ``sum``, ``count`` (of f1) frame from result chunks
    and/or earlier such frames, in first-seen order."""
    sums = [part if "sum" in part else part.groupby(["track", "policy", "budget_bytes"], sort=False)["f1"].agg(["sum", "count"])
            for part in parts]
    return pd.concat(sums).groupby(level=[0, 1, 2], sort=False).sum()


def leaderboard_from_sums(sums: list[pd.DataFrame]) -> pd.DataFrame:
    """The leaderboard from per-chunk ``groupby(track, policy, budget).f1.agg(['sum', 'count'])``."""
    total = pd.concat(sums).groupby(level=[0, 1, 2], sort=False).sum()
    board = (total["sum"] / total["count"]).unstack("budget_bytes")
    order = total.index.droplevel("budget_bytes").unique()  # first-seen order, as in the table
    return board.reindex(order)[sorted(board.columns)]


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Mean F1 by (track, policy) × budget, rows in the table's order."""
    board = table.pivot_table(index=["track", "policy"], columns="budget_bytes", values="f1", aggfunc="mean")
    return board.reindex(pd.MultiIndex.from_frame(table[["track", "policy"]].drop_duplicates()))
