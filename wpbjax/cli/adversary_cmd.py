"""``wpbjax adversary``: each policy's worst regime per budget, searched over the JAX generator's knobs
(:func:`wpbjax.api.adversary`; docs/adversarial.md)."""

from __future__ import annotations

import sys

from wpbjax.cli.argtypes import int_list, name_list, positive_int


def add_parser(commands) -> None:
    from wpbjax.adversarial.evaluate import DEFAULT_TOP_K, OBJECTIVES
    from wpbjax.adversarial.search import METHODS, Search

    d = Search()
    adversary = commands.add_parser(
        "adversary", help="each policy's worst drift regime, found by CMA-ES over the generator's knobs"
    )
    adversary.add_argument("--policies", type=name_list, required=True, help="comma-separated policy names")
    adversary.add_argument("--budgets", type=lambda text: int_list(text, minimum=1), required=True, help="bytes")
    adversary.add_argument("--track", default="unprivileged", help="default unprivileged")
    adversary.add_argument("--objective", default="utility_ratio", help=f"one of {', '.join(OBJECTIVES)}")
    adversary.add_argument(
        "--top-k", type=int, default=None, help=f"K of read_accuracy's retriever (default {DEFAULT_TOP_K})"
    )
    adversary.add_argument("--modes", type=name_list, default=None, help="modes searched (default: every JAX mode)")
    adversary.add_argument("--bounds", default=None, help="KNOB=LOW:HIGH[,...] replacing default search bounds")
    adversary.add_argument("--population", type=positive_int, default=d.population, help=f"default {d.population}")
    adversary.add_argument("--generations", type=positive_int, default=d.generations, help=f"default {d.generations}")
    adversary.add_argument(
        "--episodes-per-regime",
        type=positive_int,
        default=d.episodes_per_regime,
        help=f"default {d.episodes_per_regime}",
    )
    adversary.add_argument(
        "--confirm-episodes",
        type=positive_int,
        default=d.confirm_episodes,
        help=f"at least 128 (default {d.confirm_episodes})",
    )
    adversary.add_argument("--steps", type=positive_int, default=200, help="steps per episode (default 200)")
    adversary.add_argument("--api-pool", type=positive_int, default=8, help="endpoints, fixed per search (default 8)")
    adversary.add_argument("--max-params", type=int, default=6, help="max initial params, fixed per search (default 6)")
    adversary.add_argument("--search", default=d.method, help=f"one of {', '.join(METHODS)} (default {d.method})")
    adversary.add_argument("--seed", type=int, default=0)
    adversary.add_argument("--out", required=True, help="adv.json (written atomically)")
    adversary.add_argument("--quiet", action="store_true", help="no progress bar")
    adversary.set_defaults(run=cmd_adversary)


def cmd_adversary(args) -> int:
    from wpbjax.adversarial.knobs import parse_bounds
    from wpbjax.api import adversary

    document = adversary(
        args.policies,
        args.budgets,
        track=args.track,
        objective=args.objective,
        out=args.out,
        modes=args.modes,
        bounds=parse_bounds(args.bounds),
        population=args.population,
        generations=args.generations,
        episodes_per_regime=args.episodes_per_regime,
        confirm_episodes=args.confirm_episodes,
        steps=args.steps,
        api_pool=args.api_pool,
        max_params=args.max_params,
        search=args.search,
        seed=args.seed,
        progress=not args.quiet,
        top_k=args.top_k,
    )
    if not args.quiet:
        for result in document["results"]:
            confirmed, named = result["confirmed"], result["worst_named"]
            print(
                f"{result['policy']} @ {result['budget']} B: worst {confirmed['mean']:.3f} "
                f"[{confirmed['ci95'][0]:.3f}, {confirmed['ci95'][1]:.3f}] ({result['regime']['mode']}); "
                f"worst named {named['objective']:.3f} ({named['mode']})",
                file=sys.stderr,
            )
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
