"""``wpbjax packages train`` and ``wpbjax packages score``: thin commands over
:mod:`wpbjax.packages.learned_train` and :mod:`wpbjax.packages.external`.

    wpbjax packages train --out writer.npz         # then: packages sweep --methods opt,oracle_gvt,learned:writer.npz
    wpbjax packages score --package DIR --store exported.jsonl --budget 30,60,100 [--out rows.csv]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from wpbjax.cli.argtypes import count_list

PROG_SCORE = "wpbjax packages score"


def _shapes(text: str) -> tuple:
    try:
        shapes = tuple(tuple(int(n) for n in part.lower().split("x")) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NORMALxUPDATE pairs like 3x2,2x1; got {text!r}") from None
    if not shapes or any(len(shape) != 2 for shape in shapes):
        raise argparse.ArgumentTypeError(f"expected NORMALxUPDATE pairs like 3x2,2x1; got {text!r}")
    return shapes


def _distributions(text: str) -> tuple:
    from wpbjax.packages.catalog import DISTRIBUTIONS

    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in names if name not in DISTRIBUTIONS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown distribution(s) {', '.join(unknown) or text!r}; choose from {', '.join(DISTRIBUTIONS)}"
        )
    return names


def add_parsers(sub) -> None:
    """Register ``train`` and ``score`` on the ``packages`` sub-parsers."""
    from wpbjax.packages.catalog import DISTRIBUTIONS
    from wpbjax.packages.learned_train import RELAXATIONS, WriterTrainConfig

    d = WriterTrainConfig()
    train = sub.add_parser("train", help="train a learned streaming package writer; sweep it as method learned:PATH")
    train.add_argument("--out", default="writer.npz", help="checkpoint file (default writer.npz)")
    train.add_argument(
        "--distributions",
        type=_distributions,
        default=d.distributions,
        help=f"comma-separated training distributions (default {','.join(d.distributions)}; "
        f"any of {','.join(DISTRIBUTIONS)})",
    )
    train.add_argument(
        "--shapes",
        type=_shapes,
        default=d.shapes,
        help="comma-separated NORMALxUPDATE counts of the training packages (default 3x2)",
    )
    train.add_argument(
        "--packages", type=int, default=d.packages, help=f"training packages per shape (default {d.packages})"
    )
    train.add_argument(
        "--check-packages",
        type=int,
        default=d.check_packages,
        help=f"held-back packages per shape that pick the kept weights (default {d.check_packages})",
    )
    train.add_argument(
        "--budgets",
        type=count_list,
        default=list(d.budgets),
        help=f"training budgets (default {','.join(map(str, d.budgets))})",
    )
    train.add_argument(
        "--relaxation",
        choices=RELAXATIONS,
        default=d.relaxation,
        help=f"relaxed rollout the gradient flows through (default {d.relaxation})",
    )
    for name, kind in (
        ("seed", int),
        ("steps", int),
        ("batch", int),
        ("hidden", int),
        ("learning_rate", float),
        ("tau_start", float),
        ("tau_end", float),
        ("eval_every", int),
    ):
        train.add_argument(
            f"--{name.replace('_', '-')}", type=kind, default=getattr(d, name), help=f"default {getattr(d, name)}"
        )
    train.add_argument("--h", choices=("min", "log1p", "linear"), default=d.h, help="concave h (default min)")
    train.add_argument("--init", default="", metavar="WRITER", help="fine-tune this checkpoint (same --hidden)")
    train.add_argument("--quiet", action="store_true")
    train.set_defaults(run=cmd_train)

    score = sub.add_parser(
        "score", help="score a store another system wrote against the union denominator (MEMAUDIT Definition 3)"
    )
    score.add_argument("--package", required=True, metavar="DIR", help="the package directory (export layout)")
    score.add_argument("--store", required=True, metavar="FILE", help="the exported store, JSONL (docs/packages.md)")
    score.add_argument("--budget", type=count_list, required=True, help="budget(s), comma-separated")
    score.add_argument("--h", choices=("min", "log1p", "linear"), default="min", help="concave h (default min)")
    score.add_argument("--out", default=None, help="rows file, .csv or .parquet (default: none)")
    score.add_argument("--quiet", action="store_true")
    score.set_defaults(run=cmd_score)


def cmd_train(args) -> int:
    from wpbjax.packages.learned import save_writer
    from wpbjax.packages.learned_train import WriterTrainConfig, train_writer

    config = WriterTrainConfig(
        seed=args.seed,
        distributions=args.distributions,
        shapes=args.shapes,
        packages=args.packages,
        check_packages=args.check_packages,
        budgets=tuple(args.budgets),
        h=args.h,
        steps=args.steps,
        batch=args.batch,
        hidden=args.hidden,
        learning_rate=args.learning_rate,
        tau_start=args.tau_start,
        tau_end=args.tau_end,
        eval_every=args.eval_every,
        relaxation=args.relaxation,
        init=args.init,
    )
    from wpbjax.files.atomic import check_writable, refuse_inputs

    check_writable(args.out)  # fail early (and clearly) if the path cannot be written; touch nothing yet
    refuse_inputs(args.out, [args.init] if args.init else [], "--out")
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    result = train_writer(config, log)
    save_writer(
        args.out,
        result["params"],
        result["kinds"],
        {"config": dataclasses.asdict(config), "history": result["history"], "train_seconds": result["seconds"]},
    )
    if not args.quiet:
        kept = result["history"][-1]
        print(
            f"wrote {args.out} in {result['seconds']:.0f} s (kept step {kept['kept_step']}, hard ratio "
            f"{kept['kept_hard_ratio']:.4f} on held-back training packages); sweep it with "
            f"--methods opt,oracle_gvt,learned:{args.out}",
            file=sys.stderr,
        )
    return 0


def cmd_score(args) -> int:
    from wpbjax.cli.arguments import stderr_warning, unique_values
    from wpbjax.files.results_io import check_output, write_table
    from wpbjax.packages.external import read_store, score_store
    from wpbjax.packages.io import package_files, read_packages

    args.budget = unique_values(list(args.budget), "--budget", stderr_warning(PROG_SCORE))  # (repeats: duplicate rows)
    if not os.path.isdir(args.package):
        raise ValueError(f"--package {args.package}: not a package directory")
    if args.out:  # before any work: a writable place, and none of the files read
        check_output(args.out, inputs=[args.store, *package_files([args.package])], command="command")
    pset = read_packages([args.package])
    store = read_store(args.store, pset.meta.unit_ids[0])
    table = score_store(pset, store, args.budget, args.h)
    if args.out:
        write_table(table, args.out, {"command": PROG_SCORE})
    if not args.quiet:
        print(
            f"{len(store.memory_ids)} memories, cost {int(store.cost.sum())}, F(Y) = "
            f"{table['store_value'].iloc[0]:.4f}; ratios to the union OPT (package OPT):"
        )
        for _, row in table.iterrows():
            value = (
                "infeasible (over budget)"
                if row["value"] != row["value"]
                else (
                    f"{row['value']:.4f} / {row['union_opt']:.4f} = {row['ratio_to_union']:.4f} "
                    f"({row['ratio_to_package']:.4f} of package OPT {row['package_opt']:.4f})"
                )
            )
            print(f"  B={row['budget']:<5} {row['selection']:<15} {value}")
    return 0
