"""Running a sweep plan: one chunk at a time (:func:`run_chunk`), as one table (:func:`run_sweep`) or into
a results writer (:func:`write_chunks`).

Within a chunk the oracle runs on a thread while the policies run (the first chunk on one thread
per core: it compiles every policy's program); rows come in the published harness's order
(episode set, budget, episode, track, policy), so a sweep that fits one chunk (the paper grid
does) is in exactly that order.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Callable, Iterable, Sequence

import jax
import numpy as np
import pandas as pd

from wpbjax.common.tracks import cost_track, sees_utility
from wpbjax.core import rollout
from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.files.results_io import csv_rows
from wpbjax.runtime import devices as devices_lib
from wpbjax.runtime.progress import Progress
from wpbjax.scoring import reads
from wpbjax.scoring.oracle import oracle_batch
from wpbjax.scoring.rows import board_keys, board_metric, leaderboard_sums, score_rows
from wpbjax.sweeps.plan import (
    DEFAULT_MEMORY_CAP,
    DEFAULT_TRACKS,
    PAPER_BUDGETS,
    PUBLISHED_LINEUP,
    Chunk,
    SweepPlan,
    make_plan,
    policy_record,
)


def oracle_tables(plan: SweepPlan, chunk: Chunk) -> dict[str, np.ndarray]:
    """Cost track -> [n, B] oracle utility of the chunk's episodes (one task for every cost track, so
    that the oracle's program compiles once)."""
    encoded, real = plan.encoded, chunk.real
    if plan.tiers is not None:  # tiered rows have no regret
        return {}
    return {
        costs: oracle_batch(
            encoded.track_costs(costs)[real],
            encoded.utility64[real],
            encoded.arrays.length[real],
            plan.budgets,
            plan.oracle,
        )
        for costs in dict.fromkeys(map(cost_track, plan.lineup))
    }


def _track_batch(plan: SweepPlan, chunk: Chunk, tracks: tuple, devices: tuple):
    """The padded chunk's episodes once per track in ``tracks``, stacked on the episode axis
    ([len(tracks) * size] episodes), on ``devices``."""
    parts = []
    for track in tracks:
        batch = plan.encoded.host_batch(cost_track(track), chunk.padded)  # feedback and oracle pay unprivileged costs
        if not sees_utility(track):  # policies on these tracks cannot read the hidden utility
            batch = dataclasses.replace(batch, utility=np.zeros_like(batch.utility))
        parts.append(batch)
    stacked = parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves), *parts)
    return devices_lib.place(stacked, devices)


def _policy_rows(
    plan: SweepPlan, chunk: Chunk, name: str, tracks: tuple, batch, oracle_utility: Callable[[str], np.ndarray]
) -> dict[str, dict]:
    """Track -> rows of policy ``name`` on the chunk (as column arrays, :func:`wpbjax.scoring.rows.score_rows`),
    for each of its ``tracks``, from one call on
    ``batch`` (:func:`_track_batch`: the chunk once per track). ``oracle_utility(cost_track)``: the
    [n, B] oracle utilities, asked for once the policy has run (the oracle computes meanwhile on
    another thread)."""
    policy, encoded = policy_record(name), plan.encoded
    history = reads.has_probes(encoded)
    if history:  # the store records when each item came and went: what reads are scored on
        policy = rollout.with_history(policy)
    grid, n_grid = _grid_slice(plan.grids[name], chunk)
    real, padded, n = chunk.real, chunk.padded, len(chunk.real)
    index = np.tile(padded + plan.first_episode, len(tracks))  # each track's runs draw the same keys
    if grid is None and policy.plan is None:
        counts = rollout.batch_counts(policy, batch, plan.budgets, episode_index=index, work=plan.layout.work[name])
        # one grid point (on the host: indexing a device array would be one more dispatched program per field)
        counts = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[None], counts)
    else:
        run_inputs = None
        if policy.plan is not None:  # hindsight: from the exact float64 utilities
            parts = [
                policy.plan(
                    encoded.track_costs(cost_track(track))[padded],
                    encoded.utility64[padded],
                    encoded.arrays.length[padded],
                    plan.budgets,
                )
                for track in tracks
            ]
            run_inputs = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
        counts = rollout.grid_counts(
            policy,
            batch,
            plan.budgets,
            params=grid,
            run_inputs=run_inputs,
            episode_index=index,
            # every call runs the slice's points (padded): a plan counts one point per call
            work=plan.layout.work[name] * (1 if grid is None else chunk.end_point - chunk.first_point),
        )
    counts = {
        field: np.asarray(value) for field, value in vars(counts).items() if value is not None
    }  # [P, tracks x size, B, ...]
    frames = {}
    for number, track in enumerate(tracks):
        # the slice's real grid points at once: [P, n, B] counts, read as P * n episodes
        first = number * len(padded)
        host = {
            field: value[:n_grid, first : first + n].reshape((n_grid * n,) + value.shape[2:])
            for field, value in counts.items()
        }
        order = list(plan.lineup).index(track) * 1000 + plan.lineup[track].index(name)
        episodes = np.tile(real, n_grid)
        read_columns = (
            reads.read_metrics(host, encoded, episodes, cost_track(track), plan.reads.retriever)
            if history
            else reads.blank_columns(
                (len(episodes), len(plan.budgets), len(plan.reads.retriever.top_k)), plan.reads.retriever.top_k
            )
        )
        frame = score_rows(
            encoded,
            episodes,
            plan.budgets,
            host,
            np.tile(oracle_utility(cost_track(track)), (n_grid, 1)),
            track,
            name,
            plan.set_index,
            order,
            read_columns,
        )
        if grid is not None:
            point = np.repeat(np.arange(n_grid), n * len(plan.budgets) * len(plan.reads.retriever.top_k))
            for param, column in grid.items():
                frame[f"param_{param}"] = column[point]
            frame["_point"] = point + chunk.first_point
        frames[track] = frame
    return frames


