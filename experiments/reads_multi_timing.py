"""What multi-fact and history probes cost: the paper grid without probes, with the default generated probes (of which
a share ask for several facts and for histories), and with one-fact generated probes (both shares 0: the defaults
before they were on) (docs/reads.md "What reads cost").

    python experiments/reads_multi_timing.py [--rounds 3]

As experiments/reads_timing.py: each run a fresh `wpbjax sweep --quiet` process on the default paper grid (5,280
runs), the arms rotating within each round so that load from other work falls on all of them. Prints every
time (wall, and the process's CPU time: less sensitive to a busy machine), each arm's medians and their ratios to
the arm without probes (the issue's bar: at most 1.5x).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(flags: list[str], out: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process: user + system, every thread) of one sweep."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "wpbjax.cli", "sweep", "--quiet", "--out", out] + flags, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    arms = {
        "none": ["--probes", "none"],
        "generate": ["--probes", "generate"],
        "one-fact": ["--probes", "generate", "--multi-fact-rate", "0", "--history-rate", "0"],
    }
    names = list(arms)
    times: dict[str, list[float]] = {name: [] for name in arms}
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                seconds, used = run_once(arms[name], os.path.join(tmp, f"{name}.csv"))
                times[name].append(seconds)
                cpu[name].append(used)
                print(f"round {round_index + 1} {name:8s} {seconds:7.2f} s wall {used:7.2f} s CPU", flush=True)
    for label, values in (("wall", times), ("CPU", cpu)):
        medians = {name: statistics.median(each) for name, each in values.items()}
        for name in names:
            print(
                f"median {label:4s} {name:8s} {medians[name]:7.2f} s  ratio to none "
                f"{medians[name] / medians['none']:.2f}x"
            )
    print(f"({args.rounds} rotating rounds; generate: the default shares; one-fact: both shares 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
