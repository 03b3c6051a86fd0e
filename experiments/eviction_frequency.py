"""How often the evicting policies evict, and what each eviction slot of priority_greedy's step costs.

    PYTHONPATH=. python experiments/eviction_frequency.py [--episodes 349] [--timing-episodes 10000] [--victims 2,3,4]

Part one runs each evicting policy (``--policies``, default priority_greedy, last_kb, merge_aggressive) on
the bench's episodes (``wpbjax.bench.bench_batch``) at the bench's budgets, one pass's worth of episodes by
default, with its ``act`` wrapped to record, per run and step, whether the action emitted an EXPIRE and
whether it was a CONTINUE. It prints per budget the share of run-steps that evict and the share of steps at
which at least one run of the pass evicts: the vmapped step runs every run's eviction code at a step where
any run needs it, so the second share is the share of steps that pay for an eviction path.

Part two times priority_greedy's bench batch (``--timing-episodes``, the fully optimised build
``wpbjax bench`` times) with ``GREEDY_EXPIRES_PER_CALL`` set to each of ``--victims`` (the slots its step
computes per call; a longer walk CONTINUEs), checks that the counts are equal for every choice, and prints
the best of three wall times: the difference between choices is what one slot costs when every step
computes it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time

from wpbjax.runtime import devices as devices_lib


def eviction_shares(policy, batch, budgets):
    """[N, B, T] bool arrays (EXPIRE emitted, CONTINUE emitted) of ``policy`` on every (episode, budget)."""
    import jax
    import jax.numpy as jnp

    from wpbjax.core import scan
    from wpbjax.state import actions

    n_steps = batch.n_steps

    def init(params, episode, key):
        return policy.init(params, episode, key), jnp.zeros((2, n_steps), bool)

    def act(params, state, store, episode, pos, budget):
        action, inner = policy.act(params, state[0], store, episode, pos, budget)
        seen = state[1].at[:, pos].max(jnp.stack([action.n_expire > 0, action.kind == actions.CONTINUE]))
        return action, (inner, seen)

    recording = dataclasses.replace(policy, init=init, act=act)
    params = recording.resolve_params({})

    def one(episode, budget):
        carry = scan.initial_carry(recording, params, episode, budget, jax.random.key(0))
        _, (_, seen) = scan.advance(recording, params, episode, budget, carry, 0, n_steps)
        return seen

    seen = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))(batch, jnp.asarray(budgets))
    return jax.device_get(seen[:, :, 0]), jax.device_get(seen[:, :, 1])


def time_victims(batch, budgets, victims: list[int]) -> None:
    import jax

    from wpbjax.core import rollout
    from wpbjax.policies import make, published

    print("\n| priority_greedy slots per call | best of 3 (s) |\n| --- | --- |")
    first = None
    for k in victims:
        published.GREEDY_EXPIRES_PER_CALL = k  # read when the step is traced
        jax.clear_caches()
        run = functools.partial(
            rollout.batch_counts, make("priority_greedy"), batch, budgets, work=rollout.QUICK_COMPILE_BELOW
        )
        counts = jax.device_get(run())
        first = counts if first is None else first
        leaves = zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(counts))
        if not all((a == b).all() for a, b in leaves):
            raise SystemExit(f"counts at {k} slots per call differ from those at {victims[0]}")
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            jax.block_until_ready(run())
            best = min(best, time.perf_counter() - started)
        print(f"| {k} | {best:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=349, help="episodes of part one (default: one bench pass)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--policies", default="priority_greedy,last_kb,merge_aggressive")
    parser.add_argument("--timing-episodes", type=int, default=10000, help="part two's batch (0: skip part two)")
    parser.add_argument("--victims", default="2,3,4", help="priority_greedy's slots per call to time")
    args = parser.parse_args()
    devices_lib.use_every_core()
    import jax
    import numpy as np

    from wpbjax.bench import DEFAULT_BUDGETS, bench_batch
    from wpbjax.policies import make

    budgets = np.asarray(DEFAULT_BUDGETS, np.int32)
    batch = bench_batch(args.episodes, args.steps, devices=jax.local_devices()[:1])
    print(f"{args.episodes} episodes x {args.steps} steps, budgets {list(DEFAULT_BUDGETS)}")
    print("| policy | budget | run-steps with an EXPIRE | steps at which some run evicts | steps with a CONTINUE |")
    print("| --- | --- | --- | --- | --- |")
    for name in args.policies.split(","):
        expires, continues = eviction_shares(make(name), batch, budgets)  # [N, B, T]
        for b, budget in enumerate(budgets):
            print(
                f"| {name} | {budget} | {expires[:, b].mean():.2%} | {expires[:, b].any(0).mean():.1%} "
                f"| {continues[:, b].any(0).mean():.1%} |"
            )
        print(
            f"| {name} | all | {expires.mean():.2%} | {expires.any((0, 1)).mean():.1%} | {continues.any((0, 1)).mean():.1%} |"
        )
    if args.timing_episodes:
        time_victims(bench_batch(args.timing_episodes, args.steps), budgets, [int(k) for k in args.victims.split(",")])


if __name__ == "__main__":
    main()
