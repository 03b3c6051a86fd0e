"""Throughput of the streaming package writers: N memaudit_small packages x 5 budgets x every
streaming writer (oracle_gvt, density_only, recency_raw, reservoir_raw, no_tombstone_gvt).

    PYTHONPATH=. python experiments/bench_packages_writers.py [--packages 100000] [--chunk 8192]

Prints generation time, then per writer the first call (trace + compile, or the persistent cache)
and a second timed call, and the total. One XLA CPU device per core, packages split over them.
"""

from __future__ import annotations

import argparse
import time

from wpbjax.runtime.devices import use_every_core


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=1024)
    parser.add_argument("--budgets", default="1,2,4,8,16")
    args = parser.parse_args()
    use_every_core()
    import jax

    from wpbjax.packages import writers
    from wpbjax.packages.catalog import STREAMING
    from wpbjax.packages.memaudit_gen import memaudit_small

    budgets = [int(b) for b in args.budgets.split(",")]
    start = time.perf_counter()
    pset = memaudit_small(range(args.packages), with_meta=False)
    print(
        f"generate {args.packages} packages: {time.perf_counter() - start:.2f} s ({len(jax.local_devices())} devices)",
        flush=True,
    )
    total_first = total_second = cpu_second = 0.0
    for method in STREAMING:
        times, cpus = [], []
        for _ in range(2):
            t, c = time.perf_counter(), time.process_time()
            writers.write(method, pset.batch, budgets, reservoir_key=pset.reservoir_key, chunk=args.chunk)
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        total_first, total_second, cpu_second = total_first + times[0], total_second + times[1], cpu_second + cpus[1]
        print(f"{method:<18} first {times[0]:7.2f} s   again {times[1]:7.2f} s wall, {cpus[1]:7.2f} s CPU", flush=True)
    end_to_end = time.perf_counter() - start - total_second
    print(
        f"all streaming writers, {args.packages} packages x {len(budgets)} budgets: {total_second:.2f} s wall "
        f"({cpu_second:.2f} s CPU over the cores) steady; generation + first calls {end_to_end:.2f} s wall"
    )


if __name__ == "__main__":
    main()
