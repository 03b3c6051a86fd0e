"""What one per-run read or write costs inside a rollout's step, on this machine: the floor under the evicting policies.

    PYTHONPATH=. python experiments/per_run_primitives.py [--episodes 349] [--budgets 3] [--steps 200] [--passes 15]

A step of the engine is vmapped over a pass's runs (episodes × budgets; ``wpbjax bench``'s pass: 349 × 3 at
T = 200), so a policy's ``row[index]`` with an index that differs from run to run becomes one gather over the
pass, and ``row.at[index].set(value)`` one scatter (XLA:CPU runs it as a loop over the runs). This times each
alone, in a scan of ``--steps`` steps over ``--passes`` passes (``lax.map``, as the rollout runs them), compiled
with the rollout's options, on one device: microseconds per step of one pass, best of three. Compare with the
time per step a policy may take: ``wpbjax bench``'s run seconds ÷ (passes per device × steps).

* ``nothing``: the scan alone (a counter per run);
* ``gather``: one per-run read of a [T] row;
* ``scatter``: one per-run write into a [T] row (vmap's batched scatter);
* ``flat scatter``: the same write as one scatter into the pass's rows flattened to one axis;
* ``same-slot write``: a write at the step's own slot, the same for every run (a dynamic-update-slice, how
  the store adds an item).
"""

from __future__ import annotations

import argparse
import time

from wpbjax.runtime import devices as devices_lib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=349, help="episodes per pass (default: the bench's)")
    parser.add_argument("--budgets", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--passes", type=int, default=15)
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp

    n_episodes, n_budgets, n_steps = args.episodes, args.budgets, args.steps

    def per_run(fn):  # fn(row [T], index [], pos []) over a pass's [episodes, budgets] runs
        return jax.vmap(jax.vmap(fn, in_axes=(0, 0, None)), in_axes=(0, 0, None))

    def slot(index, pos):  # a slot that differs from run to run and from step to step
        return (index * 7 + pos) % n_steps

    def nothing(rows, index, pos):
        return rows, index + 1

    def gather(rows, index, pos):
        return rows, index + per_run(lambda row, i, p: row[slot(i, p)])(rows, index, pos)

    def scatter(rows, index, pos):
        return per_run(lambda row, i, p: row.at[slot(i, p)].set(p))(rows, index, pos), index + 1

    def flat_scatter(rows, index, pos):
        runs = jnp.arange(n_episodes * n_budgets, dtype=jnp.int32).reshape(n_episodes, n_budgets)
        flat = (runs * n_steps + slot(index, pos)).reshape(-1)
        written = rows.reshape(-1).at[flat].set(pos, mode="drop", unique_indices=True, indices_are_sorted=True)
        return written.reshape(rows.shape), index + 1

    def same_slot_write(rows, index, pos):
        written = per_run(lambda row, i, p: jax.lax.dynamic_update_index_in_dim(row, i, p, 0))(rows, index, pos)
        return written, index + 1

    rows = jnp.zeros((args.passes, n_episodes, n_budgets, n_steps), jnp.int32)
    index = jnp.ones((args.passes, n_episodes, n_budgets), jnp.int32)
    print(f"{n_episodes} episodes x {n_budgets} budgets per pass, {n_steps} steps, {args.passes} passes, one device")
    print("| primitive | µs per step of a pass |\n| --- | --- |")
    for name, body in [
        ("nothing", nothing),
        ("gather", gather),
        ("scatter", scatter),
        ("flat scatter", flat_scatter),
        ("same-slot write", same_slot_write),
    ]:

        def one_pass(rows, index, body=body):
            (rows, index), _ = jax.lax.scan(
                lambda carry, pos: (body(*carry, pos), None), (rows, index), jnp.arange(n_steps)
            )
            return rows, index

        program = jax.jit(lambda rows, index, one_pass=one_pass: jax.lax.map(lambda a: one_pass(*a), (rows, index)))
        compiled = program.lower(rows, index).compile(devices_lib.COMPILER_OPTIONS)
        jax.block_until_ready(compiled(rows, index))
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            jax.block_until_ready(compiled(rows, index))
            best = min(best, time.perf_counter() - started)
        print(f"| {name} | {best / (args.passes * n_steps) * 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
