"""Flags of the episode generators, shared by ``wpbjax generate`` and ``wpbjax sweep`` (docs/generators.md)."""

from __future__ import annotations

import argparse
import dataclasses

from wpbjax.cli.argtypes import positive_int, probability
from wpbjax.common.argument_errors import ArgumentError, arg


def add_generator_knobs(parser: argparse.ArgumentParser) -> None:
    from wpbjax.episodes.generators.published_gen import DriftConfig

    d = DriftConfig()
    parser.add_argument("--api-pool", type=positive_int, default=d.api_pool, help=f"endpoints (default {d.api_pool})")
    parser.add_argument(
        "--drift-prob",
        type=probability,
        default=d.drift_prob,
        help=f"per-step drift probability (default {d.drift_prob})",
    )
    parser.add_argument(
        "--max-params",
        type=int,
        default=d.max_params,
        help=f"max initial params per endpoint, >= 2 (default {d.max_params})",
    )
    parser.add_argument(
        "--burst-interval",
        type=int,
        default=d.burst_interval,
        help=f"steps between bursts (default {d.burst_interval})",
    )
    parser.add_argument("--burst-len", type=int, default=d.burst_len, help=f"steps per burst (default {d.burst_len})")
    parser.add_argument(
        "--burst-drift-prob",
        type=probability,
        default=d.burst_drift_prob,
        help=f"drift probability inside a burst (default {d.burst_drift_prob})",
    )
    parser.add_argument(
        "--redundancy-prob",
        type=probability,
        default=d.redundancy_prob,
        help=f"probability of repeating the previous endpoint (default {d.redundancy_prob})",
    )


def add_jax_knobs(parser: argparse.ArgumentParser) -> None:
    """``--engine`` and the knobs of the JAX generator's new regimes (docs/generators.md)."""
    from wpbjax.episodes.generators.jax_gen import JaxGenConfig

    d = JaxGenConfig()
    parser.add_argument(
        "--engine",
        choices=("python", "jax"),
        default="python",
        help="episode generator: 'python', the published one (byte-identical), "
        "or 'jax', on device with the new regimes",
    )
    parser.add_argument(
        "--horizon",
        type=positive_int,
        default=d.horizon,
        help=f"delayed_relevance: steps within which a drift must be used (default {d.horizon})",
    )
    parser.add_argument(
        "--rollback-prob",
        type=probability,
        default=d.rollback_prob,
        help=f"rollback: probability that a change reverts the last drift (default {d.rollback_prob})",
    )
    parser.add_argument(
        "--decoy-prob",
        type=probability,
        default=d.decoy_prob,
        help=f"decoy: probability of a cosmetic change on a non-drift step (default {d.decoy_prob})",
    )
    parser.add_argument(
        "--docs-prob",
        type=probability,
        default=d.docs_prob,
        help=f"docs_migration: probability of a documentation page (default {d.docs_prob})",
    )
    parser.add_argument(
        "--guide-prob",
        type=probability,
        default=d.guide_prob,
        help=f"docs_migration: probability of a migration guide (default {d.guide_prob})",
    )


def _recording(action: argparse.Action) -> None:
    """Make ``action`` add its dest to ``namespace.given_flags`` when its flag is on the command line
    (a value equal to the default is still a given flag: it must win over a knob set)."""
    plain = type(action)

    class Recorded(plain):
        def __call__(self, parser, namespace, values, option_string=None):
            namespace.given_flags = frozenset(getattr(namespace, "given_flags", frozenset())) | {self.dest}
            super().__call__(parser, namespace, values, option_string)

    Recorded.__name__ = plain.__name__
    action.__class__ = Recorded


def add_knob_set(parser: argparse.ArgumentParser) -> None:
    """``--knob-set NAME``: a fitted knob set of the JAX generator (jax_gen.KNOB_SETS, docs/generators.md).
    After the knobs' flags: it marks them (and ``--mode``, ``--modes``, ``--engine``, ``--episodes``) to
    record which the command line gave, so a given flag wins whatever its value."""
    from wpbjax.episodes.generators.jax_gen import KNOB_SETS, JaxGenConfig

    names = {field.name for field in dataclasses.fields(JaxGenConfig)} | {"modes", "engine", "episodes"}
    for action in parser._actions:  # argparse keeps no record of what was given; the actions do it
        if action.dest in names:
            _recording(action)
    parser.set_defaults(given_flags=frozenset())
    parser.add_argument(
        "--knob-set",
        choices=tuple(KNOB_SETS),
        default=None,
        help="the JAX generator's knobs fitted to a real drift stream (docs/real_drift.md): its mode "
        "and every knob flag not given; implies --engine jax",
    )


def generator_knobs(args) -> dict:
    """The generator settings among the parsed arguments (``seed``, ``steps``, ``drift_prob``, ...). With
    ``--knob-set``, the set's value of every knob whose flag the command line did not give (and
    :func:`apply_knob_set` its mode and engine)."""
    from wpbjax.episodes.generators.jax_gen import KNOB_SETS, JaxGenConfig

    knobs = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(JaxGenConfig)
        if field.name != "mode" and hasattr(args, field.name)
    }
    chosen = getattr(args, "knob_set", None)
    if chosen is not None:
        given = getattr(args, "given_flags", frozenset())
        for name, value in KNOB_SETS[chosen].items():
            if name in knobs and name not in given:
                knobs[name] = value
    return knobs


def apply_knob_set(args) -> None:
    """``--knob-set``: the JAX engine and the set's mode; refuses flags that cannot combine with it
    (another engine, another mode, or ``sweep --episodes FILE``, whose episodes the set would not make)."""
    from wpbjax.episodes.generators.jax_gen import KNOB_SETS

    if getattr(args, "knob_set", None) is None:
        return
    given = getattr(args, "given_flags", frozenset())
    name, mode = args.knob_set, KNOB_SETS[args.knob_set]["mode"]
    if "engine" in given and args.engine != "jax":
        raise ArgumentError(f"{arg('knob_set')} {name}: a knob set of the JAX generator; got --engine {args.engine}")
    args.engine = "jax"
    if "mode" in given and args.mode != mode:
        raise ArgumentError(f"{arg('knob_set')} {name}: sets --mode {mode}; got --mode {args.mode}")
    if "modes" in given and list(args.modes) != [mode]:
        raise ArgumentError(f"{arg('knob_set')} {name}: sets --modes {mode}; got --modes {','.join(args.modes)}")
    if "episodes" in given and getattr(args, "command", None) == "sweep":
        raise ArgumentError(
            f"{arg('knob_set')} {name}: generates the episodes; --episodes FILE reads them instead (give one)"
        )
    if hasattr(args, "modes"):
        args.modes = [mode]
    if hasattr(args, "mode"):
        args.mode = mode
