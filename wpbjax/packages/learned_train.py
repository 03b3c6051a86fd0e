"""Train a learned package writer with optax on a differentiable relaxation of its hard rollout.

Relaxation: at each group the writer's argmax over {discard} ∪ group becomes a softmax at
temperature ``tau``; the store carries *expected* coverage totals and expected budget left, so the
soft value Σ_r w_r h(E[z_r]) is differentiable in the weights. A candidate's logit is lowered by
log of the share of its cost the expected budget left covers (soft feasibility), and expected
overspend is penalised. The loss is -mean(soft value / OPT) over (package, budget) pairs, so every
pair counts as its ratio does in the report; OPT is a training label only, the writer never sees it.
``tau`` anneals geometrically so the soft rollout approaches the hard one; the kept weights are
the ones whose *hard* rollouts scored best on held-back training packages.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from wpbjax.common.argument_errors import ArgumentError, arg
from wpbjax.packages.learned import group_features, group_logits, h_function, hard_rollout, init_writer, package_arrays

RELAXATIONS = ("expected", "straight_through", "both")
TRAIN_SEED_BASE = 1_000_000  # training package seeds start here: the paper's sweep uses 0..499


@dataclasses.dataclass(frozen=True)
class WriterTrainConfig:
    """Defaults are what ``wpbjax packages train`` uses."""

    seed: int = 0
    distributions: tuple = ("memaudit_small",)
    shapes: tuple = ((3, 2),)  # (normal_count, update_count) of the training packages
    packages: int = 1500  # training packages per (distribution, shape), seeds from TRAIN_SEED_BASE
    check_packages: int = 300  # held-back training-range packages per (distribution, shape): pick the kept weights
    budgets: tuple = (1, 2, 3, 4, 6, 8, 12, 16)
    h: str = "min"
    steps: int = 1000
    batch: int = 256  # (package, budget) pairs per step
    hidden: int = 32
    learning_rate: float = 0.01
    tau_start: float = 1.0  # softmax temperature at step 0 ...
    tau_end: float = 0.05  # ... and at the last step (geometric in between)
    overspend_penalty: float = 2.0  # per unit of expected cost above the budget, relative to OPT
    eval_every: int = 100  # hard rollouts on the held-back packages every k steps
    relaxation: str = "expected"  # "expected" store, "straight_through" Gumbel samples, or "both" (mean)
    init: str = ""  # start from this writer checkpoint (fine-tuning) instead of random weights

    def __post_init__(self):
        if self.packages > 50_000 or self.check_packages > 50_000:
            raise ArgumentError(
                f"{arg('packages')} and {arg('check_packages')} must be <= 50000 (seed blocks stay disjoint)"
            )
        if not self.distributions:
            raise ArgumentError(f"{arg('distributions')} must name at least one distribution")
        if not self.shapes or any(len(shape) != 2 or min(shape) < 0 or sum(shape) < 1 for shape in self.shapes):
            raise ArgumentError(
                f"{arg('shapes')} must be NORMALxUPDATE pairs of counts >= 0 (not both 0); got {self.shapes}"
            )
        if not self.budgets or min(self.budgets) < 1:
            raise ArgumentError(f"{arg('budgets')} must be integers >= 1; got {self.budgets}")
        if self.relaxation not in RELAXATIONS:
            raise ArgumentError(f"{arg('relaxation')} must be one of {', '.join(RELAXATIONS)}; got {self.relaxation!r}")
        if self.seed < 0:
            raise ArgumentError(f"{arg('seed')} must be >= 0; got {self.seed}")
        for name in ("packages", "check_packages", "steps", "batch", "hidden", "eval_every"):
            if getattr(self, name) < 1:
                raise ArgumentError(f"{arg(name)} must be >= 1; got {getattr(self, name)}")
        if not (self.learning_rate > 0 and self.tau_start > 0 and self.tau_end > 0):
            raise ArgumentError(f"{arg('learning_rate')}, {arg('tau_start')} and {arg('tau_end')} must be > 0")


def soft_rollout(params: dict, package: dict, budget, tau, h_name: str = "min", key=None):
    """Relaxed rollout of one package at one budget: ``(soft value, expected overspend)``.

    Without ``key``: the expected store (softmax probabilities times coverage and cost). With
    ``key``: straight-through Gumbel -- each group's choice is a hard sample of the softmax at
    temperature ``tau`` (so the store is a real, feasible store and its value exact), and the
    gradient flows through the softmax probabilities."""
    h = h_function(h_name)
    n_groups = package["cost"].shape[0]
    noise = (
        jnp.zeros((n_groups, package["cost"].shape[1] + 1))
        if key is None
        else jax.random.gumbel(key, (n_groups, package["cost"].shape[1] + 1))
    )

    def step(carry, group):
        totals, seen, left = carry
        groups_left, cost, valid, onehot, coverage, gumbel = group
        seen = jnp.maximum(seen, ((coverage * valid[:, None]) > 0).any(0))
        inputs, state, affordable = group_features(
            package["weight"], totals, seen, left, budget, groups_left, cost, valid, onehot, coverage, h
        )
        mask = jnp.concatenate([jnp.ones(1), affordable])
        logits = jnp.where(mask > 0, group_logits(params, inputs, state) + jnp.log(jnp.maximum(mask, 1e-6)), -1e9)
        probs = jax.nn.softmax((logits + gumbel * (key is not None)) / tau)
        if key is not None:  # straight through: the hard sample forward, the softmax's gradient backward
            probs = jax.nn.one_hot(jnp.argmax(logits + gumbel), probs.shape[0]) + probs - jax.lax.stop_gradient(probs)
        totals = totals + probs[1:] @ coverage
        left = left - probs[1:] @ cost.astype(jnp.float32)
        return (totals, seen, left), None

    groups = (package["groups_after"], package["cost"], package["valid"], package["onehot"], package["coverage"], noise)
    zeros = jnp.zeros_like(package["weight"])
    (totals, _, left), _ = jax.lax.scan(step, (zeros, zeros, jnp.asarray(budget, jnp.float32)), groups)
    return (h(totals) * package["weight"]).sum(), jnp.maximum(-left, 0.0)


def relaxed_loss(params, arrays, budgets, opt, tau, penalty, h_name="min", key=None):
    """-mean(soft value / OPT) + penalty * mean(overspend / budget) over pairs with OPT > 0.

    ``arrays``: package arrays stacked over pairs ``[N, ...]``; ``budgets``, ``opt``: ``[N]``;
    ``key``: straight-through Gumbel samples (one key per pair) instead of the expected store."""
    rollout = functools.partial(soft_rollout, h_name=h_name)
    if key is None:
        value, overspend = jax.vmap(rollout, in_axes=(None, 0, 0, None))(params, arrays, budgets, tau)
    else:
        keys = jax.random.split(key, budgets.shape[0])
        value, overspend = jax.vmap(lambda p, a, b, t, k: rollout(p, a, b, t, key=k), in_axes=(None, 0, 0, None, 0))(
            params, arrays, budgets, tau, keys
        )
    scored = opt > 0
    ratio = jnp.where(scored, value / jnp.where(scored, opt, 1.0), 0.0)
    n = jnp.maximum(scored.sum(), 1)
    return -(ratio.sum() / n) + penalty * (overspend / jnp.maximum(budgets, 1.0)).mean()


def hard_values(params, arrays, budgets, h_name="min"):
    """Exact-arithmetic-free check used during training: float32 value of the hard rollout per pair."""
    h = h_function(h_name)

    def one(package, budget):
        chosen = hard_rollout(params, package, budget, h_name=h_name)
        take = chosen >= 0
        rows = jnp.take_along_axis(package["coverage"], jnp.maximum(chosen, 0)[:, None, None], 1)[:, 0]
        totals = (rows * take[:, None]).sum(0)
        return (h(totals) * package["weight"]).sum()

    return jax.vmap(one)(arrays, budgets)


def _optimizer(config: WriterTrainConfig):
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, config.learning_rate, max(config.steps // 10, 1), config.steps, config.learning_rate * 0.05
    )
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


@functools.partial(jax.jit, static_argnames=("config", "h_name"))
def _update(params, opt_state, key, pool, tau, *, config, h_name):
    arrays, budgets, opt = pool
    key_pick, key_sample = jax.random.split(key)
    picks = jax.random.choice(key_pick, budgets.shape[0], (config.batch,), replace=False)

    def take(leaf):
        return leaf[picks]

    batch = (
        params,
        jax.tree_util.tree_map(take, arrays),
        budgets[picks],
        opt[picks],
        tau,
        config.overspend_penalty,
        h_name,
    )
    if config.relaxation == "expected":
        loss_fn = relaxed_loss
    elif config.relaxation == "straight_through":
        loss_fn = functools.partial(relaxed_loss, key=key_sample)
    else:  # both: the expected store's smooth signal and the sampled stores' unbiased one

        def loss_fn(*args):
            return 0.5 * (relaxed_loss(*args) + relaxed_loss(*args, key=key_sample))

    loss, grads = jax.value_and_grad(loss_fn)(*batch)
    updates, opt_state = _optimizer(config).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


_hard_values = jax.jit(hard_values, static_argnames=("h_name",))


def pairs(arrays: dict, budgets, opt) -> tuple[dict, jax.Array, jax.Array]:
    """Stack per-package arrays ``[P, ...]`` over budgets ``[nB]`` and ``opt: [P, nB]`` into
    ``[P * nB]`` (package, budget) pairs."""
    n_budgets = len(budgets)

    def repeat(leaf):
        return jnp.repeat(leaf, n_budgets, axis=0)

    budgets = jnp.tile(jnp.asarray(budgets, jnp.float32), arrays["cost"].shape[0])
    return jax.tree_util.tree_map(repeat, arrays), budgets, jnp.asarray(opt, jnp.float32).reshape(-1)


def _initial(config: WriterTrainConfig, n_kinds: int) -> dict:
    from wpbjax.packages.learned import load_writer
    from wpbjax.packages.model import KINDS

    params, info = load_writer(config.init)
    if info["kinds"] != list(KINDS)[:n_kinds] or params["candidate"]["b_in"].shape != (config.hidden,):
        raise ArgumentError(
            f"{arg('init')} {config.init}: built with other kinds or {arg('hidden')} "
            f"{params['candidate']['b_in'].shape[0]}"
        )
    return params


def train(
    config: WriterTrainConfig,
    train_pool,
    check_pool,
    n_kinds: int,
    h_name: str = "min",
    log: Callable[[str], None] | None = None,
) -> tuple[dict, list[dict]]:
    """Train on ``train_pool`` and keep the weights with the best mean hard ratio on ``check_pool``
    (each ``(arrays, budgets, opt)`` from :func:`pairs`). Returns ``(params, history)``."""
    started = time.perf_counter()
    tx = _optimizer(config)
    key = jax.random.key(config.seed)
    key, init_key = jax.random.split(key)
    params = init_writer(init_key, n_kinds, config.hidden) if not config.init else _initial(config, n_kinds)
    opt_state = tx.init(params)
    check_arrays, check_budgets, check_opt = check_pool
    scored = np.asarray(check_opt) > 0

    def check(weights) -> float:
        values = np.asarray(_hard_values(weights, check_arrays, check_budgets, h_name=h_name))
        return float(np.mean(values[scored] / np.asarray(check_opt)[scored]))

    best = (check(params), params, 0)
    history, recent = [], []
    static = dataclasses.replace(config, seed=0)
    for step in range(1, config.steps + 1):
        tau = config.tau_start * (config.tau_end / config.tau_start) ** ((step - 1) / max(config.steps - 1, 1))
        key, step_key = jax.random.split(key)
        params, opt_state, loss = _update(
            params, opt_state, step_key, train_pool, jnp.float32(tau), config=static, h_name=h_name
        )
        recent.append(loss)
        if step % config.eval_every == 0 or step == config.steps:
            hard = check(params)
            if hard > best[0]:
                best = (hard, params, step)
            row = {
                "step": step,
                "tau": round(tau, 4),
                "soft_ratio": round(-float(np.mean(jax.device_get(recent))), 5),
                "hard_ratio": round(hard, 5),
                "seconds": round(time.perf_counter() - started, 2),
            }
            recent = []
            history.append(row)
            if log is not None:
                log(
                    f"packages train: step {step}/{config.steps} tau {tau:.3f} soft ratio {row['soft_ratio']:.4f} "
                    f"hard ratio on held-back packages {hard:.4f} ({row['seconds']:.0f} s)"
                )
    history.append({"kept_step": best[2], "kept_hard_ratio": round(best[0], 5)})
    return jax.device_get(best[1]), history


def training_sets(config: WriterTrainConfig, distribution: str, shape: tuple[int, int]):
    """``(train, check)`` PackageSets of a distribution at one (normal, update) shape, from disjoint
    seed blocks far from the evaluation seeds (0.. in the paper's sweep)."""
    from wpbjax.packages.distributions import generate

    base = TRAIN_SEED_BASE + 100_000 * config.seed
    counts = {"normal_count": shape[0], "update_count": shape[1]}
    train_set = generate(distribution, range(base, base + config.packages), **counts)
    check_set = generate(distribution, range(base + 50_000, base + 50_000 + config.check_packages), **counts)
    return train_set, check_set


def labelled_pairs(pset, config: WriterTrainConfig, n_kinds: int):
    """The (package, budget) pairs of a set with their certified OPT (the training label)."""
    from wpbjax.packages.opt import solve

    optimum = solve(pset.batch, config.budgets, config.h).value
    return pairs(package_arrays(pset.batch, n_kinds), config.budgets, optimum)


def join_pools(pools):
    """Concatenate ``(arrays, budgets, opt)`` pools of different shapes, padding groups, candidates
    and units with zeros (an all-zero group is empty: never chosen, no value)."""
    arrays = [pool[0] for pool in pools]
    dims = {name: np.max([a[name].shape for a in arrays], axis=0) for name in arrays[0]}

    def pad(leaf, shape):
        return jnp.pad(leaf, [(0, int(want) - have) for want, have in zip(shape, leaf.shape)])

    joined = {name: jnp.concatenate([pad(a[name], dims[name]) for a in arrays]) for name in arrays[0]}
    return joined, jnp.concatenate([pool[1] for pool in pools]), jnp.concatenate([pool[2] for pool in pools])


def train_writer(config: WriterTrainConfig = WriterTrainConfig(), log: Callable[[str], None] | None = None) -> dict:
    """Generate and label the training packages, train, keep the best weights on the check packages.
    Returns ``{"params", "kinds", "history", "seconds"}`` (``save_writer`` takes the rest as meta)."""
    from wpbjax.packages.model import KINDS

    started = time.perf_counter()
    train_pools, check_pools = [], []
    for distribution in config.distributions:
        for shape in config.shapes:
            train_set, check_set = training_sets(config, distribution, shape)
            train_pools.append(labelled_pairs(train_set, config, len(KINDS)))
            check_pools.append(labelled_pairs(check_set, config, len(KINDS)))
    if log is not None:
        log(
            f"packages train: {config.packages} + {config.check_packages} packages per distribution "
            f"({', '.join(config.distributions)}) and shape ({', '.join(f'{n}x{u}' for n, u in config.shapes)}) "
            f"labelled with OPT at budgets "
            f"{','.join(map(str, config.budgets))} ({time.perf_counter() - started:.0f} s)"
        )
    params, history = train(config, join_pools(train_pools), join_pools(check_pools), len(KINDS), config.h, log)
    return {"params": params, "kinds": KINDS, "history": history, "seconds": round(time.perf_counter() - started, 1)}