def _tier_policy_rows(plan: SweepPlan, chunk: Chunk, name: str, track: str) -> dict:
    """Rows of tier policy ``name`` on the chunk and ``track`` (:func:`wpbjax.tiers.rows.tier_part`): one call
    per grid point of the chunk's slice (params are traced: one compile), each over every budget pair."""
    from wpbjax.tiers import engine as tier_engine, rows as tier_rows

    policy, encoded, settings = policy_record(name, tiered=True), plan.encoded, plan.tiers
    checkpoint, journal = plan.budget_pairs
    grid, n_grid = _grid_slice(plan.grids[name], chunk)
    real, padded, n = chunk.real, chunk.padded, len(chunk.real)
    batch = encoded.host_batch(cost_track(track), padded)
    crash_pos = None if encoded.crash_pos is None else encoded.crash_pos[padded]
    order = list(plan.lineup).index(track) * 1000 + plan.lineup[track].index(name)
    run_inputs = None
    if policy.plan is not None:  # a Python policy's action log (wpbjax.host.tiers), looked up by episode content
        costs = encoded.track_costs(cost_track(track))[padded]
        run_inputs = policy.plan(costs, encoded.utility64[padded], encoded.arrays.length[padded], (checkpoint, journal))
    parts = []
    for point in range(n_grid):
        params = {param: values[point].item() for param, values in (grid or {}).items()}
        result = tier_engine.simulate_tiers(
            policy,
            batch,
            checkpoint,
            journal,
            params=params,
            crash_rate=settings.crash_rate,
            seed=settings.crash_seed,
            crash_pos=crash_pos,
            calls_per_step=settings.calls_per_step,
            call_burst=settings.call_burst,
            episode_index=padded + plan.first_episode,  # crash draws keyed by the episode's number in the set
            run_inputs=run_inputs,
            work=plan.layout.work[name],  # the sweep's, so a large sweep's small chunks take the full build
        )
        result = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[:n], result)  # the real episodes
        part = tier_rows.tier_part(
            result,
            encoded,
            real,
            track,
            checkpoint,
            journal,
            settings.costs,
            plan.reads.retriever,
            name,
            plan.set_index,
            order,
        )
        if grid is not None:
            for param, values in grid.items():
                part[f"param_{param}"] = np.full(len(part["_episode"]), values[point])
            part["_point"] = np.full(len(part["_episode"]), point + chunk.first_point)
        parts.append(part)
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def _grid_slice(grid: dict | None, chunk: Chunk) -> tuple[dict | None, int]:
    """(the chunk's points of a policy's grid, padded to the slice size with its last point so that
    every slice has one shape; the number of real points). (None, 1) for a policy without a grid."""
    if grid is None:
        return None, 1
    real = {param: values[chunk.first_point : chunk.end_point] for param, values in grid.items()}
    n_real = len(next(iter(real.values())))
    size = chunk.end_point - chunk.first_point
    return {
        param: np.concatenate([values, np.repeat(values[-1:], size - n_real)]) for param, values in real.items()
    }, n_real


def _runs_in(plan: SweepPlan, chunk: Chunk, name: str) -> bool:
    """Whether policy ``name`` has rows in the chunk: grid points in its slice, or (no grid) the
    chunk's first slice."""
    grid = plan.grids[name]
    return chunk.first_point == 0 if grid is None else chunk.first_point < plan.points(name)


