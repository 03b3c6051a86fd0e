"""Read-aware learning: a gate trained on soft F1 against gates trained on soft reads — accuracy on one-fact probes
(the first read-trained gate), accuracy and credit on the default generated probes, of which some ask several
facts or a history — on F1, read accuracy and read credit (docs/reads.md "Read-aware learning").

    python experiments/reads_gate.py [--steps 300] [--out experiments/results/reads_gate.md]

Four gates (unprivileged track), the same training pool, seed and settings as `wpbjax train` (docs/learning.md)
but for the soft objective: ``f1``: 1 - soft F1 (the default gate); ``reads (one fact)``: 1 - soft read accuracy
alone (``f1_weight=0, read_weight=1``) on one-fact generated probes (``read_multi_fact_rate=0,
read_history_rate=0``: the probes the first read-trained gate learnt from); ``reads (several facts)``: the same
on the default generated probes (0.4 of them asking 2-3 facts, 0.1 of the current ones a history: a probe is
right only when every fact is, wpbjax.learn.soft_reads); ``credit (several facts)``: 1 - soft read credit
(``credit_weight=1``: the weighted share of each probe's facts right) on the same probes. The default
retriever and the expected top-5 retrieval under the soft gate's store probabilities; all keep the afford head's
hindsight term. Then all four run as
hard policies (``learned_gate:PATH``) on held-out episodes (the published generator's four modes x 10 at seed
10_000, 200 steps: never seen in training) with the default generated probes: mean F1, read accuracy and read
credit at K = 1, 5, 20, at 1 KB, 10 KB and 100 KB. Prints a markdown table (also --out); the gates are saved
beside it (reads_gate_f1.npz, reads_gate_reads_one.npz, reads_gate_reads.npz, reads_gate_credit.npz:
experiments/reads_writ_table.py reads them).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import wpbjax.api as wj
from wpbjax.episodes.generators.parallel import generate_encoded
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig
from wpbjax.learn.config import TrainConfig
from wpbjax.learn.evaluate import HELD_OUT_SEED
from wpbjax.learn.gate import save_gate
from wpbjax.learn.train import train_gate
from wpbjax.reports.tables import budget_label

BUDGETS = (1024, 10240, 102400)
TOP_K = (1, 5, 20)
READS = {"f1_weight": 0.0, "read_weight": 1.0}
# shown name -> (file stem, TrainConfig overrides)
OBJECTIVES = {
    "f1": ("f1", {}),
    "reads (one fact)": ("reads_one", {**READS, "read_multi_fact_rate": 0.0, "read_history_rate": 0.0}),
    "reads (several facts)": ("reads", READS),
    "credit (several facts)": ("credit", {"f1_weight": 0.0, "credit_weight": 1.0}),
}


def train_gates(directory: pathlib.Path, steps: int, names=tuple(OBJECTIVES), log=print) -> dict:
    """{shown name: gate path} of the gates ``names``, trained into ``directory`` where their file is absent."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in names:
        stem, overrides = OBJECTIVES[name]
        path = directory / f"reads_gate_{stem}.npz"
        if not path.exists():
            trained = train_gate(TrainConfig(steps=steps, **overrides))
            meta = {"afford_threshold": trained["afford_threshold"], "objective": name, **overrides}
            save_gate(str(path), trained["weights"], "unprivileged", meta)
            log(f"trained {name}: {trained['seconds']} s, final soft loss {trained['history'][-1]['soft_loss']}")
        paths[name] = str(path)
    return paths


def table(results, paths: dict) -> str:
    """Rows (gate, budget): mean F1, read accuracy at each K, read credit at each K."""
    means = results.groupby(["policy", "budget_bytes", "top_k"])[["f1", "read_accuracy", "read_credit"]].mean()
    header = (
        ["gate trained on", "budget", "F1"] + [f"read acc K={k}" for k in TOP_K] + [f"read credit K={k}" for k in TOP_K]
    )
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for name, path in paths.items():
        for budget in BUDGETS:
            at = means.loc[(f"learned_gate:{path}", budget)]
            cells = [f"{at.f1.iloc[0]:.3f}"] + [f"{at.read_accuracy.loc[k]:.3f}" for k in TOP_K]
            cells += [f"{at.read_credit.loc[k]:.3f}" for k in TOP_K]
            lines.append(f"| {name} | {budget_label(budget)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def held_out_results(paths: dict):
    """The gates' results rows on the held-out episodes with the default generated probes."""
    held_out = generate_encoded([DriftConfig(mode=mode, seed=HELD_OUT_SEED, steps=200) for mode in MODES], 10)
    return wj.sweep(
        held_out,
        grid=wj.Grid(
            budgets=list(BUDGETS),
            policies=[f"learned_gate:{path}" for path in paths.values()],
            tracks=["unprivileged"],
        ),
        reads=wj.Reads(top_k=TOP_K, probes="generate"),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default="experiments/results/reads_gate.md")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    started = time.perf_counter()
    paths = train_gates(out.parent, args.steps, log=lambda line: print(line, flush=True))
    text = table(held_out_results(paths), paths)
    text += f"\n\n({time.perf_counter() - started:.0f} s, {args.steps} steps each)\n"
    print(text)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
