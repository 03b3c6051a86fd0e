"""What reads cost: the paper grid with default generated probes against the same grid without probes.

    python experiments/reads_timing.py [--rounds 3] [--extra "--top-k 1,5,20"]

Each run is a fresh `wpbjax sweep --quiet` process (imports, generation, encoding, compiles, the sweep, the
read metrics and the writing all counted) on the default paper grid (4 modes x 10 episodes x 11 budgets x
the published line-up: 5,280 runs). The two arms alternate within each round (A B, then B A, ...), so load
from other work on the machine falls on both alike. Prints every time, each arm's median, and the ratio of
the medians (issue 22's bar: under 1.5x).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ARMS = {"none": ["--probes", "none"], "generate": ["--probes", "generate"]}


def run_once(flags: list[str], out: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "wpbjax.cli", "sweep", "--quiet", "--out", out] + flags, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--extra", default="", help="flags added to both arms (e.g. --top-k 1,5,20)")
    args = parser.parse_args()
    extra = shlex.split(args.extra)
    times: dict[str, list[float]] = {name: [] for name in ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            order = list(ARMS) if round_index % 2 == 0 else list(reversed(ARMS))
            for name in order:
                seconds = run_once(ARMS[name] + extra, os.path.join(tmp, f"{name}.csv"))
                times[name].append(seconds)
                print(f"round {round_index + 1} {name:8s} {seconds:7.2f} s", flush=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(
        f"median: --probes none {medians['none']:.2f} s, --probes generate {medians['generate']:.2f} s; "
        f"ratio {medians['generate'] / medians['none']:.2f}x over {args.rounds} interleaved rounds"
        + (f" (both with {args.extra})" if extra else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
