"""``wpbjax bench``: compile time and steady-state throughput per policy (:func:`wpbjax.bench.run_bench`)."""

from __future__ import annotations

import numpy as np

from wpbjax.cli.argtypes import int_list, name_list, positive_int


def add_parser(commands) -> None:
    bench = commands.add_parser("bench", help="compile time and steady-state throughput per policy")
    bench.add_argument("--episodes", type=positive_int, default=10000, help="episodes in the batch (default 10000)")
    bench.add_argument("--steps", type=positive_int, default=200, help="steps per episode (default 200)")
    bench.add_argument(
        "--policies", type=name_list, default=None, help="comma-separated names (default: the reference line-up)"
    )
    bench.add_argument(
        "--budgets",
        type=int_list,
        default=[1024, 10240, 102400],
        help="budgets per episode (default 1024,10240,102400)",
    )
    bench.add_argument(
        "--repeats", type=positive_int, default=3, help="timed repeats after warm-up; best counts (default 3)"
    )
    bench.add_argument(
        "--per-pass",
        type=positive_int,
        default=None,
        help="episodes per pass on each device (default: cache-sized passes, wpbjax.core.rollout.episodes_per_pass); "
        "--per-pass at least --episodes runs one pass",
    )
    bench.add_argument(
        "--cache", action="store_true", help="use the persistent compilation cache (compile_s then measures loading)"
    )
    bench.add_argument(
        "--json",
        action="store_true",
        help='print {"devices", "platform", "per_pass", "policies": [{"policy", "compile_s", "run_s", '
        '"episode_steps_per_s"}]}',
    )
    bench.set_defaults(run=cmd_bench)


def cmd_bench(args) -> int:
    import json

    from wpbjax.runtime.devices import enable_compilation_cache

    enable_compilation_cache() if args.cache else None
    from wpbjax.bench import run_bench
    from wpbjax.cli.arguments import ENCODED_BYTES_PER_STEP, refuse_past_memory

    refuse_past_memory(
        f"--episodes {args.episodes:,} x --steps {args.steps:,}", args.episodes * args.steps * ENCODED_BYTES_PER_STEP
    )

    report = run_bench(
        n_episodes=args.episodes,
        n_steps=args.steps,
        policies=args.policies,
        budgets=args.budgets,
        repeats=args.repeats,
        per_pass=args.per_pass,
    )
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"{report['episodes']:,} episodes x {report['steps']} steps x {len(report['budgets'])} budgets = "
        f"{report['runs']:,} runs on {report['devices']} {report['platform']} device(s) ({report['device_kind']}), "
        f"passes of up to {report['per_pass']:,} episodes per device"
    )
    print(f"{'policy':<20} {'compile s':>10} {'run s':>9} {'episode-steps/s':>17}")
    for row in report["policies"]:
        print(
            f"{row['policy']:<20} {row['compile_s']:>10.2f} {row['run_s']:>9.3f} {row['episode_steps_per_s']:>17,.0f}"
        )
    rates = sorted(row["episode_steps_per_s"] for row in report["policies"])
    print(f"median {np.median(rates):,.0f} episode-steps/s; slowest {rates[0]:,.0f}")
    return 0
