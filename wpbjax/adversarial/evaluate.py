"""Regimes scored in one compiled call: generate each regime's episodes, run the policy on them at the
regime's budget, and score the runs against the exact oracle -- all on device.

Per run the call returns exact integer counts ([M, E]: M regimes, E episodes each): the policy's
retained utility and the oracle's best utility in half units (every generated utility is a multiple
of 0.5), the hits, the retained steps and the critical steps. :func:`objective_values` turns them
into the objective on the host, in float64, as a results table would (``policy_utility /
oracle_utility``, ``f1``).

``read_accuracy`` reads the stores back: the call also returns each run's store history and the
episodes' arrays, and the host encodes the episodes, draws their default probes
(:func:`wpbjax.episodes.probes.with_default_probes`) and scores the reads with the default retriever
at K (:func:`wpbjax.scoring.reads.read_counts`), exactly as a sweep with ``--probes generate`` does.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from wpbjax.common.constants import NONE
from wpbjax.common.tracks import TRACKS, cost_track, sees_priority, sees_utility
from wpbjax.core.rollout import with_history
from wpbjax.core.scan import episode_keys, rollout
from wpbjax.episodes import probes as probes_lib
from wpbjax.episodes.batch import EpisodeBatch, round_up_float32
from wpbjax.episodes.encode import HEADER_BYTES, INDEX_BYTES
from wpbjax.episodes.generators import jax_gen
from wpbjax.policies.base import Policy
from wpbjax.runtime import devices as devices_lib, programs
from wpbjax.scoring import reads as reads_lib
from wpbjax.scoring.metrics import f1_from_counts, history, retained_mask

OBJECTIVES = ("utility_ratio", "f1", "read_accuracy")
DEFAULT_TOP_K = reads_lib.Retriever().top_k[0]  # K of read_accuracy unless given (a sweep's default)
# What the host needs of generated episodes to encode them for reads (jax_gen.to_encoded)
ENCODED_FIELDS = (
    "code",
    "critical",
    "write_cost",
    "api_id",
    "api_index",
    "api_ids",
    "named_api",
    "field_value",
    "field_present",
    "field_frag_len",
    "n_changes",
)
HALF_UNITS = np.round(jax_gen.UTILITY * 2).astype(np.int32)  # [codes] utility in units of 0.5
PRIORITY_LEVELS = np.unique(np.concatenate([jax_gen.PRIORITY, [0.0]]))  # ascending; 0.0 first
PRIORITY_RANK = np.searchsorted(PRIORITY_LEVELS, jax_gen.PRIORITY).astype(np.int32)  # [codes]
RUNS_PER_CHUNK = 1024  # regimes are run a few dozen at a time: a chunk's stores stay in cache


class ObjectiveError(ValueError):
    """An objective, policy or size the adversary cannot score (one line)."""


# The least bytes any generated step costs (an observation of 76 bytes: a one-digit api, no params,
# version 1; the shortest metadata view; header and index): a budget holds at most budget // this steps.
MIN_WRITE_COST = (
    76 + HEADER_BYTES + INDEX_BYTES + min(int(jax_gen.metadata_lengths(m).min()) for m in jax_gen.JAX_MODES)
)
EXACT_SEARCH_CELLS = 1024  # a search uses the exact oracle up to this table size, the relaxed one above


@dataclasses.dataclass(frozen=True)
class Group:
    """Consecutive regimes scored with one oracle: ``size`` regimes, an oracle table of ``n_values``
    cells (:func:`value_cells`), and ``oracle`` "exact", "relaxed" (the fractional-knapsack bound)
    or "none" (objectives that need no oracle)."""

    size: int
    n_values: int
    oracle: str


@dataclasses.dataclass(frozen=True)
class Setup:
    """The static part of an evaluation: what the compiled program depends on."""

    shape: jax_gen.Shape
    track: str
    groups: tuple  # (Group, ...) covering the regimes in order
    top_k: int = 0  # K of the read_accuracy objective's retriever; 0: no reads (no history kept)


def value_cells(n_steps: int, budget: int) -> int:
    """Oracle table size at ``budget``: the most utility (half units) its steps can hold, plus the zero."""
    most_steps = min(n_steps, int(budget) // MIN_WRITE_COST)
    return most_steps * int(HALF_UNITS.max()) + 1


def group(size: int, n_steps: int, budget: int, objective: str, search: bool) -> Group:
    """The oracle for ``size`` regimes at ``budget``: none for f1 and read_accuracy; exact, except in a search whose
    exact table would exceed EXACT_SEARCH_CELLS (then the relaxed bound ranks the regimes)."""
    cells = value_cells(n_steps, budget)
    if objective != "utility_ratio":
        return Group(size, 1, "none")
    return Group(size, cells, "relaxed" if search and cells > EXACT_SEARCH_CELLS else "exact")


def api_fact_slots(endpoint_index, version_number, n_endpoints: int, n_versions: int) -> dict:
    """``fact_key`` and ``fact_pair`` ([E, T, 1] int32) of generated episodes under the api rule, as
    :func:`wpbjax.episodes.facts.from_api` computes them on the host: the first position of each step's
    endpoint, and of its (endpoint, version) pair (-1 where the step has no endpoint). What the history
    policies read (the other fact tables serve only the host's integrity metrics). ``endpoint_index``,
    ``version_number``: [E, T] int32 in [0, n_endpoints) and [0, n_versions). A scan over the steps with
    a per-episode table of first positions: O(T) tables, not a [T, T] comparison."""

    def first_positions(endpoint, version):  # [T] each
        def step(first, pos):
            first_endpoint, first_pair = first
            has = endpoint[pos] >= 0
            e, v = jnp.maximum(endpoint[pos], 0), version[pos]
            key = jnp.where(first_endpoint[e] >= 0, first_endpoint[e], pos)
            pair = jnp.where(first_pair[e, v] >= 0, first_pair[e, v], pos)
            first_endpoint = first_endpoint.at[e].set(jnp.where(has, key, first_endpoint[e]))
            first_pair = first_pair.at[e, v].set(jnp.where(has, pair, first_pair[e, v]))
            return (first_endpoint, first_pair), (jnp.where(has, key, NONE), jnp.where(has, pair, NONE))

        empty = (jnp.full(n_endpoints, NONE, jnp.int32), jnp.full((n_endpoints, n_versions), NONE, jnp.int32))
        _, (key, pair) = jax.lax.scan(step, empty, jnp.arange(endpoint.shape[0]))
        return key, pair

    key, pair = jax.vmap(first_positions)(endpoint_index, version_number)
    return dict(fact_key=key[..., None].astype(jnp.int32), fact_pair=pair[..., None].astype(jnp.int32))


def device_batch(shape: jax_gen.Shape, generated: dict, track: str) -> EpisodeBatch:
    """What the engine sees ([E, T] leaves) of generated episodes (:func:`jax_gen.encoded_arrays`) on
    ``track``: the fields ``jax_gen.to_encoded`` fills, computed on device, and of the fact tables those
    the history policies read (:func:`api_fact_slots`)."""
    code = generated["code"]
    n_episodes, n_steps = code.shape
    api_id = generated["api_id"]
    is_api = api_id >= 0
    priority = jnp.asarray(round_up_float32(jax_gen.PRIORITY))[code]
    rank = jnp.asarray(PRIORITY_RANK)[code]
    if not sees_priority(cost_track(track)):
        priority, rank = jnp.zeros_like(priority), jnp.zeros_like(rank)  # 0.0 is level 0
    utility = jnp.asarray(jax_gen.UTILITY.astype(np.float32))[code]
    if not sees_utility(track):
        utility = jnp.zeros_like(utility)
    steps = jnp.broadcast_to(jnp.arange(n_steps, dtype=jnp.int32), code.shape)
    endpoint_index = jnp.where(is_api, api_id % shape.api_pool, NONE)
    version_number = jnp.where(is_api, api_id // shape.api_pool, 0)
    return EpisodeBatch(
        valid=jnp.ones(code.shape, bool),
        step_t=steps,
        write_cost=generated["write_cost"][..., TRACKS.index(cost_track(track))],
        api_id=api_id,
        api_is_str=is_api,
        api_index=generated["api_index"],
        api_ids=generated["api_ids"],
        field_value=generated["field_value"],
        field_present=generated["field_present"],
        field_frag_len=generated["field_frag_len"],
        priority=priority,
        priority_rank=rank,
        priority_levels=jnp.broadcast_to(
            jnp.asarray(round_up_float32(PRIORITY_LEVELS)), (n_episodes, len(PRIORITY_LEVELS))
        ),
        zero_rank=jnp.zeros(n_episodes, jnp.int32),
        utility=utility,
        critical=generated["critical"],
        t_last=jnp.full(n_episodes, n_steps - 1, jnp.int32),
        length=jnp.full(n_episodes, n_steps, jnp.int32),
        endpoint_index=endpoint_index,
        version_number=version_number,
        **jax_gen.named_columns(jnp, generated["named_api"], api_id, shape.api_pool),
        # versions stay below steps + 2 (the generator's version digits, jax_gen.Shape)
        **api_fact_slots(endpoint_index, version_number, shape.api_pool, n_steps + 2),
    )


def check_policy(policy: Policy, track: str) -> None:
    """Refuse what one compiled call cannot run: hindsight plans (host planning)."""
    if track not in policy.tracks:
        raise ObjectiveError(f"track: policy {policy.name!r} runs on tracks {', '.join(policy.tracks)}; got {track!r}")
    if policy.plan is not None:
        raise ObjectiveError(f"policies: {policy.name!r} plans on the host (hindsight); the adversary runs it not")


def oracle_half_units(weights, units, budget, n_values: int):
    """(best retained utility in half units at ``budget``, whether the table was too small) of one
    episode: the least weight reaching each value total (0/1 knapsack over value), ``weights``,
    ``units``: [T] int32."""
    unreachable = jnp.iinfo(jnp.int32).max
    top = int(HALF_UNITS.max())
    shifts = sorted({int(u) for u in HALF_UNITS if u > 0})  # a handful of static shifts: no gather

    def add(least, item):
        weight, value = item
        padded = jnp.concatenate([jnp.full(top, unreachable, jnp.int32), least])
        shifted = jnp.full(n_values, unreachable, jnp.int32)
        for shift in shifts:  # least[v - value], from a static slice
            shifted = jnp.where(value == shift, padded[top - shift : top - shift + n_values], shifted)
        with_item = jnp.where(shifted == unreachable, unreachable, shifted + weight)
        return jnp.minimum(least, with_item), None

    start = jnp.full(n_values, unreachable, jnp.int32).at[0].set(0)
    least, _ = jax.lax.scan(add, start, (weights, units))
    least = jax.lax.cummin(least, axis=0, reverse=True)  # ">= v": reaching v + 1 reaches v
    fits = least <= budget
    return jnp.sum(fits, dtype=jnp.int32) - 1, fits[-1]


def relaxed_oracle_half_units(weights, units, budget):
    """The fractional knapsack's optimum (items by utility per byte, the last one cut) in half units,
    float32: an upper bound on the exact oracle, above it by less than one step's utility. A sort per
    episode instead of the exact DP's T x V table (what makes a search generation cheap)."""
    density = jnp.where(weights > 0, units / jnp.maximum(weights, 1).astype(jnp.float32), jnp.inf)
    order = jnp.argsort(-density, stable=True)
    weights, units = weights[order], units[order]
    room = jnp.clip(budget - (jnp.cumsum(weights) - weights), 0, None)
    taken = jnp.where(weights <= room, 1.0, room / jnp.maximum(weights, 1).astype(jnp.float32))
    return jnp.sum(units * taken)


def _regime_counts(
    policy: Policy, setup: Setup, kind: Group, fast_trace: bool, params, meta_len, seeds, keys, knobs, budget
) -> dict:
    """[E] counts of one regime's episodes at its budget (with reads: and each run's store history, and the
    episodes' arrays, for the host). ``fast_trace``: see wpbjax.core.scan.initial_carry (the quick build's)."""
    generated = jax_gen.encoded_arrays(setup.shape, knobs, meta_len, seeds, with_latent=False)
    batch = device_batch(setup.shape, generated, setup.track)
    units = jnp.asarray(HALF_UNITS)[generated["code"]]
    runner = with_history(policy) if setup.top_k else policy

    def one(episode, episode_units, key):
        store = rollout(runner, params, episode, budget, key, fast_trace)
        kept = retained_mask(store, episode)
        best, capped = jnp.zeros((), jnp.float32), jnp.zeros((), bool)
        if kind.oracle == "exact":
            best, capped = oracle_half_units(episode.write_cost, episode_units, budget, kind.n_values)
        elif kind.oracle == "relaxed":
            best = relaxed_oracle_half_units(episode.write_cost, episode_units, budget)
        return dict(
            policy_units=jnp.sum(jnp.where(kept, episode_units, 0), dtype=jnp.int32),
            oracle_units=best.astype(jnp.float32),
            capped=capped,
            hits=jnp.sum(kept & episode.critical, dtype=jnp.int32),
            retained=jnp.sum(kept, dtype=jnp.int32),
            n_critical=jnp.sum(episode.critical, dtype=jnp.int32),
            **{name: value for name, value in history(store).items() if value is not None},
        )

    out = jax.vmap(one)(batch, units, keys)
    if setup.top_k:
        out.update({f"episode_{name}": generated[name] for name in ENCODED_FIELDS})
    return out


def _evaluate(
    policy: Policy, setup: Setup, chunk: int, params, meta_len, seeds, knobs, budgets, fast_trace: bool = False
) -> dict:
    keys = episode_keys(None, jnp.arange(seeds.shape[0]))
    parts, start = [], 0
    for kind in setup.groups:  # each group its own oracle table size (static), all in one program
        per_regime = functools.partial(_regime_counts, policy, setup, kind, fast_trace, params, meta_len, seeds, keys)
        part = jax.tree_util.tree_map(
            lambda leaf, start=start, kind=kind: leaf[start : start + kind.size], (knobs, budgets)
        )
        parts.append(jax.lax.map(lambda args, f=per_regime: f(*args), part, batch_size=min(chunk, kind.size)))
        start += kind.size
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves), *parts)


