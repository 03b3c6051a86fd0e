"""Episodes generated on device: a small latent per step, and every encoded array computed from it.

The JAX generator runs the published drift process (SEMANTICS §6) with ``jax.random`` keys instead
of Python's ``random``: statistically the same episodes, not the same draws. Per step it draws the
*latent* (endpoint, drift, push/pop of a param, deprecated, and the new regimes' extras, see
docs/generators.md) and computes, arithmetically, what the encoder would compute from
the episode's JSON: write costs per track (digit counts and list lengths, never a serialisation),
api ids, field value ids and delta fragment lengths, priorities and their ranks, utilities and
critical flags. :func:`wpbjax.episodes.generators.decode.decode_episodes` turns the same latent into JSON
episodes, and encoding those gives identical sweep rows (tested).

Design notes:

* **Random stream.** One ``jax.random.key`` per episode (``fold_in(key(seed), episode index)``, so an
  episode never depends on how a set is chunked) gives two threefry words; the per-step words are
  a counter hash of them (two rounds of a 32-bit avalanche mix): threefry for every step's words was
  an order of magnitude slower (docs/performance.md).
* **Params without a stack.** A param list changes by push (``p{j}_{version}``) or pop. Its JSON
  length needs its length ``L`` and the digits of its elements. Pushed versions grow up the
  list, so the elements' digit classes are non-decreasing bottom to top, and the number of
  elements of class <= d is the running minimum of ``L`` since the endpoint's version last had d
  digits. So each endpoint carries a handful of counters, not a list.
* **Value ids** are exact under Python equality among steps with the same api, which is every
  comparison the store makes (a MERGE needs equal apis; SEMANTICS §3): the params id is
  (endpoint, version, reordered), the other fields' ids are their values. Two different apis
  whose param lists happen to coincide get different ids.
* **Static vs traced.** ``mode``, ``steps``, ``api_pool`` and ``max_params`` shape the program;
  every probability, burst setting and the relevance horizon is traced (no recompiles).
* **Layout.** The scan over steps is step-major (episodes contiguous on the last axis); the latent
  and the arrays derived from it are two jitted functions (XLA fused them worse as one).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

import wpbjax.episodes.facts as facts
from wpbjax.common.constants import NONE
from wpbjax.common.tracks import TRACKS, view_metadata
from wpbjax.episodes.batch import EncodedEpisodes, concat
from wpbjax.episodes.encode import HEADER_BYTES, INDEX_BYTES, json_len
from wpbjax.episodes.generators.published_gen import MODES as PUBLISHED_MODES, DriftConfig
from wpbjax.runtime import devices as devices_lib, programs

NEW_MODES = ("delayed_relevance", "rollback", "decoy", "docs_migration")
# Fitted to a real drift stream (docs/real_drift.md): the decoy process (cosmetic changes that are not
# critical, as most of a real API's changes are not breaking) with the bursty drift schedule (a release
# breaks many endpoints at once). Its knobs are KNOB_SETS["stripe_like"].
FITTED_MODES = ("stripe_like",)
JAX_MODES = PUBLISHED_MODES + NEW_MODES + FITTED_MODES
DECOY_MODES = ("decoy", "stripe_like")

# What each step is (obs_kind), how its endpoint's params changed (op), and which decoy it shows.
API, DOC, GUIDE = 0, 1, 2
NO_CHANGE, PUSH, POP, REVERT = 0, 1, 2, 3
NO_DECOY, REORDER, DOCS_TOUCH, VERSION_STRING = 0, 1, 2, 3

# Utility codes: (utility u_t, metadata priority). The published modes use 0-3 with priority
# clamp(u/6) as the published generator; the new regimes add a change whose worth is only known
# in hindsight (priority says "a change", utility says "not needed") and migration guides.
UTILITY_CODES = (
    (1.0, 1.0 / 6.0),  # 0 an ordinary step
    (0.5, 0.5 / 6.0),  # 1 low value: a redundant repeat, a decoy, a documentation page
    (5.0, 5.0 / 6.0),  # 2 a drift (critical)
    (6.0, 6.0 / 6.0),  # 3 a drift inside a burst (critical)
    (1.0, 5.0 / 6.0),  # 4 a change that turned out not to matter (irrelevant or reverted drift)
    (4.0, 4.0 / 6.0),  # 5 a migration guide (critical)
)
UTILITY = np.array([u for u, _ in UTILITY_CODES], np.float64)
PRIORITY = np.array([p for _, p in UTILITY_CODES], np.float64)

DOC_SECTIONS = ("overview", "authentication", "errors", "pagination", "rate_limits", "changelog")
DOC_MIN_CHARS, DOC_SPAN_CHARS = 1000, 4000  # content length 1000..4999 characters
DEPRECATED_PROB = 0.3
GOLDEN = 0x9E3779B9


@dataclasses.dataclass(frozen=True)
class JaxGenConfig(DriftConfig):
    """Knobs of the JAX generator: the published ones (:class:`DriftConfig`) plus the new regimes'."""

    horizon: int = 8  # delayed_relevance: a drift matters if its endpoint is used within this many steps
    rollback_prob: float = 0.35  # rollback: chance that an endpoint's next change reverts its last drift
    decoy_prob: float = 0.25  # decoy: chance that a non-drift step carries a cosmetic change
    docs_prob: float = 0.2  # docs_migration: chance that a step is a documentation page
    guide_prob: float = 0.05  # docs_migration: chance that a step is a migration guide

    def __post_init__(self):
        if self.mode not in JAX_MODES:
            raise ValueError(f"mode must be one of {', '.join(JAX_MODES)}; got {self.mode!r}")
        for name, low in (("steps", 1), ("api_pool", 1), ("max_params", 2), ("horizon", 1)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}; got {getattr(self, name)}")
        if self.steps >= 1 << 20 or self.api_pool > 512 or self.max_params > 1000:  # ids stay within int32
            raise ValueError("steps must be < 2^20, api_pool <= 512 and max_params <= 1000")
        if not -(2**31) <= self.seed < 2**31:
            raise ValueError(f"seed must fit in int32; got {self.seed}")
        if self.burst_interval < 0 or self.burst_len < 0:
            raise ValueError("burst_interval and burst_len must be >= 0")
        for name in (
            "drift_prob",
            "burst_drift_prob",
            "redundancy_prob",
            "rollback_prob",
            "decoy_prob",
            "docs_prob",
            "guide_prob",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1]; got {getattr(self, name)}")
        if self.docs_prob + self.guide_prob > 1.0:
            raise ValueError("docs_prob + guide_prob must be <= 1")

    @property
    def shape(self) -> Shape:
        return Shape(self.mode, self.steps, self.api_pool, self.max_params)

    def knobs(self) -> dict:
        """The traced numbers (a pytree of scalars)."""
        floats = (
            "drift_prob",
            "burst_drift_prob",
            "redundancy_prob",
            "rollback_prob",
            "decoy_prob",
            "docs_prob",
            "guide_prob",
        )
        knobs = {name: np.float32(getattr(self, name)) for name in floats}
        knobs.update(
            burst_interval=np.int32(self.burst_interval),
            burst_len=np.int32(self.burst_len),
            horizon=np.int32(self.horizon),
        )
        return knobs


