"""The sweep plan: every decision about a sweep, checked and made once, before anything runs.

A :class:`SweepPlan` holds the episodes, the budgets, which policies run on which track (the
line-up), each policy's param grid, the oracle mode, the devices and the chunking: the grid's
episodes cut into :class:`Chunk` s of one padded shape sized from a memory cap. Building one checks
every argument (a bad one fails here, before any output file is touched); running it is
:func:`wpbjax.sweeps.run.run_chunk` per chunk.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg, refuse_repeats
from wpbjax.common.budgets import PAPER_BUDGETS, check_budgets  # noqa: F401  (PAPER_BUDGETS re-exported)
from wpbjax.common.tracks import TRACKS as PUBLISHED_TRACKS, check_any_track
from wpbjax.episodes.encode import EncodedEpisodes
from wpbjax.policies import lineup, make
from wpbjax.scoring import oracle as oracle_lib
from wpbjax.scoring.reads import ReadPlan
from wpbjax.scoring.rows import COLUMNS
from wpbjax.sweeps.config import DEFAULT_MEMORY_CAP, DEFAULT_TRACKS, PUBLISHED_LINEUP

BYTES_PER_RUN_STEP = 160  # store + policy state + XLA temporaries, per (run, step) (docs/performance.md)
BYTES_PER_EPISODE_STEP = 64  # episode arrays (+ 12 per field slot)
# a slice of a large param grid, per run-step: sized so a slice's measured peak stays near the cap
# (docs/performance.md, "Bounded memory and size")
GRID_BYTES_PER_RUN_STEP = 400
RUNS_PER_CALL = 16384  # beyond this, bigger calls stop paying on CPU (cache effects; docs/performance.md)


def policy_record(name: str, tiered: bool = False):
    """The policy a sweep's name stands for: a registered :class:`wpbjax.policies.Policy` (or
    ``learned_gate:PATH``), or in a tiered sweep a :class:`wpbjax.tiers.policies.TierPolicy`. The one
    place a sweep turns a policy name into a policy."""
    if tiered:
        from wpbjax.tiers.policies import get_tier_policy

        return get_tier_policy(name)
    return make(name)


def resolve_policies(spec: str | Sequence[str], tracks: Sequence[str], tiered: bool = False) -> dict[str, list[str]]:
    """Track → policy names. ``"published"`` is the published
    line-up per track (in a tiered sweep, the tier line-up on every track); otherwise the named
    policies (a comma-separated string or a list) each run on the asked tracks they support (a tier
    policy on every track)."""
    tracks = list(tracks)
    if not tracks:
        raise ValueError("tracks: give at least one track")
    for track in tracks:
        check_any_track(track)
    if tiered:
        from wpbjax.tiers.policies import TIER_LINEUP

        published = spec == PUBLISHED_LINEUP
        names = list(TIER_LINEUP) if published else _names(spec)
        for name in names:
            policy_record(name, tiered)
        return {track: list(names) for track in tracks}
    if spec == PUBLISHED_LINEUP:
        if set(tracks) - set(PUBLISHED_TRACKS):
            raise ValueError(
                f"policies {spec!r}: the published line-up covers {', '.join(PUBLISHED_TRACKS)} only; "
                f"name the policies to run on {', '.join(sorted(set(tracks) - set(PUBLISHED_TRACKS)))}"
            )
        return {track: list(lineup(track)) for track in tracks}
    names = _names(spec)
    for name in names:
        if not set(policy_record(name).tracks) & set(tracks):
            raise ValueError(
                f"policy {name!r} runs on tracks {', '.join(policy_record(name).tracks)}, "
                f"none of which was asked ({', '.join(tracks)})"
            )
    return {track: [name for name in names if track in policy_record(name).tracks] for track in tracks}


def _names(spec: str | Sequence[str]) -> list[str]:
    """The policy names of a comma-separated string or a list, at least one."""
    names = [name.strip() for name in (spec.split(",") if isinstance(spec, str) else spec) if name.strip()]
    if not names:
        raise ValueError(f"policies: give at least one policy name (or {PUBLISHED_LINEUP!r}); got {spec!r}")
    return names


def parse_param_values(text: str) -> np.ndarray:
    """``start:stop:count`` (inclusive linspace) or ``v1,v2,...`` as a [P] float64 array (an array,
    not a list: 8 bytes a point, where Python floats in a list cost several times that; docs/performance.md)."""
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


def check_params(params: dict | None, names: Sequence[str], tiered: bool = False) -> dict:
    """Policy name -> its swept params (names), checking that every swept param belongs to some
    policy in ``names`` and that integer params get whole numbers."""
    params = {name: np.atleast_1d(np.asarray(values)) for name, values in (params or {}).items()}
    policies = {name: policy_record(name, tiered) for name in dict.fromkeys(names)}
    for param, values in params.items():
        owners = [name for name in policies if param in policies[name].params]
        if not owners:
            known = "; ".join(f"{name}: {', '.join(policy.params) or 'none'}" for name, policy in policies.items())
            raise ArgumentError(
                f"{arg('params')} {param}: no selected policy has a param {param!r} (their params: {known})"
            )
        if not values.size:
            raise ArgumentError(f"{arg('params')} {param}: give at least one value")
        for name in owners:
            default = policies[name].params[param]
            as_float = values.astype(np.float64)
            if isinstance(default, int) and np.any(as_float != np.round(as_float)):
                raise ArgumentError(
                    f"{arg('params')} {param}: {name}'s {param} is an integer; got {values.tolist()[:20]}"
                )
    return {name: [param for param in params if param in policy.params] for name, policy in policies.items()}


def grid_points(params: dict | None, names: Sequence[str], tiered: bool = False) -> dict[str, int]:
    """Policy name -> grid points it runs (the product of its swept params' value counts; 1 if none),
    without building the grid."""
    swept = check_params(params, names, tiered)
    return {name: int(np.prod([np.size(params[param]) for param in swept[name]], dtype=np.int64)) for name in swept}


def param_grids(params: dict | None, names: Sequence[str], tiered: bool = False) -> dict:
    """Policy name -> ``{param: [P] values}`` over the Cartesian product of the swept params it has
    (P points, the first param varying slowest), or None if it has none of them. A swept param that
    no policy in ``names`` has is an error, as is a non-integral value for an integer param."""
    swept = check_params(params, names, tiered)
    grids = {}
    for name, its_params in swept.items():
        if not its_params:
            grids[name] = None
            continue
        axes = np.meshgrid(*(np.atleast_1d(np.asarray(params[param])) for param in its_params), indexing="ij")
        grids[name] = {param: axis.ravel() for param, axis in zip(its_params, axes)}
    return grids


def chunk_size(
    encoded: EncodedEpisodes, n_runs: int, memory_cap: int, n_devices: int, n_episodes: int | None = None
) -> int:
    """Episodes per chunk, each run ``n_runs`` times by a call (budgets x tracks x grid points):
    within the memory cap and RUNS_PER_CALL runs per device, balanced over ``n_episodes`` (default:
    the set's) so the padded last chunk wastes little, and a multiple of the device count."""
    n_steps, n_fields = encoded.n_steps, encoded.arrays.field_value.shape[-1]
    per_episode = n_steps * (n_runs * BYTES_PER_RUN_STEP + BYTES_PER_EPISODE_STEP + 12 * n_fields)
    per_device = max(min(memory_cap // per_episode // n_devices, RUNS_PER_CALL // n_runs), 1)
    per_device_needed = -(-(n_episodes or encoded.n_episodes) // n_devices)
    n_chunks = -(-per_device_needed // per_device)
    return int(-(-per_device_needed // n_chunks) * n_devices)


def _layout(encoded: EncodedEpisodes, n_runs: int, n_points: int, call_cap: int, n_devices: int, whole: int) -> tuple:
    """(units of rows, grid points per slice, episodes per chunk) of calls of ``n_runs`` runs per
    episode and grid point: a grid too large for one call runs in slices of points (each (chunk,
    slice) one unit of rows)."""
    per_slice = points_per_slice(encoded, n_runs, n_points, call_cap, n_devices)
    size = chunk_size(encoded, n_runs * per_slice, call_cap, n_devices, whole)
    return -(-whole // size) * -(-n_points // per_slice), per_slice, size


def points_per_slice(encoded: EncodedEpisodes, n_runs: int, n_points: int, memory_cap: int, n_devices: int) -> int:
    """Param grid points one call may run (with one episode per device, run ``n_runs`` times per
    point: budgets x tracks): all ``n_points`` unless that would pass the memory cap or
    RUNS_PER_CALL; then the grid is run in slices of this many."""
    n_steps, n_fields = encoded.n_steps, encoded.arrays.field_value.shape[-1]
    episode_bytes = n_steps * (BYTES_PER_EPISODE_STEP + 12 * n_fields)
    by_memory = (memory_cap // n_devices - episode_bytes) // (n_steps * n_runs * GRID_BYTES_PER_RUN_STEP)
    return int(max(1, min(n_points, by_memory, RUNS_PER_CALL // n_runs)))


@dataclasses.dataclass(frozen=True, eq=False)
class Chunk:
    """One unit of rows: episodes ``start .. stop-1`` of the sweep at param grid points
    ``first_point .. end_point-1`` (a grid too large for one call runs in slices; policies without
    swept params run in a chunk's first slice). This process runs ``episodes`` of them (all, or its
    share among several processes), padded to ``size`` (one shape for every chunk)."""

    index: int  # 0, 1, ...: chunks are written in this order
    start: int
    stop: int
    size: int  # episodes per padded run of a chunk on this process
    episodes: np.ndarray  # [n] int64 the episode indices this process runs (may be empty)
    first_point: int = 0  # the slice of every policy's param grid this chunk runs (the last slice
    end_point: int = 1  # of a large grid padded to the others' size: one shape, one compile)

    @property
    def real(self) -> np.ndarray:
        """[n] the episode indices this process runs."""
        return self.episodes

    @property
    def padded(self) -> np.ndarray:
        """[size] those indices padded with copies of the last one."""
        return np.concatenate([self.episodes, np.full(self.size - len(self.episodes), self.episodes[-1])])


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """How a sweep is laid out on the machine: devices, chunks, slices of the param grid, threads. It never
    changes a row (only where and in which call it is computed); :func:`make_plan` chooses it."""

    devices: tuple
    call_devices: tuple  # the devices one call splits its episodes over: all of them, or the first
    #   alone when there are fewer episodes than devices (see make_plan)
    chunk_episodes: int  # episodes per (padded) chunk
    first_chunk_workers: int  # threads of the first chunk (it compiles every policy)
    points_per_slice: int  # param grid points per call (all of them unless the grid is too large)
    stack_tracks: bool  # a policy runs all its tracks in one call (else one call per track)
    work: dict  # policy name -> run-steps its program does over the sweep (this process)
    cluster: object = None  # wpbjax.runtime.distributed.Cluster: this process's place among several, or None


@dataclasses.dataclass(frozen=True, eq=False)
class SweepPlan:
    """A checked sweep (build it with :func:`make_plan`): what runs -- the episodes, budgets, line-up, param
    grids, oracle, reads and tiers, which fix every row -- and ``layout``, how it is laid out (devices, chunks)."""

    encoded: EncodedEpisodes
    budgets: np.ndarray  # [B] int64 bytes
    lineup: dict  # track -> [policy names], in the published row order
    grids: dict  # policy name -> {param: [P] values} or None
    param_columns: tuple  # ("param_NAME", ...) for each swept param
    oracle: str  # an oracle mode (wpbjax.scoring.oracle.ORACLE_MODES)
    set_index: np.ndarray  # [N] int64 episode set of each episode (row order)
    layout: Layout
    first_episode: int = 0  # a block of a larger set (wpbjax.sweeps.blocks): its first episode's number
    n_episodes_total: int = 0  # ... and the whole set's episode count (0: the plan covers the whole set)
    reads: ReadPlan = ReadPlan()  # probes and retriever (wpbjax.scoring.reads): one row per K of each run
    tiers: TierSettings | None = None  # tiered runs (docs/tiers.md): a row per (checkpoint, journal) budget pair

    @property
    def columns(self) -> tuple:
        """The results table's columns: the published ones (or a tiered sweep's), then one per swept param."""
        from wpbjax.tiers.rows import TIER_COLUMNS

        return (TIER_COLUMNS if self.tiers is not None else COLUMNS) + self.param_columns

    @property
    def budget_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """([R] checkpoint, [R] journal) bytes of each run of a tiered sweep, checkpoint-major (every journal
        budget of the first checkpoint budget first)."""
        journal = self.tiers.journal_budgets
        return np.repeat(self.budgets, len(journal)), np.tile(journal, len(self.budgets))

    @property
    def policy_names(self) -> list[str]:
        return list(dict.fromkeys(name for names in self.lineup.values() for name in names))

    @property
    def n_chunks(self) -> int:
        return -(-self.encoded.n_episodes // self.layout.chunk_episodes)

    @property
    def episodes_per_run(self) -> int:
        """Episodes of one padded chunk run on this process (its share when there are several)."""
        layout = self.layout
        if layout.cluster is None:
            return layout.chunk_episodes
        return layout.cluster.share_size(layout.chunk_episodes, len(layout.devices))

    def chunks(self) -> list[Chunk]:
        """The sweep's chunks (units of rows) in order: episode chunks, each in slices of grid points;
        with several processes, each holds this process's share of the episodes."""
        n, size, per_slice = self.encoded.n_episodes, self.layout.chunk_episodes, self.layout.points_per_slice
        n_points = max([self.points(name) for name in self.policy_names] + [1])
        slices = [(lo, lo + per_slice) for lo in range(0, n_points, per_slice)]
        chunks = []
        for start in range(0, n, size):
            episodes = np.arange(start, min(start + size, n))
            if self.layout.cluster is not None:
                episodes = self.layout.cluster.share(episodes)
            chunks += [
                Chunk(len(chunks), start, min(start + size, n), self.episodes_per_run, episodes, lo, hi)
                for lo, hi in slices
            ]
        return chunks

    def points(self, name: str) -> int:
        """Param grid points of policy ``name`` (1 if it sweeps none)."""
        grid = self.grids[name]
        return len(next(iter(grid.values()))) if grid else 1

    @property
    def total_runs(self) -> int:
        """Runs of the sweep, every block's (a policy with swept params counts once per grid point)."""
        return (
            (self.n_episodes_total or self.encoded.n_episodes)
            * len(self.budgets)
            * (len(self.tiers.journal_budgets) if self.tiers is not None else 1)
            * sum(self.points(name) for names in self.lineup.values() for name in names)
            * len(self.reads.retriever.top_k)
        )


@dataclasses.dataclass(frozen=True)
class TierSettings:
    """A tiered sweep's settings (:class:`wpbjax.sweeps.config.Tiers`), checked: each run keeps a journal
    beside its checkpoint (docs/tiers.md), and the sweep's budget axis is every (checkpoint, journal) pair."""

    journal_budgets: np.ndarray  # [J] int64 bytes of the journal (0: none)
    crash_rate: float  # per-step crash probability
    crash_seed: int  # the crash draws' seed
    costs: object  # wpbjax.tiers.costs.CostModel: the model calls' byte-equivalent weights
    calls_per_step: float  # the compute budget (inf: none) ...
    call_burst: float | None  # ... and the calls its bucket holds


def check_tiers(tiers) -> TierSettings:
    """The checked :class:`TierSettings` of a :class:`wpbjax.sweeps.config.Tiers` config."""
    from wpbjax.tiers import engine as tiers_lib
    from wpbjax.tiers.costs import CostModel

    journal = tiers_lib.tier_budgets(tiers.journal_budgets, "journal_budgets").astype(np.int64)
    refuse_repeats(arg("journal_budgets"), journal.tolist(), ArgumentError)
    if not 0 <= tiers.crash_rate <= 1:
        raise ArgumentError(f"{arg('crash_rate')}: expected a probability within [0, 1]; got {tiers.crash_rate!r}")
    tiers_lib.compute_budget(tiers.calls_per_step, tiers.call_burst)  # checked
    return TierSettings(
        journal,
        float(tiers.crash_rate),
        int(tiers.crash_seed),
        CostModel(**(tiers.costs or {})),
        float(tiers.calls_per_step),
        tiers.call_burst,
    )


def check_sweep(
    budgets: Sequence[int] = PAPER_BUDGETS,
    policies: str | Sequence[str] = PUBLISHED_LINEUP,
    tracks: Sequence[str] = DEFAULT_TRACKS,
    oracle: str = "exact",
    memory_cap: int = DEFAULT_MEMORY_CAP,
    params: dict | None = None,
    tiers=None,
) -> tuple:
    """Check a sweep's arguments without its episodes (cheap: callers check before generating them;
    the param grid is not built). ``tiers``: a :class:`wpbjax.sweeps.config.Tiers` config (a tiered sweep:
    tier policies, and a checkpoint budget may be 0). Returns (budgets [B] int64, line-up, grid points per
    policy, oracle mode, :class:`TierSettings` or None)."""
    tiered = tiers is not None
    if tiered:
        from wpbjax.tiers.engine import tier_budgets

        budgets = tier_budgets(budgets, "budgets").astype(np.int64)
    else:
        budgets = check_budgets(budgets)
    oracle = oracle_lib.check_mode(oracle)
    if memory_cap < 1:
        raise ValueError(f"memory cap must be a positive number of bytes; got {memory_cap}")
    lineup_ = resolve_policies(policies, tracks, tiered)
    refuse_repeats("budgets", budgets.tolist())
    for names in lineup_.values():
        refuse_repeats("policies", names)
    points = grid_points(params, [name for names in lineup_.values() for name in names], tiered)
    return budgets, lineup_, points, oracle, check_tiers(tiers) if tiered else None


def make_plan(
    encoded: EncodedEpisodes,
    budgets: Sequence[int] = PAPER_BUDGETS,
    policies: str | Sequence[str] = PUBLISHED_LINEUP,
    tracks: Sequence[str] = DEFAULT_TRACKS,
    oracle: str = "exact",
    set_index: Sequence[int] | None = None,
    memory_cap: int = DEFAULT_MEMORY_CAP,
    devices=None,
    params: dict | None = None,
    cluster=None,
    first_episode: int = 0,
    n_episodes_total: int | None = None,
    reads: ReadPlan | None = None,
    tiers=None,
) -> SweepPlan:
    """Check every argument and fix the sweep's line-up, grids and chunks (see :func:`wpbjax.sweeps.run_sweep`).
    ``cluster``: this process's place among several (:mod:`wpbjax.runtime.distributed`): each runs its share of
    every chunk, and process 0 gathers the rows. ``first_episode``, ``n_episodes_total``: ``encoded``
    is the block of episodes ``first_episode ..`` of a set of ``n_episodes_total`` (see
    :mod:`wpbjax.sweeps.blocks`): devices and chunks are chosen for the whole set, and the episodes'
    random keys are their numbers in it. ``reads``: the probes and the retriever (default: the episodes'
    ``probes`` labels, K = 5; wpbjax.scoring.reads); the plan's episodes carry the probes it reads with.
    ``tiers``: a :class:`wpbjax.sweeps.config.Tiers` config: tiered runs (docs/tiers.md), every (checkpoint
    budget, journal budget) pair."""
    from wpbjax.runtime import devices as devices_lib

    budgets, lineup_, _, oracle, tier_settings = check_sweep(
        budgets, policies, tracks, oracle, memory_cap, params, tiers
    )
    tiered = tier_settings is not None
    reads = ReadPlan() if reads is None else reads
    encoded = reads.apply(encoded)
    names = list(dict.fromkeys(name for names in lineup_.values() for name in names))
    grids = param_grids(params, names, tiered)
    n_episodes = encoded.n_episodes
    whole = n_episodes_total or n_episodes  # the set the devices and chunks are chosen for
    set_index = np.zeros(n_episodes, np.int64) if set_index is None else np.asarray(set_index, np.int64)
    if set_index.shape != (n_episodes,):
        raise ValueError(f"set_index: expected one set number per episode ({n_episodes}); got shape {set_index.shape}")
    n_points = max([len(next(iter(grid.values()))) for grid in grids.values() if grid] + [1])
    # (a sweep of few runs in one process starts JAX on one core, see devices.start_on_one_core)
    most_tracks = max(sum(name in names for names in lineup_.values()) for name in names)  # of one policy
    n_budgets = len(budgets) * (len(tier_settings.journal_budgets) if tiered else 1)  # runs per episode and point
    runs_per_call = whole * n_budgets * most_tracks * n_points if cluster is None else None
    devices = tuple(devices or devices_lib.local_devices(runs_per_call=runs_per_call))
    # Fewer episodes than devices: splitting them over every device pads each call with copies (one
    # 200,000-step episode ran as 4 runs on 2 devices, 1 of them real), so each call runs on one
    # device, and the calls of different policies side by side (the CPU runtime runs them at once).
    call_devices = devices if whole >= len(devices) or cluster is not None else devices[:1]
    # The first chunk compiles every policy's program: one thread per core overlaps one policy's
    # tracing (Python) with another's compiling (XLA, outside the GIL).
    # Later chunks reuse the programs and run one call at a time. Chunks fit the cap either way.
    first_chunk_workers = min(len(names), len(os.sched_getaffinity(0)))
    call_cap = memory_cap // first_chunk_workers
    # A policy runs all its tracks in one call (its episodes once per track, stacked): fewer calls,
    # which is what a small sweep's time is. Where that makes more chunks (a call's runs and memory
    # grow with its tracks), one call per track: fewer chunks cost no more than stacked calls on a
    # large grid (docs/performance.md).
    layouts = [
        _layout(encoded, n_budgets * tracks, n_points, call_cap, len(call_devices), whole)
        for tracks in (most_tracks, 1)
    ]
    # (chunks of the stacked layout, per_slice, size) vs one track per call: fewer units of rows win
    stack_tracks = layouts[0][0] <= layouts[1][0] and not tiered  # (a tiered run is one call per track)
    _, per_slice, size = layouts[0] if stack_tracks else layouts[1]
    n_chunks = -(-whole // size)
    per_run = size if cluster is None else cluster.share_size(size, len(devices))
    work = {
        name: n_chunks * per_run * n_budgets * encoded.n_steps * sum(name in names for names in lineup_.values())
        for name in names
    }
    layout = Layout(
        devices=devices,
        call_devices=call_devices,
        chunk_episodes=size,
        first_chunk_workers=first_chunk_workers,
        points_per_slice=per_slice,
        stack_tracks=stack_tracks,
        work=work,
        cluster=cluster,
    )
    return SweepPlan(
        encoded=encoded,
        budgets=budgets,
        lineup=lineup_,
        grids=grids,
        param_columns=tuple(f"param_{name}" for name in (params or {})),
        oracle=oracle,
        set_index=set_index,
        layout=layout,
        first_episode=first_episode,
        n_episodes_total=n_episodes_total or 0,
        reads=reads,
        tiers=tier_settings,
    )