# A small search (a quick look, a test) is mostly compiling: it takes the quick build (identical counts).
_evaluate_jit, _evaluate_quick = programs.full_and_quick(
    _evaluate, functools.partial(_evaluate, fast_trace=True), static_argnums=(0, 1, 2)
)


def evaluate(policy: Policy, setup: Setup, knobs: dict, budgets, seeds, params=None, work: int | None = None) -> dict:
    """Counts of every (regime, episode) run: name -> [M, E] numpy arrays (``oracle_units``: float,
    exact integers under an exact oracle).

    ``knobs``: the generator's knob pytree with leaves [M] (:meth:`Space.to_knobs`); ``budgets``: [M]
    int32, each regime's budget, each within its group's (``setup.groups``); ``seeds``: [E, 2] uint32
    (:func:`jax_gen.episode_seeds`), the same episodes' randomness for every regime. Compiles once per
    (policy, setup, M, E). ``work``: run-steps the caller will run with this compiled program (default:
    this call's, M·E·T; a search's is every generation's); below ``QUICK_COMPILE_BELOW``
    (wpbjax.runtime.devices) a quicker-compiling, slower-running build is used, with identical counts."""
    n_episodes = seeds.shape[0]
    chunk = max(1, RUNS_PER_CHUNK // n_episodes)
    meta_len = jnp.asarray(jax_gen.metadata_lengths(setup.shape.mode))
    params = policy.resolve_params(params or {})
    if work is None:
        work = len(budgets) * n_episodes * setup.shape.steps  # run-steps
    program = _evaluate_quick if work < devices_lib.QUICK_COMPILE_BELOW else _evaluate_jit
    out = program(policy, setup, chunk, params, meta_len, seeds, knobs, jnp.asarray(budgets, jnp.int32))
    host = {name: np.asarray(value) for name, value in out.items()}
    if host["capped"].any():  # cannot happen with value_cells; a guard against a silent wrong number
        raise ObjectiveError("oracle table too small for these budgets")
    if setup.top_k:
        host.update(read_counts(setup, host))
    return host


def read_counts(setup: Setup, host: dict) -> dict:
    """``n_right``, ``n_probes`` ([M, E] int64) of the runs' reads: the episodes (``episode_*`` arrays
    [M, E, ...]) encoded on the host, their default probes drawn (keyed by mode and episode index, as a
    sweep of the regime's episodes draws them) and answered from each run's store history at K."""
    n_regimes, n_episodes = host["policy_units"].shape
    flat = {name: value.reshape((-1,) + value.shape[2:]) for name, value in host.items()}
    shape = setup.shape
    config = jax_gen.JaxGenConfig(
        mode=shape.mode, steps=shape.steps, api_pool=shape.api_pool, max_params=shape.max_params
    )
    encoded = jax_gen.to_encoded(config, {name: flat[f"episode_{name}"] for name in ENCODED_FIELDS})
    ids = np.tile(np.arange(n_episodes), n_regimes).astype(object)  # episode e of every regime: its draws
    encoded = probes_lib.with_default_probes(dataclasses.replace(encoded, episode_id=ids))
    runs = {name: flat[name][:, None] for name in reads_lib.HISTORY_FIELDS if name in flat}  # [n, B=1, T]
    retriever = reads_lib.Retriever(top_k=(setup.top_k,))
    counts = reads_lib.read_counts(
        runs, encoded, np.arange(len(ids)), encoded.track_costs(cost_track(setup.track)), retriever
    )
    return {name: counts[name][:, 0, 0].reshape(n_regimes, n_episodes) for name in ("n_right", "n_probes")}


def objective_values(counts: dict, objective: str) -> np.ndarray:
    """[M, E] float64 per-run objective: ``utility_ratio`` (retained / oracle utility; 1 where the
    oracle keeps nothing either), ``f1`` (retained vs critical steps) or ``read_accuracy`` (right
    answers / probes; 1 for an episode without probes, none of which can be wrong)."""
    if objective == "utility_ratio":
        oracle = counts["oracle_units"].astype(np.float64)
        return np.where(oracle > 0, counts["policy_units"] / np.maximum(oracle, 1), 1.0)
    if objective == "f1":
        return f1_from_counts(counts["hits"], counts["retained"], counts["n_critical"])
    if objective == "read_accuracy":
        probes = counts["n_probes"]
        return np.where(probes > 0, counts["n_right"] / np.maximum(probes, 1), 1.0)
    raise ObjectiveError(f"objective: expected one of {', '.join(OBJECTIVES)}; got {objective!r}")