# Knob sets fitted to real drift streams, one per shipped vendor (``VENDOR_like``), each of the stripe_like mode:
# ``JaxGenConfig(**KNOB_SETS[name], seed=..., steps=...)`` or, on the command line, ``--knob-set NAME``
# (docs/generators.md). Fitted by experiments/real_drift.py to the statistics of ``real:VENDOR``'s 200-step
# windows (drift rate, redundancy, critical fraction, burstiness, bytes per step, endpoints per episode;
# wpbjax.episodes.generators.stream_stats); docs/real_drift.md gives the fits and what each leaves.
KNOB_SETS = {
    "stripe_like": dict(
        mode="stripe_like",
        api_pool=200,
        max_params=1000,
        drift_prob=0.03,
        burst_interval=80,
        burst_len=15,
        burst_drift_prob=1.0,
        decoy_prob=1.0,
    ),
    "openai_like": dict(
        mode="stripe_like",
        api_pool=125,
        max_params=384,
        drift_prob=0.03,
        burst_interval=100,
        burst_len=15,
        burst_drift_prob=1.0,
        decoy_prob=1.0,
    ),
    "digitalocean_like": dict(
        mode="stripe_like",
        api_pool=150,
        max_params=320,
        drift_prob=0.02,
        burst_interval=80,
        burst_len=8,
        burst_drift_prob=0.5,
        decoy_prob=1.0,
    ),
    "discord_like": dict(
        mode="stripe_like",
        api_pool=125,
        max_params=1000,
        drift_prob=0.01,
        burst_interval=100,
        burst_len=15,
        burst_drift_prob=1.0,
        decoy_prob=1.0,
    ),
}


def knob_set(name: str, **overrides) -> JaxGenConfig:
    """The config of a fitted knob set (:data:`KNOB_SETS`), ``overrides`` (seed, steps, ...) applied."""
    if name not in KNOB_SETS:
        raise ValueError(f"no knob set {name!r}; known: {', '.join(KNOB_SETS)}")
    return JaxGenConfig(**{**KNOB_SETS[name], **overrides})


@dataclasses.dataclass(frozen=True)
class Shape:
    """The static part of a config: what the compiled program depends on."""

    mode: str
    steps: int
    api_pool: int
    max_params: int

    @property
    def bursty(self) -> bool:
        return self.mode in ("burst_drift", "burst_redundancy", "stripe_like")

    @property
    def decoys(self) -> bool:
        return self.mode in DECOY_MODES

    @property
    def redundant(self) -> bool:
        return self.mode in ("redundancy", "burst_redundancy")

    @property
    def n_words(self) -> int:
        """32-bit random words per step: 3 for the published process, more for the regimes' extras."""
        return {"docs_migration": 5, "rollback": 4, "decoy": 4, "stripe_like": 4}.get(self.mode, 3)

    @property
    def version_digit_classes(self) -> int:
        """Digits of the largest possible version (steps + 1)."""
        return len(str(self.steps + 1))

    @property
    def state_dtype(self):
        """Per-endpoint counters (versions, lengths, slots: all <= steps + api_pool + max_params) and
        the scan's outputs of them are int16 when they fit: half the memory traffic of the scan."""
        fits = self.steps + self.api_pool + self.max_params < np.iinfo(np.int16).max
        return jnp.int16 if fits else jnp.int32

    @property
    def n_fields(self) -> int:
        return 4 if self.decoys else 3

    @property
    def field_keys(self) -> tuple:
        return ("params", "deprecated", "version", "docs_rev")[: self.n_fields]

    @property
    def api_slots(self) -> int:
        """Api index table size before trimming: every initial version plus one per change."""
        return self.api_pool + self.steps


