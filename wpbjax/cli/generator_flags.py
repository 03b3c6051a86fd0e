"""Flags of the episode generators, shared by ``wpbjax generate`` and ``wpbjax sweep`` (docs/generators.md)."""

from __future__ import annotations

import argparse
import dataclasses

from wpbjax.cli.argtypes import positive_int, probability


def add_generator_knobs(parser: argparse.ArgumentParser) -> None:
    from wpbjax.episodes.published_gen import DriftConfig

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
    from wpbjax.episodes.jax_gen import JaxGenConfig

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


def add_knob_set(parser: argparse.ArgumentParser) -> None:
    """``--knob-set NAME``: a fitted knob set of the JAX generator (jax_gen.KNOB_SETS, docs/generators.md).
    After the knobs' flags: it records their defaults, to tell a knob the command line left alone."""
    from wpbjax.episodes.jax_gen import KNOB_SETS

    names = {name for values in KNOB_SETS.values() for name in values} | {"mode", "modes", "engine"}
    parser.set_defaults(knob_defaults={name: parser.get_default(name) for name in names})
    parser.add_argument(
        "--knob-set",
        choices=tuple(KNOB_SETS),
        default=None,
        help="the JAX generator's knobs fitted to a real drift stream (docs/real_drift.md): its mode "
        "and every knob left at its default; implies --engine jax",
    )


def generator_knobs(args) -> dict:
    """The generator settings among the parsed arguments (``seed``, ``steps``, ``drift_prob``, ...). With
    ``--knob-set``, the set's value of every knob the command line left at its default (and
    :func:`apply_knob_set` its mode and engine)."""
    from wpbjax.episodes.jax_gen import KNOB_SETS, JaxGenConfig

    knobs = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(JaxGenConfig)
        if field.name != "mode" and hasattr(args, field.name)
    }
    chosen = getattr(args, "knob_set", None)
    if chosen is not None:
        for name, value in KNOB_SETS[chosen].items():
            if name in knobs and knobs[name] == args.knob_defaults[name]:
                knobs[name] = value
    return knobs


def apply_knob_set(args) -> None:
    """``--knob-set``: the JAX engine, and the set's mode where ``--mode`` / ``--modes`` was left at its default."""
    from wpbjax.episodes.jax_gen import KNOB_SETS

    if getattr(args, "knob_set", None) is None:
        return
    args.engine = "jax"  # (the other engine, python, is the default: a knob set always picks jax)
    mode = KNOB_SETS[args.knob_set]["mode"]
    if hasattr(args, "modes") and args.modes == args.knob_defaults["modes"]:
        args.modes = [mode]
    if hasattr(args, "mode") and args.mode == args.knob_defaults["mode"]:
        args.mode = mode
