"""The knob space an adversary searches: every traced knob of the JAX generator, with bounds.

A *regime* is one value per knob (:data:`KNOBS`); the search works on a point ``x`` of the unit cube
[0, 1]^D (one coordinate per searched knob, :class:`Space`), mapped linearly onto each knob's bounds
(integer knobs floored). The knobs that set array shapes (``mode``, ``steps``, ``api_pool``,
``max_params``) are fixed per search (:class:`Space`), so one compiled program serves all of it;
every knob here is traced (:meth:`wpbjax.episodes.generators.jax_gen.JaxGenConfig.knobs`). A regime's episodes
are a pure function of (shape, regime, seed): :func:`regime_config` is the generator config that
writes them.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.episodes.generators.jax_gen import JAX_MODES, JaxGenConfig


@dataclasses.dataclass(frozen=True)
class Knob:
    """One traced knob: its default search bounds and the limits no bound may cross."""

    name: str
    low: float  # default search bounds (docs/adversarial.md says why each)
    high: float
    integer: bool = False
    limit_low: float = 0.0  # what the generator accepts (JaxGenConfig's checks)
    limit_high: float = 1.0
    modes: tuple = JAX_MODES  # the modes whose episodes the knob changes
    doc: str = ""


BURSTY = ("burst_drift", "burst_redundancy", "stripe_like")
KNOBS = (
    Knob("drift_prob", 0.0, 0.3, doc="per-step drift probability (above 0.3 most steps are drifts)"),
    Knob("burst_interval", 10, 200, True, 1, 1 << 20, BURSTY, "steps between bursts"),
    Knob("burst_len", 1, 50, True, 0, 1 << 20, BURSTY, "steps per burst"),
    Knob("burst_drift_prob", 0.0, 1.0, modes=BURSTY, doc="drift probability inside a burst"),
    Knob("redundancy_prob", 0.0, 0.95, modes=("redundancy", "burst_redundancy"), doc="repeat the previous endpoint"),
    Knob("horizon", 1, 64, True, 1, 1 << 20, ("delayed_relevance",), "a drift matters if used within this many steps"),
    Knob("rollback_prob", 0.0, 1.0, modes=("rollback",), doc="a change reverts the endpoint's last drift"),
    Knob("decoy_prob", 0.0, 1.0, modes=("decoy", "stripe_like"), doc="a non-drift step carries a cosmetic change"),
    Knob("docs_prob", 0.0, 0.6, modes=("docs_migration",), doc="a step is a documentation page"),
    Knob("guide_prob", 0.0, 0.3, modes=("docs_migration",), doc="a step is a migration guide"),
)
KNOB_NAMES = tuple(knob.name for knob in KNOBS)
_BY_NAME = {knob.name: knob for knob in KNOBS}


class KnobError(ArgumentError):
    """A bad mode, knob name or bound (one line)."""


@dataclasses.dataclass(frozen=True)
class Space:
    """What one search explores: the static shape and the searched knobs' bounds.

    ``bounds``: knob -> (low, high) of every knob the mode uses (defaults from :data:`KNOBS`);
    ``fixed``: the other knobs' values (generator defaults: they do not change the mode's episodes)."""

    mode: str = "default"
    steps: int = 200
    api_pool: int = 8
    max_params: int = 6
    bounds: tuple = ()  # ((name, low, high), ...) in KNOBS order

    @property
    def names(self) -> tuple:
        return tuple(name for name, _, _ in self.bounds)

    @property
    def dim(self) -> int:
        return len(self.bounds)

    def to_knobs(self, unit):
        """The generator's knob pytree (:meth:`JaxGenConfig.knobs` layout) of points ``unit`` [..., D] in
        [0, 1]^D (clipped), as JAX arrays [...]: searched knobs mapped onto their bounds, the rest at defaults."""
        unit = jnp.clip(unit, 0.0, 1.0)
        defaults = JaxGenConfig(mode=self.mode).knobs()
        knobs = {name: jnp.broadcast_to(jnp.asarray(value), unit.shape[:-1]) for name, value in defaults.items()}
        for index, (name, low, high) in enumerate(self.bounds):
            value = low + unit[..., index] * (high - low)
            if _BY_NAME[name].integer:  # floor over [low, high + 1): every integer equally wide
                value = jnp.minimum(jnp.floor(low + unit[..., index] * (high - low + 1)), high).astype(jnp.int32)
            knobs[name] = value.astype(defaults[name].dtype)
        if self.mode == "docs_migration":  # docs + guide <= 1 (bounds above 1 in sum: guides take the rest)
            knobs["guide_prob"] = jnp.minimum(knobs["guide_prob"], 1.0 - knobs["docs_prob"])
        return knobs

    def regime(self, unit) -> dict:
        """A point ``unit`` [D] as a regime: {"mode": ..., knob: value} of the searched knobs (host numbers)."""
        knobs = self.to_knobs(jnp.asarray(unit, jnp.float32))
        values = {
            name: int(knobs[name]) if _BY_NAME[name].integer else round(float(knobs[name]), 6) for name in self.names
        }
        return {"mode": self.mode, **values}


def space(
    mode: str = "default", steps: int = 200, api_pool: int = 8, max_params: int = 6, bounds: dict | None = None
) -> Space:
    """The :class:`Space` of ``mode`` at a shape, ``bounds`` (knob -> (low, high)) overriding the defaults.
    Raises :class:`KnobError` on an unknown mode or knob, a knob the mode does not use, or a bound
    outside the generator's limits or with low > high."""
    if mode not in JAX_MODES:
        raise KnobError(f"{arg('modes')}: no mode {mode!r}; known: {', '.join(JAX_MODES)}")
    JaxGenConfig(mode=mode, steps=steps, api_pool=api_pool, max_params=max_params)  # shape checks (ValueError)
    bounds = dict(bounds or {})
    for name, pair in bounds.items():
        if name not in _BY_NAME:
            raise KnobError(f"{arg('bounds')}: no knob {name!r}; known: {', '.join(KNOB_NAMES)}")
        knob = _BY_NAME[name]
        low, high = pair
        if not knob.limit_low <= low <= high <= knob.limit_high:
            raise KnobError(
                f"{arg('bounds')}: {name} {low}:{high}: need {knob.limit_low} <= low <= high <= {knob.limit_high}"
            )
        if knob.integer and (low != int(low) or high != int(high)):
            raise KnobError(f"{arg('bounds')}: {name} takes whole numbers; got {low}:{high}")
    used = [knob for knob in KNOBS if mode in knob.modes]
    chosen = tuple((knob.name, *map(float, bounds.get(knob.name, (knob.low, knob.high)))) for knob in used)
    return Space(mode, steps, api_pool, max_params, chosen)