def run_chunk(
    plan: SweepPlan, chunk: Chunk, progress: Progress | None = None, compiles: bool | None = None
) -> pd.DataFrame | None:
    """The results rows of one chunk of the plan (``COLUMNS`` + the plan's param columns), in row order.
    With several processes (``plan.layout.cluster``) each runs its share and process 0 gets the whole
    chunk's rows (a collective: every process calls it for every chunk); the others get None.
    ``compiles``: this is the first chunk run in the process (default: chunk 0), so it runs its
    policies on one thread per core (their tracing and compiling overlap)."""
    rows = chunk_rows(plan, chunk, progress, compiles)
    return None if rows is None else rows.table()


@dataclasses.dataclass(frozen=True)
class ChunkRows:
    """A chunk's rows before they are one table: ``parts`` (column arrays, one per (track, policy) of
    ``keys``, in the published order; or one part gathered from several processes)."""

    parts: list
    keys: list  # [(track, policy)] of each part ([] for a gathered part)
    columns: tuple  # the table's (SweepPlan.columns)

    def table(self) -> pd.DataFrame:
        """The rows in the published order, with the plan's columns."""
        return _in_order(self.parts, self.columns)


def chunk_rows(
    plan: SweepPlan,
    chunk: Chunk,
    progress: Progress | None = None,
    compiles: bool | None = None,
    oracles: concurrent.futures.Future | None = None,
    on_part: Callable[[str, str, dict], None] | None = None,
) -> ChunkRows | None:
    """:func:`run_chunk` in two steps: the runs now, and their rows (:meth:`ChunkRows.table` puts them
    in order and makes the table: a tenth of a large chunk's time, which a writer does on its own
    thread while the next chunk runs). None where :func:`run_chunk` returns None. ``oracles``: the
    chunk's oracle tables (:func:`oracle_tables`) being computed elsewhere (default: here, first);
    ``on_part(track, policy, part)``: called (on this thread) with each part as its policy finishes."""
    compiles = chunk.index == 0 if compiles is None else compiles
    # calls of one device side by side (see Layout.call_devices) keep every core busy in every chunk
    side_by_side = compiles or len(plan.layout.call_devices) < len(plan.layout.devices)
    keys, parts = (
        _chunk_frames(plan, chunk, progress, plan.layout.first_chunk_workers if side_by_side else 1, oracles, on_part)
        if len(chunk.real)
        else ([], [])
    )
    if plan.layout.cluster is None:
        return ChunkRows(parts, keys, plan.columns) if parts else None
    every = list(dict.fromkeys(column for part in parts for column in part)) + ["_point"]
    table = pd.DataFrame(_joined(parts, dict.fromkeys(every))) if parts else None
    gathered = plan.layout.cluster.gather(table)  # every process's share, in process order, on process 0
    if gathered is None:
        return None
    if progress is not None:  # the other processes' runs
        progress.advance(len(gathered) - (0 if table is None else len(table)), "other processes")
    return ChunkRows([{column: gathered[column].to_numpy() for column in gathered}], [], plan.columns)


def _chunk_frames(
    plan: SweepPlan,
    chunk: Chunk,
    progress: Progress | None,
    workers: int,
    oracles: concurrent.futures.Future | None,
    on_part: Callable | None = None,
) -> tuple[list, list[dict]]:
    """This process's rows of a chunk: ([(track, policy)], one part (column arrays) of each), in the
    published order."""
    names = [name for name in plan.policy_names if _runs_in(plan, chunk, name)]
    tracks_of = {name: tuple(track for track in plan.lineup if name in plan.lineup[track]) for name in names}
    # the tracks of each call of a policy: all in one, or one call each
    calls_of = {
        name: [tracks] if plan.layout.stack_tracks else [(track,) for track in tracks]
        for name, tracks in tracks_of.items()
    }
    batches = {
        tracks: _track_batch(plan, chunk, tracks, plan.layout.call_devices)
        for tracks in {tracks for calls in calls_of.values() for tracks in calls}
    }
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        if oracles is None:  # the oracle first (the policies' rows wait on it)
            oracles = pool.submit(oracle_tables, plan, chunk)

        def policy_frames(name: str) -> dict:
            """Track -> rows of policy ``name`` on the chunk (every asked track it runs on)."""
            frames = {}
            if plan.tiers is not None:
                return {track: _tier_policy_rows(plan, chunk, name, track) for track in tracks_of[name]}
            for tracks in calls_of[name]:
                frames.update(
                    _policy_rows(plan, chunk, name, tracks, batches[tracks], lambda costs: oracles.result()[costs])
                )
            return frames

        # Threads side by side: longest compiles first (multi-action walks, more store features), so that
        # they finish together. One call at a time: the slowest runs last, so that the writer, making
        # each finished part's text meanwhile, has at most its parts left when the chunk ends.
        by_size = (
            names
            if plan.tiers is not None
            else sorted(
                names,
                key=lambda name: -(2 * policy_record(name).multi_action + len(policy_record(name).features)),
                reverse=workers == 1,
            )
        )
        futures = {name: pool.submit(policy_frames, name) for name in by_size}
        by_policy = {}
        for name, future in futures.items():
            by_policy[name] = future.result()
            for track, part in by_policy[name].items():
                if progress is not None:
                    progress.advance(_n_rows(part), f"{track} {name}")
                if on_part is not None:
                    on_part(track, name, part)
    keys = [(track, name) for track in plan.lineup for name in plan.lineup[track] if name in by_policy]
    return keys, [by_policy[name][track] for track, name in keys]


