"""Where one policy's rollout step spends its time: each kernel of the step, timed by the JAX profiler.

    PYTHONPATH=. python experiments/step_profile.py --policy merge_aggressive [--episodes 4000] [--top 25]

Runs ``wpbjax.core.rollout.batch_counts`` (the fully optimised build ``wpbjax bench`` times, one XLA device
per core, the bench's episodes and budgets) once to compile, once more under ``jax.profiler.trace`` with
XLA:CPU's per-kernel trace events on, and prints the kernels that took the most time: total milliseconds,
calls, and microseconds per call (one call covers every run of a pass: a step of ``runs per pass`` runs).
Kernel names are those of the compiled HLO (``experiments/step_kernels.py`` counts what each holds). Times
include the profiler's own cost and the machine's load; compare kernels within one run, not across runs.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import tempfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy", required=True)
    parser.add_argument("--episodes", type=int, default=4000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--top", type=int, default=25, help="kernels to list (default 25)")
    args = parser.parse_args()
    # Must be set before JAX starts: XLA:CPU then emits a trace event per kernel.
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_xprof_traceme=true").strip()
    from wpbjax.runtime import devices as devices_lib

    devices_lib.use_every_core()
    import jax
    from jax.profiler import ProfileData

    from wpbjax.bench import DEFAULT_BUDGETS, bench_batch
    from wpbjax.core import rollout
    from wpbjax.policies import make

    batch = bench_batch(args.episodes, args.steps, devices=jax.local_devices())
    policy = make(args.policy)

    def run():
        return jax.block_until_ready(
            rollout.batch_counts(policy, batch, DEFAULT_BUDGETS, work=rollout.QUICK_COMPILE_BELOW)
        )

    run()  # compile
    with tempfile.TemporaryDirectory() as directory:
        with jax.profiler.trace(directory):
            run()
        profile = ProfileData.from_file(glob.glob(f"{directory}/**/*.xplane.pb", recursive=True)[0])
        total_ns, calls = collections.Counter(), collections.Counter()
        for plane in profile.planes:
            for line in plane.lines:
                for event in line.events:
                    total_ns[event.name] += event.duration_ns
                    calls[event.name] += 1
    runs_per_pass = rollout.episodes_per_pass(args.steps, len(DEFAULT_BUDGETS)) * len(DEFAULT_BUDGETS)
    print(f"{args.policy}: {args.episodes} episodes x {args.steps} steps x {len(DEFAULT_BUDGETS)} budgets,")
    print(f"passes of {runs_per_pass} runs per device; kernels called once per step and pass")
    print("| kernel | ms | calls | us per call |")
    print("| --- | --- | --- | --- |")
    # the step's kernels (called once per step and pass; not the runtime's own events around them)
    per_step = [name for name in total_ns if calls[name] >= args.steps and not name.startswith("ThunkExecutor")]
    for name in sorted(per_step, key=total_ns.get, reverse=True)[: args.top]:
        print(f"| {name} | {total_ns[name] / 1e6:.1f} | {calls[name]} | {total_ns[name] / calls[name] / 1e3:.1f} |")


if __name__ == "__main__":
    main()