def digits(x):
    """Decimal digits of a non-negative int32 array, numpy or JAX (1 for 0)."""
    count = 1
    for power in (10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000):
        count = count + (x >= power).astype(np.int32)
    return count


def _mix(x):
    """A 32-bit avalanche mix (bijective), the step of the per-step counter hash."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def step_words(seeds, n_steps: int, n_words: int, salt: int = 0):
    """[T, W, N] uint32 per-step random words from each episode's two threefry words ``seeds`` [N, 2]
    (episodes on the last axis: the scan over steps then works on contiguous vectors)."""
    counter = (
        jnp.arange(n_steps * n_words, dtype=jnp.uint32).reshape(n_steps, n_words, 1) + jnp.uint32(salt)
    ) * jnp.uint32(GOLDEN)
    return _mix(_mix(counter ^ seeds[:, 1]) ^ seeds[:, 0])


def _uniform(word):
    """A uniform float32 in [0, 1) from a word's top 24 bits."""
    return (word >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def _below(word16, n):
    """floor(word16 * n / 2^16): an index in [0, n) from 16 random bits."""
    return ((word16 * jnp.uint32(n)) >> 16).astype(jnp.int32)


def episode_seeds(seed: int, start: int, count: int):
    """[count, 2] uint32: each episode's two words, from ``fold_in(key(seed), index)``."""
    return _episode_seeds(jnp.int32(seed), jnp.uint32(start), count)


@functools.partial(jax.jit, static_argnums=2)
def _episode_seeds(seed, start, count: int):
    root = jax.random.key(seed)
    indices = start + jnp.arange(count, dtype=jnp.uint32)
    return jax.vmap(lambda i: jax.random.bits(jax.random.fold_in(root, i), (2,), jnp.uint32))(indices)


def latent(shape: Shape, knobs: dict, seeds, with_ops: bool = True) -> dict:
    """The latent of a batch of episodes, step-major: per-step arrays [T, N] (``below`` [T, C-1, N])
    and ``n_initial`` [P, N]. ``seeds``: [N, 2] uint32. ``with_ops=False`` leaves ``op`` (push/pop,
    what the decoder replays) zero outside ``rollback``, where no array needs it. (Step-major keeps the scan's vectors
    contiguous; :func:`encoded_arrays` transposes only what it returns.)"""
    n_steps, n_apis = shape.steps, shape.api_pool
    words = step_words(seeds, n_steps, shape.n_words)
    # Endpoint j starts with params p{j}_0 .. p{j}_{n-1}, n uniform in 2..max_params.
    n_initial = 2 + _below(
        step_words(seeds, 1, n_apis, salt=n_steps * shape.n_words)[0] >> 16, shape.max_params - 1
    )  # [P, N]
    col = {name: index for index, name in enumerate(_state_columns(shape))}
    episode_rows = jnp.arange(seeds.shape[0], dtype=jnp.int32) * n_apis

    def step(carry, inputs):
        previous, n_changes, table = carry  # [N], [N], [N * P, S]
        t, w = inputs  # [], [W, N]
        draws = _step_draws(shape, knobs, t, w, previous)
        rows = episode_rows + draws["endpoint"]  # [N] row of (episode, endpoint)
        stored = table[rows].T  # [S, N] this endpoint's state
        new_row, out = _endpoint_update(shape, knobs, col, stored.astype(jnp.int32), draws, n_changes, w)
        changed = draws["drift"] | (out["decoy"] == DOCS_TOUCH)
        new_row = jnp.where(changed[None, :], jnp.stack(new_row).astype(shape.state_dtype), stored)
        table = table.at[rows].set(new_row.T, unique_indices=True, indices_are_sorted=True)
        return (draws["endpoint"], n_changes + draws["drift"], table), _step_outputs(shape, draws, out, with_ops)

    zeros = jnp.zeros(seeds.shape[0], jnp.int32)
    initial = (zeros, zeros, _initial_table(shape, n_initial))
    _, steps = jax.lax.scan(step, initial, (jnp.arange(n_steps, dtype=jnp.int32), words))
    return _complete(shape, steps, words, n_initial)


def _state_columns(shape: Shape) -> list:
    """Each endpoint's state is one row of an [N * P, S] int32 table (one row read and one row
    written per episode and step, so a step costs O(S), not O(P * S)): version, list length, initial
    params left, api slot, and the number of elements of digit class <= c for c = 1..C-1 ("below");
    rollback adds the same for the list before the endpoint's last drift, and decoy a docs revision counter."""
    n_classes = shape.version_digit_classes
    names = ["version", "length", "initial_left", "slot"] + [f"below{c}" for c in range(1, n_classes)]
    if shape.mode == "rollback":
        names += ["snap_length", "snap_initial_left"] + [f"snap_below{c}" for c in range(1, n_classes)] + ["revertible"]
    if shape.decoys:
        names += ["docs_rev"]
    return names


def _initial_table(shape: Shape, n_initial) -> jax.Array:
    """[N * P, S] the endpoints' state before the first step (``n_initial``: [P, N])."""
    names = _state_columns(shape)
    endpoints = jnp.arange(shape.api_pool)[:, None]
    initial = {
        "version": jnp.ones_like(n_initial),
        "length": n_initial,
        "initial_left": n_initial,
        "slot": jnp.broadcast_to(endpoints, n_initial.shape).astype(jnp.int32),
        "snap_length": n_initial,
        "snap_initial_left": n_initial,
        "revertible": jnp.zeros_like(n_initial),
        "docs_rev": jnp.zeros_like(n_initial),
    }
    table = jnp.stack([initial.get(name, n_initial) for name in names], axis=-1).astype(shape.state_dtype)  # [P, N, S]
    return jnp.swapaxes(table, 0, 1).reshape(-1, len(names))  # [N * P, S]: one read and one write of a row per step


def _step_draws(shape: Shape, knobs: dict, t, w, previous) -> dict:
    """What step ``t``'s words ``w`` [W, N] decide before the endpoint's state is read: the
    endpoint, the step kind, whether it drifts, and the uniforms later decisions use."""
    u_drift, coin = _uniform(w[0]), (w[0] & 1) == 1
    u_repeat = _uniform(w[1])
    fresh = _below(w[2] >> 16, shape.api_pool)
    u_deprecated = (w[2] & 0xFFFF).astype(jnp.float32) * jnp.float32(2.0**-16)
    u_regime = _uniform(w[3]) if shape.n_words > 3 else jnp.ones_like(u_drift)
    endpoint = fresh
    if shape.redundant:
        endpoint = jnp.where((t > 0) & (u_repeat < knobs["redundancy_prob"]), previous, fresh)
    kind = jnp.zeros_like(fresh) + API
    if shape.mode == "docs_migration":
        kind = jnp.where(
            u_regime < knobs["docs_prob"],
            DOC,
            jnp.where(u_regime < knobs["docs_prob"] + knobs["guide_prob"], GUIDE, API),
        )
    in_burst = (knobs["burst_interval"] > 0) & (
        jnp.mod(t, jnp.maximum(knobs["burst_interval"], 1)) < knobs["burst_len"]
    )
    drift_prob = (
        jnp.where(in_burst, knobs["burst_drift_prob"], knobs["drift_prob"]) if shape.bursty else knobs["drift_prob"]
    )
    drift = (u_drift < drift_prob) & (kind == API)
    return dict(
        endpoint=endpoint,
        kind=kind,
        drift=drift,
        coin=coin,
        u_regime=u_regime,
        u_deprecated=u_deprecated,
        in_burst=in_burst,
    )


def _endpoint_update(shape: Shape, knobs: dict, col: dict, row, draws: dict, n_changes, w) -> tuple:
    """(the endpoint's new state row, a list of [N] columns; this step's outputs) from its state
    ``row`` [S, N] int32: a drift pushes or pops a param (or, in rollback, reverts the last drift)."""
    n_classes, drift = shape.version_digit_classes, draws["drift"]
    bounds = jnp.asarray([10**c for c in range(1, n_classes)], jnp.int32)[:, None]  # class <= c: version < 10^c
    version, length, initial_left = row[col["version"]], row[col["length"]], row[col["initial_left"]]
    below = row[col["slot"] + 1 : col["slot"] + n_classes]  # [C-1, N]
    revert = jnp.zeros_like(drift)
    if shape.mode == "rollback":
        revert = drift & (row[col["revertible"]] > 0) & (draws["u_regime"] < knobs["rollback_prob"])
    pop = drift & ~revert & draws["coin"] & (length > 0)
    push = drift & ~revert & ~pop
    new_version = version + drift
    new_length = length + push - pop
    new_initial_left = jnp.where(pop, jnp.minimum(initial_left, new_length), initial_left)
    new_below = jnp.where(new_version < bounds, new_length, jnp.minimum(below, new_length))
    if shape.mode == "rollback":  # a revert restores the list as it was before the endpoint's last drift
        new_length = jnp.where(revert, row[col["snap_length"]], new_length)
        new_initial_left = jnp.where(revert, row[col["snap_initial_left"]], new_initial_left)
        new_below = jnp.where(revert, row[col["snap_below1"] : col["snap_below1"] + n_classes - 1], new_below)
    new_length = jnp.where(drift, new_length, length)
    new_initial_left = jnp.where(drift, new_initial_left, initial_left)
    new_below = jnp.where(drift, new_below, below)
    slot = jnp.where(drift, shape.api_pool + n_changes, row[col["slot"]])
    new_row = [new_version, new_length, new_initial_left, slot] + [new_below[c] for c in range(n_classes - 1)]
    if shape.mode == "rollback":
        keep = lambda name, value: jnp.where(drift & ~revert, value, row[col[name]])  # noqa: E731
        new_row += [keep("snap_length", length), keep("snap_initial_left", initial_left)]
        new_row += [keep(f"snap_below{c + 1}", below[c]) for c in range(n_classes - 1)]
        new_row += [jnp.where(drift, (~revert).astype(jnp.int32), row[col["revertible"]])]
    decoy, docs_rev = jnp.zeros_like(version), jnp.zeros_like(version)
    if shape.decoys:
        decoy_kind = 1 + ((w[3] & 0xFF) * 3 >> 8).astype(jnp.int32)
        decoy_kind = jnp.where((decoy_kind == REORDER) & (new_length < 2), DOCS_TOUCH, decoy_kind)
        decoy = jnp.where(~drift & (draws["u_regime"] < knobs["decoy_prob"]), decoy_kind, NO_DECOY)
        docs_rev = row[col["docs_rev"]] + (decoy == DOCS_TOUCH)
        new_row += [docs_rev]
    op = jnp.where(revert, REVERT, jnp.where(push, PUSH, jnp.where(pop, POP, NO_CHANGE)))
    return new_row, dict(
        version=new_version,
        length=new_length,
        initial_left=new_initial_left,
        below=new_below,
        slot=slot,
        op=op,
        decoy=decoy,
        docs_rev=docs_rev,
    )


def _step_outputs(shape: Shape, draws: dict, out: dict, with_ops: bool) -> dict:
    """The per-step latent the scan stacks: only what this regime varies (the rest is filled in
    after the scan by :func:`_complete`: fewer stores per step)."""
    small = lambda x: x.astype(shape.state_dtype)  # noqa: E731
    steps = dict(
        endpoint=draws["endpoint"],
        drift=draws["drift"],
        version=small(out["version"]),
        length=small(out["length"]),
        initial_left=small(out["initial_left"]),
        below=small(out["below"]),
        deprecated=draws["drift"] & (draws["u_deprecated"] < DEPRECATED_PROB),
        slot=small(out["slot"]),
        in_burst=draws["in_burst"],
    )
    if shape.mode == "docs_migration":
        steps["kind"] = draws["kind"]
    if with_ops or shape.mode == "rollback":
        steps["op"] = out["op"]
    if shape.decoys:
        steps.update(decoy=out["decoy"], docs_rev=out["docs_rev"])
    return steps


def _complete(shape: Shape, steps: dict, words, n_initial) -> dict:
    """The scan's stacked outputs with the constant arrays, hindsight and regime extras filled in."""
    for name in ("kind", "op", "decoy", "docs_rev"):
        steps.setdefault(name, jnp.zeros_like(steps["endpoint"]))  # API, NO_CHANGE, NO_DECOY, 0
    if shape.mode in ("delayed_relevance", "rollback"):
        steps.update(_next_use(steps, shape.api_pool))
    steps["in_burst"] = jnp.broadcast_to(steps["in_burst"][:, None], steps["drift"].shape)
    steps["n_initial"] = n_initial
    if shape.mode == "docs_migration":
        steps["doc_chars"] = DOC_MIN_CHARS + _below(words[:, 4] >> 16, DOC_SPAN_CHARS)
        steps["doc_section"] = _below(words[:, 4] & 0xFFFF, len(DOC_SECTIONS))
        steps["date"] = (words[:, 3] & 0xFF).astype(jnp.int32)  # a day code, see decode
    return steps


def _next_use(steps: dict, n_apis: int) -> dict:
    """Hindsight per step, by a reverse scan over [T, N] arrays: the next step observing the same
    endpoint, whether it drifts, and the op of the endpoint's next change."""
    endpoints = jnp.arange(n_apis)[:, None]

    def step(carry, inputs):
        t, endpoint, drift, op = inputs
        sel = endpoints == endpoint[None, :]
        pick = lambda table: jnp.sum(jnp.where(sel, table, 0), axis=0, dtype=table.dtype)  # noqa: E731
        out = dict(next_use=pick(carry["t"]), next_use_drifts=pick(carry["drift"]), next_change_op=pick(carry["op"]))
        new = dict(
            t=jnp.where(sel, t, carry["t"]),
            drift=jnp.where(sel, drift, carry["drift"]),
            op=jnp.where(sel & drift, op, carry["op"]),
        )
        return new, out

    n_steps, n_episodes = steps["endpoint"].shape
    carry = dict(
        t=jnp.full((n_apis, n_episodes), np.iinfo(np.int32).max, jnp.int32),
        drift=jnp.zeros((n_apis, n_episodes), bool),
        op=jnp.zeros((n_apis, n_episodes), jnp.int32),
    )
    _, out = jax.lax.scan(
        step,
        carry,
        (jnp.arange(n_steps, dtype=jnp.int32), steps["endpoint"], steps["drift"], steps["op"]),
        reverse=True,
    )
    return out


def labels(xp, shape: Shape, knobs: dict, latent: dict) -> tuple:
    """(utility code [T, N] int32, critical [T, N] bool), per regime (see docs/generators.md), with
    ``xp`` = numpy or jax.numpy."""
    t = xp.arange(shape.steps, dtype=np.int32)[:, None]
    drift = latent["drift"]
    if shape.mode in PUBLISHED_MODES:
        burst_drift = (latent["in_burst"] & drift) if shape.bursty else xp.zeros_like(drift)
        # published quirk: in redundant modes every step after the first is worth 0.5
        quiet = xp.where(t > 0, 1, 0) if shape.redundant else xp.zeros_like(t)
        return xp.where(burst_drift, 3, xp.where(drift, 2, quiet)).astype(np.int32), drift
    if shape.mode == "delayed_relevance":
        used = (latent["next_use"] - t <= knobs["horizon"]) & ~latent["next_use_drifts"]
        relevant = drift & used
        return xp.where(relevant, 2, xp.where(drift, 4, 0)).astype(np.int32), relevant
    if shape.mode == "rollback":
        stale = drift & (latent["op"] != REVERT) & (latent["next_change_op"] == REVERT)
        critical = drift & ~stale
        return xp.where(critical, 2, xp.where(stale, 4, 0)).astype(np.int32), critical
    if shape.decoys:  # stripe_like: bursts raise the drift rate, not the utility (no 6 for a burst drift)
        return xp.where(drift, 2, xp.where(latent["decoy"] != NO_DECOY, 1, 0)).astype(np.int32), drift
    guide, doc = latent["kind"] == GUIDE, latent["kind"] == DOC  # docs_migration
    code = xp.where(drift, 2, xp.where(guide, 5, xp.where(doc, 1, 0)))
    return code.astype(np.int32), drift | guide


def named_columns(xp, named_api, api_id, api_pool: int) -> dict:
    """``named_endpoint`` and ``named_version`` ([N, T]) of the apis steps name (``named_api``, ids as
    ``api_id``'s), as the JSON encoder reads them: only endpoints the episode has as an api get one."""
    endpoint = named_api % api_pool
    endpoints = xp.arange(api_pool, dtype=np.int32)
    has_api = ((api_id[..., None] >= 0) & (api_id[..., None] % api_pool == endpoints)).any(-2)  # [N, P]
    named = (named_api >= 0) & xp.take_along_axis(has_api, endpoint, axis=-1)
    return dict(
        named_endpoint=xp.where(named, endpoint, NONE).astype(np.int32),
        named_version=xp.where(named, named_api // api_pool, 0).astype(np.int32),
    )


def _api_len(version, endpoint_digits):
    """len('"api.v{v}.endpoint_{j}"')."""
    return 17 + digits(version) + endpoint_digits


def encoded_arrays(shape: Shape, knobs: dict, meta_len, seeds, with_latent: bool = True) -> dict:
    """A batch's encoded arrays (what :func:`wpbjax.episodes.encode.encode_episodes` computes from
    the episodes' JSON), leaves [N, T, ...], and with ``with_latent`` the step-major latent.
    ``meta_len``: [codes, 2] int32 view-metadata JSON length per utility code and track;
    ``seeds``: [N, 2] uint32. Traceable: a program that generates its own episodes (the adversary's) calls
    it; on its own it runs as two compiled programs (:func:`generate_arrays`)."""
    return post(jnp, shape, knobs, meta_len, latent(shape, knobs, seeds, with_latent), with_latent)


_COUNTERS = ("version", "length", "initial_left", "below", "slot")


_latent_jit, _latent_quick = programs.full_and_quick(latent, static_argnums=(0, 3))


def post(xp, shape: Shape, knobs: dict, meta_len, latent_arrays: dict, with_latent: bool) -> dict:
    """The encoded arrays of a step-major latent (see :func:`encoded_arrays`), computed with ``xp``:
    jax.numpy on device, or numpy for latents replayed on the host from the published generator's
    draws (:mod:`wpbjax.episodes.generators.published_arrays`)."""
    latent_arrays = {
        name: value.astype(np.int32) if name in _COUNTERS else value for name, value in latent_arrays.items()
    }
    n_steps, n_apis = shape.steps, shape.api_pool
    is_api = latent_arrays["kind"] == API
    endpoint, version, decoy = latent_arrays["endpoint"], latent_arrays["version"], latent_arrays["decoy"]
    obs_len, lens = _observation_bytes(xp, shape, latent_arrays)
    code, critical = labels(xp, shape, knobs, latent_arrays)
    write_cost = obs_len[..., None] + meta_len[code] + HEADER_BYTES + INDEX_BYTES  # [N, T, 2]

    api_id = xp.where(is_api, version * n_apis + endpoint, NONE)
    reordered = (decoy == REORDER).astype(np.int32)
    params_id = 1 + 2 * (endpoint * (n_steps + 2) + version) + reordered
    version_id = xp.where(decoy == VERSION_STRING, 1 + n_steps + 2 + version, 1 + version)
    field_value = [params_id, 1 + latent_arrays["deprecated"].astype(np.int32), version_id]
    field_frag = [10 + lens["params"], 14 + lens["deprecated"], 11 + lens["version"]]
    if shape.decoys:
        field_value.append(1 + latent_arrays["docs_rev"])
        field_frag.append(12 + digits(latent_arrays["docs_rev"]))
    field_value = xp.where(is_api[..., None], xp.stack(field_value, axis=-1), 0)
    field_frag = xp.where(is_api[..., None], xp.stack(field_frag, axis=-1), 0)

    api_index = xp.where(is_api, latent_arrays["slot"], NONE)
    # a migration guide names "api.v{v+1}.endpoint_{j}" (new_api, the newer of its two): that api's id
    named_api = xp.where(latent_arrays["kind"] == GUIDE, (version + 1) * n_apis + endpoint, NONE)
    episode_major = lambda x: xp.swapaxes(x, 0, 1)  # noqa: E731  [T, N, ...] -> [N, T, ...]
    out = dict(
        code=code,
        critical=critical,
        write_cost=write_cost.astype(np.int32),
        api_id=api_id.astype(np.int32),
        api_index=api_index.astype(np.int32),
        named_api=named_api.astype(np.int32),
        field_value=field_value.astype(np.int32),
        field_present=xp.broadcast_to(is_api[..., None], field_value.shape),
        field_frag_len=field_frag.astype(np.int32),
    )
    out = {name: episode_major(value) for name, value in out.items()}
    out.update(
        api_ids=_api_ids(xp, shape, is_api, api_index, api_id),
        n_changes=xp.sum(latent_arrays["drift"], axis=0, dtype=np.int32),
    )
    if with_latent:
        out["latent"] = latent_arrays
    return out


def _observation_bytes(xp, shape: Shape, latent_arrays: dict) -> tuple:
    """([T, N] JSON length of each observation, {"params", "deprecated", "version"}: [T, N] lengths
    of those values), from the latent alone (the byte model, SEMANTICS §2)."""
    endpoint, version = latent_arrays["endpoint"], latent_arrays["version"]
    endpoint_digits, version_digits = digits(endpoint), digits(version)
    length, initial_left = latent_arrays["length"], latent_arrays["initial_left"]
    # Σ digits of the params' numbers: initial p{j}_i for i < initial_left, then pushed versions by class.
    initial_digits = xp.concatenate(
        [xp.zeros(1, np.int32), xp.cumsum(digits(xp.arange(shape.max_params, dtype=np.int32)))]
    )
    bounds = [initial_left] + [latent_arrays["below"][:, c] for c in range(shape.version_digit_classes - 1)] + [length]
    pushed_digits = sum((c + 1) * (bounds[c + 1] - bounds[c]) for c in range(shape.version_digit_classes))
    number_digits = initial_digits[initial_left] + pushed_digits
    params_len = xp.where(length == 0, 2, length * (6 + endpoint_digits) + number_digits)
    deprecated_len = xp.where(latent_arrays["deprecated"], 4, 5)
    version_len = version_digits
    if shape.decoys:
        version_len = xp.where(latent_arrays["decoy"] == VERSION_STRING, version_digits + 4, version_digits)  # "v.0"
    # {"api": "...", "deprecated": b, "params": [...], "version": v}: 8 + api + 16 + b + 12 + params + 13 + v + 1
    obs_len = 50 + _api_len(version, endpoint_digits) + deprecated_len + params_len + version_len
    if shape.decoys:
        obs_len = obs_len + 14 + digits(latent_arrays["docs_rev"])  # , "docs_rev": r
    if shape.mode == "docs_migration":
        kind = latent_arrays["kind"]
        section_len = xp.asarray([len(name) for name in DOC_SECTIONS], np.int32)[latent_arrays["doc_section"]]
        # {"content": "...", "last_updated": "YYYY-MM-DD", "section": "endpoint_{j}/{name}"}
        doc_len = 60 + latent_arrays["doc_chars"] + 10 + endpoint_digits + section_len
        # {"deadline": "YYYY-MM-DD", "new_api": "api.v{v+1}...", "old_api": "api.v{v}..."}
        guide_len = 52 + _api_len(version + 1, endpoint_digits) + _api_len(version, endpoint_digits)
        obs_len = xp.where(kind == DOC, doc_len, xp.where(kind == GUIDE, guide_len, obs_len))
    return obs_len, {"params": params_len, "deprecated": deprecated_len, "version": version_len}


def _api_ids(xp, shape: Shape, is_api, api_index, api_id):
    """[N, api_slots] the api id at each per-episode api index (NONE padding), from [T, N] steps."""
    n_episodes = api_index.shape[1]
    flat_slot = xp.where(is_api, api_index + xp.arange(n_episodes, dtype=np.int32) * shape.api_slots, NONE)
    if xp is np:
        api_ids = np.full(n_episodes * shape.api_slots, NONE, np.int32)
        api_ids[flat_slot[is_api]] = api_id[is_api]
    else:
        api_ids = xp.full(n_episodes * shape.api_slots, NONE, np.int32).at[flat_slot].set(api_id, mode="drop")
    return api_ids.reshape(n_episodes, shape.api_slots)


_post_jit, _post_quick = programs.full_and_quick(functools.partial(post, jnp), static_argnums=(0, 4))


@functools.cache
def metadata_lengths(mode: str) -> np.ndarray:
    """[codes, 2] view-metadata JSON length per utility code and track (host, exact)."""
    return np.array(
        [
            [json_len(view_metadata({"mode": mode, "priority": priority}, track)) for track in TRACKS]
            for priority in PRIORITY
        ],
        np.int32,
    )


def _generate(shape: Shape, knobs: dict, meta_len, seeds, with_latent: bool):
    """:func:`encoded_arrays` as two compiled programs (one would fuse the two parts worse). A small batch takes
    the build that compiles sooner and runs slower (identical arrays; see devices_lib.QUICK_COMPILE_BELOW)."""
    quick = seeds.shape[0] * shape.steps < devices_lib.QUICK_COMPILE_BELOW
    latent_jit, post_jit = (_latent_quick, _post_quick) if quick else (_latent_jit, _post_jit)
    return post_jit(shape, knobs, meta_len, latent_jit(shape, knobs, seeds, with_latent), with_latent)


def generate_arrays(
    config: JaxGenConfig, n_episodes: int, start: int = 0, with_latent: bool = True, device=None
) -> dict:
    """Device arrays of episodes ``start .. start+n_episodes-1``: leaves [N, T, ...] (see :func:`encoded_arrays`).
    Compiles once per (mode, steps, api_pool, max_params, N); every other knob is traced.
    ``device``: where to run (default: the default device). Dispatch is asynchronous, so chunks
    given to different devices (e.g. the cores of a CPU split with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=2``) run at once."""
    if n_episodes < 1:
        raise ValueError(f"n_episodes must be >= 1; got {n_episodes}")
    seeds = episode_seeds(config.seed, start, n_episodes)
    knobs, meta_len = config.knobs(), jnp.asarray(metadata_lengths(config.mode))
    if device is not None:
        seeds, knobs, meta_len = jax.device_put((seeds, knobs, meta_len), device)
    return _generate(config.shape, knobs, meta_len, seeds, with_latent)


def to_encoded(config: JaxGenConfig, generated: dict, start: int = 0) -> EncodedEpisodes:
    """Host :class:`EncodedEpisodes` from :func:`generate_arrays`' output (no JSON involved)."""
    host = jax.tree_util.tree_map(np.asarray, generated)
    n_episodes, n_steps = host["code"].shape
    n_slots = config.api_pool + int(host["n_changes"].max())
    code = host["code"]
    utility64, priority64 = UTILITY[code], PRIORITY[code]
    valid = np.ones((n_episodes, n_steps), bool)
    is_api = host["api_id"] >= 0
    columns = dict(
        valid=valid,
        step_t=np.broadcast_to(np.arange(n_steps, dtype=np.int32), valid.shape).copy(),
        write_cost=host["write_cost"],
        api_id=host["api_id"],
        api_is_str=is_api,
        api_index=host["api_index"],
        api_ids=np.ascontiguousarray(host["api_ids"][:, :n_slots]),
        field_value=host["field_value"],
        field_present=np.ascontiguousarray(host["field_present"]),
        field_frag_len=host["field_frag_len"],
        critical=host["critical"],
        t_last=np.full(n_episodes, n_steps - 1, np.int32),
        length=np.full(n_episodes, n_steps, np.int32),
        # what an observer reads of "api.v{v}.endpoint_{j}" (api_id = v * P + j): endpoint j, version v
        endpoint_index=np.where(is_api, host["api_id"] % config.api_pool, NONE).astype(np.int32),
        version_number=np.where(is_api, host["api_id"] // config.api_pool, 0).astype(np.int32),
        **named_columns(np, host["named_api"], host["api_id"], config.api_pool),
    )
    critical = host["critical"].sum(axis=1).astype(np.int32)
    changes = host["n_changes"].astype(np.int32)
    if config.mode == "docs_migration":  # change events: drifts and migration guides (see docs/generators.md)
        changes = critical
    columns.update(facts.from_api(columns["endpoint_index"], columns["version_number"], valid, columns["length"]))
    return EncodedEpisodes.from_columns(
        columns,
        utility64=utility64,
        priority64=priority64,
        n_critical=critical,
        total_drift_events=changes,
        episode_id=range(start, start + n_episodes),
        mode=[config.mode] * n_episodes,
        field_keys=config.shape.field_keys,
    )


def generate_encoded(configs, n_episodes: int, chunk: int = 4096) -> EncodedEpisodes:
    """Episodes 0..n_episodes-1 of each config, encoded, in config order (for ``sweep --engine jax``).
    Generated in chunks of ``chunk`` episodes (one compiled shape) and joined."""
    parts = []
    for config in configs:
        size = min(chunk, n_episodes)
        for start in range(0, n_episodes, size):
            generated = generate_arrays(config, size, start, with_latent=False)
            count = min(size, n_episodes - start)
            parts.append(
                to_encoded(config, jax.tree_util.tree_map(lambda leaf, count=count: leaf[:count], generated), start)
            )
    return concat(parts) if len(parts) > 1 else parts[0]