def _n_rows(part: dict) -> int:
    """Rows in a part (column arrays)."""
    return len(part["_episode"]) if "_episode" in part else len(part["budget_bytes"])


def _joined(parts: list[dict], columns) -> dict:
    """Column -> the parts' arrays of it end to end (NaN where a part has no such column: a swept
    param the policy lacks, the grid point of a policy without a grid)."""
    lengths = [_n_rows(part) for part in parts]
    return {
        column: np.concatenate(
            [part[column] if column in part else np.full(length, np.nan) for part, length in zip(parts, lengths)]
        )
        for column in columns
    }


def _row_order(parts: list[dict]) -> np.ndarray:
    """[rows] the published order of a chunk's rows (``parts`` end to end, with their row-order
    columns): set, budget, episode, track and policy, grid point; stable."""
    keys = ["_set", "_budget", "_episode", "_order"] + (["_point"] if any("_point" in part for part in parts) else [])
    columns = _joined(parts, keys)
    # np.lexsort: stable, last key first; a NaN grid point (a policy without a grid) ties only within its own part
    return np.lexsort([np.nan_to_num(columns[key], nan=-1) for key in reversed(keys)])


def _in_order(parts: list[dict], columns) -> pd.DataFrame:
    """A chunk's rows (``parts``: column arrays with the row-order columns) in the published order
    (:func:`_row_order`), with ``columns`` (the published ones, or a tiered sweep's, and one per swept
    param: NaN where a policy has no such param), as one table built once."""
    columns = list(columns)
    order, joined = _row_order(parts), _joined(parts, columns)
    # (the gathered arrays are the table's own: copy=False spares pandas a copy of every number)
    return pd.DataFrame({column: joined[column][order] for column in columns}, copy=False)


def _chunk_sums(rows: ChunkRows) -> pd.DataFrame:
    """``leaderboard_sums([rows.table()])`` grouped by part number rather than by the track and
    policy strings (slow to make for every row), the parts' (track, policy) put in after."""
    parts, keys, metric = rows.parts, board_keys(rows.columns), board_metric(rows.columns)
    order, joined = _row_order(parts), _joined(parts, [*keys, metric])
    number = np.repeat(np.arange(len(parts)), [_n_rows(part) for part in parts])[order]
    frame = pd.DataFrame({"_part": number, **{key: joined[key][order] for key in [*keys, metric]}}, copy=False)
    sums = frame.groupby(["_part", *keys], sort=False, dropna=False)[metric].agg(["sum", "count"])
    part = sums.index.get_level_values("_part")
    named = [np.array([key[side] for key in rows.keys], object)[part] for side in (0, 1)]
    sums.index = pd.MultiIndex.from_arrays(
        [*named, *(sums.index.get_level_values(key) for key in keys)], names=["track", "policy", *keys]
    )
    return sums


def _csv_part(part: dict, columns: list) -> tuple | None:
    """(one part's rows as CSV lines, :func:`wpbjax.files.results_io.csv_rows`; the table's schema), its
    ``columns`` typed as a whole table's would be (NaN: blank; a param the policy lacks: blank), or
    None where a value spans lines."""
    import pyarrow as pa

    n = _n_rows(part)
    table = pa.table(
        {
            column: pa.array(part[column] if column in part else np.full(n, np.nan), from_pandas=True)
            for column in columns
        }
    )
    lines = csv_rows(table)
    return None if lines is None else (lines, table.schema)


