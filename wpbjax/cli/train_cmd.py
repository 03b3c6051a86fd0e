"""``wpbjax train``: train a budget-conditioned write gate (:func:`wpbjax.api.train_gate`; docs/learning.md)."""

from __future__ import annotations

import sys

from wpbjax.cli.argtypes import positive_float, positive_int


def add_parser(commands) -> None:
    from wpbjax.learn.config import TrainConfig

    d = TrainConfig()
    train = commands.add_parser(
        "train", help="train a budget-conditioned write gate (wpbjax.learn); see docs/learning.md"
    )
    train.add_argument("--track", choices=("unprivileged", "privileged"), default=d.track, help=f"default {d.track}")
    train.add_argument(
        "--seed", type=int, default=d.seed, help=f"init, batches, budgets and training episodes (default {d.seed})"
    )
    train.add_argument("--out", default="gate.npz", help="checkpoint file (default gate.npz)")
    train.add_argument("--steps", type=positive_int, default=d.steps, help=f"optimisation steps (default {d.steps})")
    train.add_argument("--batch", type=positive_int, default=d.batch, help=f"episodes per step (default {d.batch})")
    train.add_argument(
        "--pool-per-mode",
        type=positive_int,
        default=d.pool_per_mode,
        help=f"training episodes per mode (default {d.pool_per_mode})",
    )
    train.add_argument(
        "--calibration-per-mode",
        type=positive_int,
        default=d.calibration_per_mode,
        help=f"held-back episodes per mode that calibrate the afford threshold (default {d.calibration_per_mode})",
    )
    train.add_argument("--hidden", type=positive_int, default=d.hidden, help=f"MLP width (default {d.hidden})")
    train.add_argument(
        "--learning-rate",
        type=positive_float,
        default=d.learning_rate,
        help=f"peak adam rate (default {d.learning_rate})",
    )
    train.add_argument(
        "--fidelity-weight",
        type=float,
        default=d.fidelity_weight,
        help=f"weight of 1 - soft update fidelity in the loss (default {d.fidelity_weight}; docs/integrity.md)",
    )
    train.add_argument(
        "--coverage-weight",
        type=float,
        default=d.coverage_weight,
        help=f"weight of 1 - soft history coverage in the loss (default {d.coverage_weight})",
    )
    train.add_argument(
        "--log-every",
        type=positive_int,
        default=d.log_every,
        help=f"progress line every k steps (default {d.log_every})",
    )
    train.add_argument("--quiet", action="store_true", help="no progress lines")
    train.set_defaults(run=cmd_train)


def cmd_train(args) -> int:
    from wpbjax.api import train_gate
    from wpbjax.cli.output import stderr_log

    result = train_gate(
        args.track,
        out=args.out,
        log=None if args.quiet else stderr_log,
        seed=args.seed,
        steps=args.steps,
        batch=args.batch,
        pool_per_mode=args.pool_per_mode,
        hidden=args.hidden,
        learning_rate=args.learning_rate,
        log_every=args.log_every,
        calibration_per_mode=args.calibration_per_mode,
        fidelity_weight=args.fidelity_weight,
        coverage_weight=args.coverage_weight,
    )
    history = result["history"]
    if not args.quiet:
        print(
            f"wrote {args.track} gate to {args.out} in {result['seconds']:.0f} s (final soft loss "
            f"{history[-1]['soft_loss']:.4f}, exact loss {history[-1]['exact_loss']:.4f}); "
            f"sweep it with --policies learned_gate:{args.out}",
            file=sys.stderr,
        )
    return 0
