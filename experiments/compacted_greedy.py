"""A measurement, not an engine: priority_greedy with its evictions done only for the runs that evict.

    PYTHONPATH=. python experiments/compacted_greedy.py [--episodes 10000] [--steps 200] [--slots 64]

The engine vmaps one run's step over a pass of runs, so every run computes priority_greedy's eviction
slots at every step, though only a few percent of run-steps evict (experiments/eviction_frequency.py).
This script runs the same policy with the pass as the unit: a scan over steps whose body holds the whole
pass's store ([runs, T] arrays). Each step

* adds last step's item (``store.flush``, vmapped) and decides, per run, WRITE / SKIP / walk, which needs no
  read of a per-run slot;
* gathers the runs that must walk (at most ``--slots`` at a time; a loop takes more) and walks only those.
  A level's oldest item is found from its head, which follows the episode's chain of same-priority steps
  past the steps not held (a head only moves forward, and a level's first item resets it), so no per-level
  linked list is written at every WRITE;
* writes the walkers' EXPIREs into ``held``, and their bytes and counters back into the pass's arrays. Only
  what a walk changes goes through its loop.

It prints the wall time of the engine's ``rollout.batch_counts`` (the build ``wpbjax bench`` times) and of
this pass-level program on the bench's batch, best of three each, and checks that every count is equal
(``COMPARED``: retained steps, hits, bytes, staleness, write and expire actions).
tests/core/test_pass_level_greedy.py checks the equality at a small size, on every push.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time

from wpbjax.runtime import devices as devices_lib

COMPARED = ("retained", "n_hit", "bytes_used", "staleness_sum", "write_actions", "expire_actions", "n_present")


def build(n_steps: int, n_budgets: int, slots: int):
    import jax
    import jax.numpy as jnp

    from wpbjax.policies import published
    from wpbjax.scoring import metrics
    from wpbjax.state import store as store_lib

    features = published.PRIORITY_GREEDY.features

    def same_rank_chain(rank, valid, n_levels):
        """[T] next real step of the same priority rank (T: none) and [R] each rank's first step (T: none)."""

        def back(later, t):
            nxt = later[rank[t]]
            return jnp.where(valid[t], later.at[rank[t]].set(t), later), nxt

        first, nxt = jax.lax.scan(back, jnp.full(n_levels, n_steps, jnp.int32), jnp.arange(n_steps)[::-1])
        return nxt[::-1], first

    def pass_counts(batch, budgets):
        """Counts [E, B] of priority_greedy on a pass of E episodes at B budgets."""
        n_episodes, n_levels = batch.valid.shape[0], batch.priority_levels.shape[-1]
        n_runs = n_episodes * n_budgets
        episode_of = jnp.arange(n_runs) // n_budgets  # run r = e * B + b
        budget = jnp.tile(budgets, n_episodes)
        chain, first = jax.vmap(same_rank_chain, in_axes=(0, 0, None))(batch.priority_rank, batch.valid, n_levels)
        store = jax.vmap(lambda _: store_lib.empty(n_steps, features))(jnp.arange(n_runs))
        head = first[episode_of]  # [n, R]
        count = jnp.zeros((n_runs, n_levels), jnp.int32)
        levels = jnp.arange(n_levels)

        def walk_chunk(state, cost):
            """Walk every run of ``state['todo']`` (up to ``slots`` of them per call) until its write fits."""
            held, used, expired, head, count, todo = state
            idx = jnp.nonzero(todo, size=slots, fill_value=n_runs)[0]
            live = idx < n_runs
            safe = jnp.minimum(idx, n_runs - 1)
            ep = episode_of[safe]
            need = cost[safe] - jnp.maximum(budget[safe] - used[safe], 0)
            my_head, my_count = head[safe], count[safe]

            def more(walk):
                return (walk[0] < need).any() & live.any()

            def pop(walk):
                freed, my_head, my_count, held, taken = walk
                go = live & (freed < need)
                lowest = jnp.min(jnp.where(my_count > 0, levels, n_levels), axis=1)
                at = levels == lowest[:, None]
                t = jnp.max(jnp.where(at, my_head, 0), axis=1)

                def absent(t):
                    return go & (held[safe, jnp.minimum(t, n_steps - 1)] == 0)

                t = jax.lax.while_loop(lambda t: absent(t).any(), lambda t: jnp.where(absent(t), chain[ep, t], t), t)
                held = held.at[jnp.where(go, safe, n_runs), t].set(0, mode="drop")
                freed = freed + jnp.where(go, batch.write_cost[ep, t], 0)
                my_head = jnp.where(at & go[:, None], chain[ep, t][:, None], my_head)
                my_count = my_count - (at & go[:, None])
                return freed, my_head, my_count, held, taken + go

            zero = jnp.zeros(slots, jnp.int32)
            freed, my_head, my_count, held, taken = jax.lax.while_loop(more, pop, (zero, my_head, my_count, held, zero))
            rows = jnp.where(live, idx, n_runs)
            return (
                held,
                used.at[rows].add(-freed, mode="drop"),
                expired.at[rows].add(taken, mode="drop"),
                head.at[rows].set(my_head, mode="drop"),
                count.at[rows].set(my_count, mode="drop"),
                todo.at[rows].set(False, mode="drop"),
            )

        def step(pos, carry):
            store, head, count = carry
            store = jax.vmap(store_lib.flush, in_axes=(0, None, None))(store, pos, features)
            # the step's column of each episode, the same for its B runs (no per-run gather)
            cost, valid, rank = (
                jnp.repeat(column[:, pos], n_budgets) for column in (batch.write_cost, batch.valid, batch.priority_rank)
            )
            room = jnp.maximum(budget - store.used, 0)
            lowest = jnp.min(jnp.where(count > 0, levels, n_levels), axis=1)
            walks = valid & (cost > room) & (rank > lowest) & (budget >= cost)
            # only what a walk changes goes through its loop (not the whole store)
            held, used, expired, head, count, _ = jax.lax.while_loop(
                lambda state: state[-1].any(),
                lambda state: walk_chunk(state, cost),
                (store.held, store.used, store.expire_actions, head, count, walks),
            )
            store = dataclasses.replace(store, held=held, used=used, expire_actions=expired)
            writes = valid & (cost <= jnp.maximum(budget - store.used, 0))
            joins = (levels == rank[:, None]) & writes[:, None]
            # a level's first item is its head: the walk then never follows the chain over the steps it skipped
            head = jnp.where(joins & (count == 0), pos, head)
            count = count + joins
            store = dataclasses.replace(
                store, pending=jnp.where(writes, -1 - cost, 0), write_actions=store.write_actions + writes
            )
            return store, head, count

        store, _, _ = jax.lax.fori_loop(0, n_steps, step, (store, head, count))
        store = jax.vmap(store_lib.finish, in_axes=(0, None, None))(store, n_steps, features)
        store = jax.tree_util.tree_map(lambda leaf: leaf.reshape((n_episodes, n_budgets) + leaf.shape[1:]), store)
        return jax.vmap(jax.vmap(metrics.count, in_axes=(0, None)))(store, batch)

    return pass_counts