def parse_bounds(text: str | None) -> dict:
    """``"drift_prob=0:0.5,horizon=1:32"`` -> {"drift_prob": (0.0, 0.5), "horizon": (1.0, 32.0)}."""
    out = {}
    for item in filter(None, (text or "").split(",")):
        name, _, pair = item.partition("=")
        low, _, high = pair.partition(":")
        try:
            out[name.strip()] = (float(low), float(high))
        except ValueError:
            raise KnobError(f"{arg('bounds')}: expected KNOB=LOW:HIGH[,...]; got {item!r}") from None
    return out


def regime_config(regime: dict, steps: int, api_pool: int, max_params: int, seed: int) -> JaxGenConfig:
    """The JAX generator config that writes ``regime``'s episodes ({"mode", knob: value}; :meth:`Space.regime`)."""
    unknown = sorted(set(regime) - {"mode", *KNOB_NAMES})
    if "mode" not in regime or unknown:
        raise KnobError(f"regime: expected 'mode' and knobs among {', '.join(KNOB_NAMES)}; got {sorted(regime)}")
    knobs = {name: value for name, value in regime.items() if name != "mode"}
    return JaxGenConfig(mode=regime["mode"], steps=steps, api_pool=api_pool, max_params=max_params, seed=seed, **knobs)


def regime_unit(space_: Space, regime: dict) -> np.ndarray:
    """The unit-cube point [D] of a regime's searched knobs (the inverse of :meth:`Space.regime`, up to flooring)."""
    out = []
    for name, low, high in space_.bounds:
        value = float(regime[name])
        width = (high - low + 1) if _BY_NAME[name].integer else (high - low)
        out.append(0.0 if width == 0 else (value - low + (0.5 if _BY_NAME[name].integer else 0.0)) / width)
    return np.clip(np.asarray(out, np.float32), 0.0, 1.0)
