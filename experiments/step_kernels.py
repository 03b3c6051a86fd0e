"""What one rollout step compiles to, per policy: kernels, their instructions, scatter loops, whole-store copies, split kernels.

    PYTHONPATH=. python experiments/step_kernels.py [--episodes 1396] [--steps 200] [--policies a,b]

Reads the compiled HLO of ``wpbjax.core.rollout._batch_counts`` (the fully optimised build ``wpbjax bench``
times; one XLA device per core) and reports, for the step loop's body: its kernels (instructions other
than parameters, tuples, bitcasts and constants), the instructions inside them (a fused computation's,
the computations it calls included: XLA:CPU fuses a cheap computation into every kernel that reads it,
so a value read by several kernels is computed once by each, work a kernel count does not show), the scatters XLA:CPU turned into loops over the runs
(``xla_cpu_small_call`` calls; a multi-action policy's CONTINUE loop counts too), copies of a whole [episodes, budgets, T] store array (what an update
not made in place costs), and kernels XLA splits over threads (``outer_dimension_partitions``).
Exact and load-independent, unlike timings on a shared machine.
"""

from __future__ import annotations

import argparse
import re

from wpbjax.runtime import devices as devices_lib

SKIPPED = ("parameter(", "get-tuple-element(", "tuple(", "bitcast(", "constant(")


def computations(hlo: str) -> dict:
    """name -> instruction lines of each computation in an HLO module's text."""
    found, current = {}, None
    for line in hlo.split("\n"):
        header = re.match(r"^(?:ENTRY )?%?([\w.\-]+) \(.*\{$", line)
        if header:
            current = found.setdefault(header.group(1), [])
        elif current is not None and line.startswith("  "):
            current.append(line)
    return found


STEP_OP = "vmap(vmap())/while/body/closed_call/"  # op names of the step's own instructions


def step_body(hlo: str) -> list:
    """Instruction lines of the step loop's body: the computation with the most instructions named as
    the step's (not those of a CONTINUE loop inside it, ``.../closed_call/while/body/...``)."""

    def own(line):
        return STEP_OP in line and "/closed_call/while/body/" not in line.split(STEP_OP, 1)[1]

    loops = [lines for name, lines in computations(hlo).items() if name.startswith("wide.")]  # loop bodies
    return max(loops, key=lambda lines: sum(own(line) for line in lines))


def instructions(line: str, found: dict, depth: int = 0) -> int:
    """Instructions a kernel runs: 1, or those of the computations it calls (recursively, a few levels)."""
    called = re.search(r"(?:calls|to_apply|body|condition)=%([\w.\-]+)", line)
    if called is None or depth > 3:
        return 1
    inner = [entry for entry in found.get(called.group(1), []) if not any(skip in entry for skip in SKIPPED)]
    return sum(instructions(entry, found, depth + 1) for entry in inner) or 1


def summarise(hlo: str, n_steps: int) -> dict:
    kernels = [line for line in step_body(hlo) if not any(skip in line for skip in SKIPPED)]
    whole_copies = [line for line in kernels if re.search(rf"= s32\[\d+,\d+,{n_steps}\]\S* copy\(", line)]
    found = computations(hlo)
    return {
        "kernels": len(kernels),
        "instructions": sum(instructions(line, found) for line in kernels),
        "loops": sum("xla_cpu_small_call" in line or " while(" in line for line in kernels),
        "whole_store_copies": len(whole_copies),
        "split_kernels": sum("outer_dimension_partitions" in line for line in kernels),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1396)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--policies", default=None, help="comma-separated (default: the privileged line-up)")
    args = parser.parse_args()
    devices_lib.use_every_core()
    import jax
    import numpy as np

    from wpbjax.bench import DEFAULT_BUDGETS, bench_batch
    from wpbjax.core import rollout
    from wpbjax.policies import lineup, make

    batch = bench_batch(args.episodes, args.steps, devices=jax.local_devices())
    budgets = np.asarray(DEFAULT_BUDGETS, np.int32)
    per_pass = rollout.episodes_per_pass(args.steps, len(budgets))
    print(
        "| policy | step kernels | their instructions | loops (scatters; a CONTINUE loop) | whole-store copies | split kernels |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.policies.split(",") if args.policies else lineup("privileged"):
        policy = make(name)
        index = rollout._episode_index(None, batch.n_episodes)
        lowered = rollout._batch_counts.lower(
            policy, devices_lib.mesh_of(batch.valid), per_pass, policy.resolve_params({}), batch, budgets, None, index
        )
        counts = summarise(lowered.compile().as_text(), args.steps)
        print(f"| {name} | " + " | ".join(str(value) for value in counts.values()) + " |")


if __name__ == "__main__":
    main()