def run_sweep(
    encoded: EncodedEpisodes,
    budgets: Sequence[int] = PAPER_BUDGETS,
    policies: str | Sequence[str] = PUBLISHED_LINEUP,
    tracks: Sequence[str] = DEFAULT_TRACKS,
    oracle: str = "exact",
    set_index: Sequence[int] | None = None,
    quiet: bool = True,
    memory_cap: int = DEFAULT_MEMORY_CAP,
    devices=None,
    params: dict | None = None,
) -> pd.DataFrame:
    """Every (episode, budget, track, policy) run as one row with the published columns (+ merge_actions
    and the confusion counts).

    ``set_index`` [N] groups episodes into sets (e.g. one per input file) for row order. ``params``:
    param name -> values; each policy runs over the Cartesian product of the swept params it has
    (vmapped: one compile per policy), with a ``param_NAME`` column per swept param (NaN for
    policies without it).
    """
    plan = make_plan(encoded, budgets, policies, tracks, oracle, set_index, memory_cap, devices, params)
    with Progress(plan.total_runs, enabled=not quiet) as progress:
        return pd.concat([run_chunk(plan, chunk, progress) for chunk in plan.chunks()], ignore_index=True)


def write_chunks(
    plan: SweepPlan,
    writer,
    progress: Progress | None = None,
    chunks: Iterable[Chunk] | None = None,
    sums: pd.DataFrame | None = None,
    after_write: Callable | None = None,
) -> pd.DataFrame | None:
    """Run ``chunks`` (default: all of the plan's, in order); each chunk's table is made
    (:func:`chunk_rows`) and handed to ``writer.write`` (:class:`wpbjax.files.results_io.ResultsWriter`) on
    a background thread while the next chunk computes (pyarrow's writer leaves the GIL; at most one
    chunk waits to be written; a failed write stops the sweep with its error at the next chunk).
    Committing the writer is the caller's.

    ``sums``: the running F1 sums of chunks already written (a resumed sweep); ``after_write(sums)``
    is called once a chunk's bytes are written, with the sums up to it (a resume manifest records
    them). Returns the running sums (:func:`wpbjax.scoring.rows.leaderboard_from_sums` makes the
    leaderboard), or None if nothing was written. With several processes only process 0 has a
    writer; the others pass None."""
    written, first, totals = None, True, {"sums": sums}
    # A .csv file's rows are made CSV text part by part as the policies finish, on the writer's
    # thread while the chunk still runs; the chunk's text is then put in order line by line. The last
    # chunk's write, a large sweep's tail, is left only that ordering and the file's bytes.
    as_text = writer is not None and writer.format == "csv" and plan.layout.cluster is None
    columns = list(plan.columns)

    def save(rows: ChunkRows, texts: dict) -> None:
        lines = [texts[key].result() for key in rows.keys] if as_text else None
        if lines is not None and all(line is not None for line in lines):
            import pyarrow as pa

            ordered = pa.concat_arrays([text for text, _ in lines]).take(_row_order(rows.parts))
            writer.write_csv_rows(ordered, lines[0][1])
            sums = _chunk_sums(rows)
        else:  # not a .csv (or a value spans lines): the whole table
            table = rows.table()
            writer.write(table)
            sums = leaderboard_sums([table])
        totals["sums"] = leaderboard_sums([part for part in (totals["sums"], sums) if part is not None])
        if after_write is not None:
            after_write(totals["sums"])

    chunks = list(plan.chunks() if chunks is None else chunks)
    # Each chunk's oracle is computed one chunk ahead, on a thread of its own: its DP runs beside the
    # previous chunk's policies (whose tracing holds the GIL, leaving a core to it), not before the
    # chunk's own policies as run_chunk runs it.
    with concurrent.futures.ThreadPoolExecutor(1) as background, concurrent.futures.ThreadPoolExecutor(1) as ahead:
        oracles = {}

        def oracle_ahead(number: int) -> None:
            if number < len(chunks) and len(chunks[number].real) and number not in oracles:
                oracles[number] = ahead.submit(oracle_tables, plan, chunks[number])

        for number, chunk in enumerate(chunks):
            oracle_ahead(number)
            oracle_ahead(number + 1)
            texts = {}

            def on_part(track: str, name: str, part: dict, texts=texts) -> None:
                texts[track, name] = background.submit(_csv_part, part, columns)

            rows = chunk_rows(
                plan,
                chunk,
                progress,
                compiles=first,
                oracles=oracles.pop(number, None),
                on_part=on_part if as_text else None,
            )
            first = False
            if rows is None or writer is None:
                continue
            if written is not None:
                written.result()  # raises if that write failed
            written = background.submit(save, rows, texts)
        if written is not None:
            written.result()
    return totals["sums"]
