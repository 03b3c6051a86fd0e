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


def add_parser(commands) -> None:
    from wpbjax.episodes.jax_gen import FITTED_MODES, NEW_MODES
    from wpbjax.episodes.published_gen import MODES

    generate = commands.add_parser("generate", help="write episodes with the published generator (byte-identical)")
    generate.add_argument("--mode", choices=MODES + NEW_MODES + FITTED_MODES, default="default")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--steps", type=positive_int, default=200)
    generate.add_argument("--episodes", type=positive_int, default=10, help="episodes in the set (default 10)")
    generate.add_argument("--out", required=True, help="output JSONL file")
    generate.add_argument("--quiet", action="store_true")
    add_generator_knobs(generate)
    add_jax_knobs(generate)
    add_knob_set(generate)
    generate.set_defaults(run=cmd_generate)


def cmd_generate(args) -> int:
    from wpbjax.cli.arguments import check_generator_size
    from wpbjax.episodes import write_generated

    apply_knob_set(args)
    check_generator_size(args)
    count = write_generated(args.out, args.mode, args.episodes, engine=args.engine, **generator_knobs(args))
    if not args.quiet:
        print(
            f"wrote {count} episodes ({args.mode}, seed {args.seed}, {args.steps} steps) to {args.out}", file=sys.stderr
        )
    return 0
