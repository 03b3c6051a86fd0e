"""``wpbjax generate``: write an episode set as JSONL (:func:`wpbjax.episodes.write_generated`)."""

from __future__ import annotations

import sys

from wpbjax.cli.argtypes import positive_int
from wpbjax.cli.generator_flags import (
    add_generator_knobs,
    add_jax_knobs,
    add_knob_set,
    apply_knob_set,
    generator_knobs,
)
from wpbjax.common.argument_errors import ArgumentError, arg


def add_parser(commands) -> None:
    from wpbjax.episodes.generators.jax_gen import FITTED_MODES, NEW_MODES
    from wpbjax.episodes.generators.published_gen import MODES

    generate = commands.add_parser("generate", help="write episodes with the published generator (byte-identical)")
    generate.add_argument("--mode", choices=MODES + NEW_MODES + FITTED_MODES, default="default")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--steps", type=positive_int, default=200)
    generate.add_argument("--episodes", type=positive_int, default=10, help="episodes in the set (default 10)")
    generate.add_argument("--out", required=True, help="output JSONL file")
    generate.add_argument("--quiet", action="store_true")
    generate.add_argument(
        "--regime",
        default=None,
        metavar="ADV.JSON",
        help="write the worst regime that `wpbjax adversary` found (with --policy, --budget; docs/adversarial.md)",
    )
    generate.add_argument("--policy", default=None, help="with --regime: whose worst regime")
    generate.add_argument("--budget", type=positive_int, default=None, help="with --regime: at which budget")
    add_generator_knobs(generate)
    add_jax_knobs(generate)
    add_knob_set(generate)
    generate.set_defaults(run=cmd_generate)


def cmd_generate(args) -> int:
    from wpbjax.cli.arguments import check_generator_size
    from wpbjax.episodes import write_generated

    if args.regime is not None:
        return _generate_regime(args)
    if args.policy is not None or args.budget is not None:
        raise ArgumentError(f"{arg('policy')} / {arg('budget')}: only with {arg('regime')} ADV.JSON")
    apply_knob_set(args)
    check_generator_size(args)
    count = write_generated(args.out, args.mode, args.episodes, engine=args.engine, **generator_knobs(args))
    if not args.quiet:
        print(
            f"wrote {count} episodes ({args.mode}, seed {args.seed}, {args.steps} steps) to {args.out}", file=sys.stderr
        )
    return 0


def _generate_regime(args) -> int:
    """``--regime adv.json``: that result's regime, shape and knobs from the file; only --seed, --episodes and
    --out (and --engine jax) may be given with it."""
    from wpbjax.adversarial.regime_file import load_result, result_config
    from wpbjax.episodes import write_generated

    clash = sorted(args.given_flags - {"seed", "episodes", "engine"} | ({"knob_set"} if args.knob_set else set()))
    if clash or ("engine" in args.given_flags and args.engine != "jax"):
        flags = ", ".join("--" + name.replace("_", "-") for name in clash) or f"--engine {args.engine}"
        raise ArgumentError(
            f"{arg('regime')}: the file sets the generator (JAX engine, mode, knobs, steps); got {flags}"
        )
    result, settings = load_result(args.regime, args.policy, args.budget)
    config = result_config(result, settings, args.seed)
    knobs = {name: value for name, value in vars(config).items() if name not in ("mode", "steps", "seed")}
    count = write_generated(args.out, config.mode, args.episodes, config.steps, args.seed, engine="jax", **knobs)
    if not args.quiet:
        print(
            f"wrote {count} episodes of {result['policy']}'s worst regime at {result['budget']} B "
            f"({config.mode}, seed {args.seed}) to {args.out}",
            file=sys.stderr,
        )
    return 0