def program(n_steps: int, n_budgets: int, slots: int, mesh, per_pass: int):
    """The pass-level rollout as one compiled function ``(budgets [B], batch) -> Counts [N, B]``, in passes
    of ``per_pass`` episodes on each device of ``mesh`` (None: one device), as the engine runs."""
    import jax

    from wpbjax.core import rollout

    pass_counts = build(n_steps, n_budgets, slots)

    def local(budgets, batch):
        return rollout._in_passes(lambda batch: pass_counts(batch, budgets), per_pass, batch)

    return jax.jit(lambda budgets, batch: devices_lib.on_devices(local, mesh, (budgets,), (batch,)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--slots", type=int, default=64, help="runs walked per gather (default 64)")
    args = parser.parse_args()
    devices_lib.use_every_core()
    import jax
    import numpy as np

    from wpbjax.bench import DEFAULT_BUDGETS, bench_batch
    from wpbjax.core import rollout
    from wpbjax.policies import make

    budgets = np.asarray(DEFAULT_BUDGETS, np.int32)
    batch = bench_batch(args.episodes, args.steps)
    per_pass = rollout.episodes_per_pass(args.steps, len(budgets))
    compacted = program(args.steps, len(budgets), args.slots, devices_lib.mesh_of(batch.valid), per_pass)
    engine = functools.partial(
        rollout.batch_counts, make("priority_greedy"), batch, budgets, work=rollout.QUICK_COMPILE_BELOW
    )
    runs = {"engine": engine, "compacted": lambda: compacted(budgets, batch)}
    results = {name: jax.device_get(run()) for name, run in runs.items()}
    for field in COMPARED:
        same = np.array_equal(getattr(results["engine"], field), getattr(results["compacted"], field))
        print(f"{field}: {'equal' if same else 'DIFFERENT'}")
    for name, run in runs.items():
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            jax.block_until_ready(run())
            best = min(best, time.perf_counter() - started)
        steps = len(budgets) * args.episodes * args.steps
        print(f"{name}: {best:.3f} s, {steps / best:,.0f} episode-steps/s")


if __name__ == "__main__":
    main()
