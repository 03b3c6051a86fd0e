"""wpbjax.learn: online features, the soft relaxation's gradients, deterministic training, the
learned_gate policy in a sweep, and the gymnax-style environment. Small sizes throughout."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from wpbjax.core import rollout
from wpbjax.episodes.encode import api_endpoint, encode_episodes
from wpbjax.episodes.facts import named_api
from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes
from wpbjax.learn import features as F
from wpbjax.learn.env import WriteEnv
from wpbjax.learn.gate import init_gate, load_gate, save_gate
from wpbjax.learn.hindsight import continuation_members
from wpbjax.learn.soft import soft_f1_loss, soft_rollout
from wpbjax.learn.train import TrainConfig, train
from wpbjax.policies import make
from wpbjax.sweeps import run_sweep
from wpbjax.testing import max_traces


def _obs(endpoint, version, params, deprecated=False):
    return {
        "api": f"api.v{version}.endpoint_{endpoint}",
        "params": params,
        "deprecated": deprecated,
        "version": version,
    }


HAND_STEPS = [  # (observation, critical)
    (_obs(0, 1, ["a", "b"]), False),
    (_obs(1, 1, ["c"]), False),
    (_obs(0, 1, ["a", "b"]), False),
    (_obs(0, 2, ["a"]), True),  # drift: version 1 -> 2, params changed
    (_obs(1, 3, ["c", "d"], True), True),  # drift seen late: version 1 -> 3, every field changed
    (_obs(2, 2, ["e"]), True),  # first sighting already at v2: a drift too
]


def hand_episode():
    steps = [
        {"t": t, "observation": obs, "metadata": {"mode": "default", "priority": 1.0 if crit else 0.1}}
        for t, (obs, crit) in enumerate(HAND_STEPS)
    ]
    labels = {
        "episode_id": 0,
        "mode": "default",
        "critical_steps": [t for t, (_, c) in enumerate(HAND_STEPS) if c],
        "total_drift_events": 3,
        "utility_by_step": {str(t): 1.0 for t in range(len(HAND_STEPS))},
    }
    return encode_episodes([{"labels": labels, "steps": steps}])


def one(batch):
    return jax.tree_util.tree_map(lambda leaf: leaf[0], batch)


def test_api_endpoint_and_encoded_arrays():
    assert api_endpoint("api.v12.endpoint_3") == ("api.v*.endpoint_3", 12)
    assert api_endpoint("no version here") == ("no version here", 0)
    batch = hand_episode().batch("unprivileged")
    assert batch.endpoint_index[0].tolist() == [0, 1, 0, 0, 1, 2]
    assert batch.version_number[0].tolist() == [1, 1, 1, 2, 3, 2]


def test_features_on_a_hand_built_episode():
    episode = one(hand_episode().batch("privileged"))
    state, budget, rows = F.init_state(episode), 1000, []
    for pos in range(len(HAND_STEPS)):
        # as if every earlier step had been stored: remaining shrinks by their costs
        remaining = budget - int(episode.write_cost[:pos].sum())
        features, state = F.step_features(state, episode, pos, budget, remaining, 1, privileged=True)
        rows.append(dict(zip(F.FEATURE_NAMES, np.asarray(features).tolist())))
    costs = np.asarray(episode.write_cost, np.float64)
    assert [r["api_new"] for r in rows] == [1, 1, 0, 1, 1, 1]
    assert [r["endpoint_new"] for r in rows] == [1, 1, 0, 0, 0, 1]
    assert [r["version_up"] for r in rows] == [0, 0, 0, 1, 1, 1]  # exactly the critical steps
    assert [round(r["version_jump"] * 3) for r in rows] == [0, 0, 0, 1, 2, 1]
    # fields deprecated, params, version: step 3 changes params and version, step 4 all three
    assert rows[2]["fields_changed"] == 0 and rows[3]["fields_changed"] == pytest.approx(2 / 3)
    assert rows[4]["fields_changed"] == 1 and rows[5]["fields_changed"] == 0  # new endpoint: nothing to compare
    for pos, row in enumerate(rows):
        assert row["log_cost"] == pytest.approx(math.log(costs[pos] / 200), rel=1e-5)
        assert row["relative_cost"] == pytest.approx(costs[pos] / costs[: pos + 1].mean() - 1, abs=1e-5)
        assert row["remaining_fraction"] == pytest.approx((1000 - costs[:pos].sum()) / 1000, rel=1e-5)
        assert row["log_budget"] == pytest.approx((math.log2(1000) - 14) / 4, rel=1e-5)
        assert row["priority"] == pytest.approx(1.0 if HAND_STEPS[pos][1] else 0.1, rel=1e-6)
    assert rows[5]["drift_rate"] == pytest.approx(5 * 3 / 6)
    # the unprivileged track hides the priority
    hidden, _ = F.step_features(
        F.init_state(episode), one(hand_episode().batch("unprivileged")), 0, 1000, 1000, 1, privileged=False
    )
    assert float(hidden[F.FEATURE_NAMES.index("priority")]) == 0.0


def test_a_step_without_an_api_that_names_a_newer_version():
    """``names_newer`` on a hand-made docs_migration-like episode: a guide naming the next version of an
    endpoint seen fires; one naming the version already seen, an endpoint the episode never has, prose
    that mentions an api, and a page without any api string do not."""
    assert named_api("api.v3.endpoint_2") == ("api.v*.endpoint_2", 3)
    for value in ("v7.0.0", "see api.v3.endpoint_2", "api.endpoint_2", "endpoint_2/overview", 3, None):
        assert named_api(value) is None, value
    observations = [
        _obs(0, 1, ["a"]),  # endpoint_0 at v1
        {"old_api": "api.v1.endpoint_0", "new_api": "api.v2.endpoint_0", "deadline": "2025-01-01"},  # fires
        {"old_api": "api.v0.endpoint_0", "new_api": "api.v1.endpoint_0", "deadline": "2025-01-01"},  # v1: seen
        {"new_api": "api.v2.endpoint_9", "deadline": "2025-01-01"},  # endpoint_9 is no api of this episode
        {"section": "endpoint_0/overview", "content": "moving to api.v2.endpoint_0 soon", "last_updated": "x"},
        _obs(0, 2, ["a"]),  # the drift the guide announced
        {"new_api": "api.v2.endpoint_0"},  # v2 is now the version seen
    ]
    steps = [{"t": t, "observation": obs, "metadata": {"mode": "docs_migration"}} for t, obs in enumerate(observations)]
    episode = one(encode_episodes([{"labels": {"episode_id": 0}, "steps": steps}]).batch("unprivileged"))
    assert episode.named_endpoint.tolist() == [-1, 0, 0, -1, -1, -1, 0]
    assert episode.named_version.tolist() == [0, 2, 1, 0, 0, 0, 2]
    state, fired = F.init_state(episode), []
    for pos in range(len(observations)):
        features, state = F.step_features(state, episode, pos, 1000, 1000, 1, privileged=False)
        fired.append(float(features[F.FEATURE_NAMES.index("names_newer")]))
    assert fired == [0, 1, 0, 0, 0, 0, 0]


def test_soft_gradient_matches_finite_differences():
    batch = hand_episode().batch("unprivileged")
    weights = init_gate(jax.random.key(1), hidden=4)
    budgets = jnp.asarray([700.0])

    @jax.jit  # check_grads evaluates it many times: compiled once, not op by op
    def loss(w):
        return soft_f1_loss(w, batch, budgets, "unprivileged", 32.0)

    check_grads(loss, (weights,), order=1, modes=["rev"], atol=2e-2, rtol=2e-2, eps=1e-3)
    # and the budget matters: a budget edge in the middle of the episode changes the gradient
    big = jax.jit(jax.grad(lambda w: soft_f1_loss(w, batch, jnp.asarray([1e6]), "unprivileged")))(weights)
    small = jax.jit(jax.grad(loss))(weights)
    assert not np.allclose(big["afford"]["w_out"], small["afford"]["w_out"])


def test_soft_rollout_counts_match_a_gate_that_always_writes():
    """With the write probability saturated at 1 and a huge budget, soft counts are exact counts."""
    batch = hand_episode().batch("unprivileged")
    weights = jax.tree_util.tree_map(jnp.zeros_like, init_gate(jax.random.key(0), 2))
    weights["detect"]["b_out"] = jnp.asarray(50.0)
    weights["afford"]["b_out"] = jnp.asarray(50.0)
    outcome = soft_rollout(weights, one(batch), 1e7, "unprivileged")
    assert float(outcome.written) == pytest.approx(6) and float(outcome.hits) == pytest.approx(3)
    assert float(outcome.used) == pytest.approx(float(batch.write_cost.sum()))
    assert float(outcome.f1) == pytest.approx(2 * 3 / (6 + 3))


def test_continuation_members_by_hand():
    """Steps 3, 4, 5 are the critical ones, costing 147, 151 and 147 bytes. Step t is a member iff it
    is critical and costs at most the last step taken by a cheapest-first fill of room[t] with the
    critical steps at positions >= t."""
    episode = one(hand_episode().batch("unprivileged"))
    assert np.asarray(episode.write_cost).tolist()[3:] == [147, 151, 147]

    def members(room):
        return continuation_members(episode, jnp.asarray(room, jnp.int32)).tolist()

    # room 147 everywhere: t=3 fills [147 | 147, 151] (a 147 is the last taken): member; t=4 fills
    # [147 | 151]: 151 > 147, not; t=5 fills [147]: member
    assert members([147] * 6) == [False, False, False, True, False, True]
    # room 298 = 147 + 151: t=3 takes 147, 147 (the last is 147): member; t=4 takes 147, 151: member
    assert members([298] * 6) == [False, False, False, True, True, True]
    # room per position: t=3 294 (147, 147: member), t=4 151 (147 only: not), t=5 146 (nothing fits: not)
    assert members([0, 0, 0, 294, 151, 146]) == [False, False, False, True, False, False]
    assert members([0] * 6) == [False] * 6
    assert members([10**6] * 6) == [False, False, False, True, True, True]  # never a non-critical step


def tiny_config(**overrides):
    return TrainConfig(
        **{"steps": 4, "batch": 4, "pool_per_mode": 2, "episode_steps": 40, "hidden": 4, "log_every": 2, **overrides}
    )


@pytest.fixture(scope="module")
def tiny_pool():
    from wpbjax.learn.train import training_episodes

    return training_episodes(tiny_config())


def test_training_is_deterministic_given_the_seed(tiny_pool):
    first, history = train(tiny_config(), pool=tiny_pool)
    second, _ = train(tiny_config(), pool=tiny_pool)
    other, _ = train(tiny_config(seed=1), pool=tiny_pool)
    leaves = jax.tree_util.tree_leaves
    assert all(np.array_equal(a, b) for a, b in zip(leaves(first), leaves(second)))
    assert not all(np.array_equal(a, b) for a, b in zip(leaves(first), leaves(other)))
    assert [h["step"] for h in history] == [2, 4] and all(np.isfinite(h["soft_loss"]) for h in history)
    # the build is the config's: this tiny run takes the quick one, the default config the full one
    from wpbjax.learn import train as train_lib

    assert train_lib._update_program(tiny_config()) is train_lib._update_quick
    assert train_lib._update_program(TrainConfig()) is train_lib._update_full


def test_learned_gate_runs_in_a_sweep_and_bad_files_fail_clearly(tmp_path, tiny_pool):
    weights, _ = train(tiny_config(), pool=tiny_pool)
    path = tmp_path / "gate.npz"
    save_gate(str(path), weights, "privileged", {"note": "test"})
    loaded, track, info = load_gate(str(path))
    assert track == "privileged" and info["note"] == "test"
    encoded = encode_episodes(generate_episodes(DriftConfig(mode="burst_drift", steps=60), 3))
    name = f"learned_gate:{path}"
    table = run_sweep(encoded, budgets=[1024, 4096], policies=["priority_threshold", name], tracks=["privileged"])
    assert set(table.policy) == {"priority_threshold", name} and len(table) == 2 * 2 * 3
    assert table.f1.between(0, 1).all()
    assert make(name) is make(name)  # cached: one compile per file
    # the gate's threshold is a traced param: raising it to +inf writes nothing
    counts = rollout.batch_counts(make(name), encoded.batch("privileged"), [4096], params={"threshold": 1e9})
    assert int(np.asarray(counts.n_retained).sum()) == 0
    with max_traces(rollout, "_batch_counts_quick"):  # thresholds are traced: one compile for both
        for afford_threshold in (-1e9, 3.0):
            rollout.batch_counts(
                make(name), encoded.batch("privileged"), [4096], params={"afford_threshold": afford_threshold}
            )
    with pytest.raises(ValueError, match="not found"):
        make(f"learned_gate:{tmp_path / 'missing.npz'}")
    junk = tmp_path / "junk.npz"
    junk.write_text("not a checkpoint")
    with pytest.raises(ValueError, match="malformed"):
        make(f"learned_gate:{junk}")


def test_env_random_policy_rollout_jitted_and_vmapped():
    encoded = encode_episodes(generate_episodes(DriftConfig(mode="default", steps=30), 4))
    env = WriteEnv(encoded.batch("unprivileged"), "unprivileged")
    n_envs, horizon = 8, 32  # a little longer than the episodes: steps after the end are no-ops

    def rollout(key, budget):
        params = env.default_params._replace(budget=budget)
        key_reset, key_steps = jax.random.split(key)
        obs, state = env.reset(key_reset, params)

        def step(carry, key):
            state, total = carry
            key_act, key_step = jax.random.split(key)
            action = jax.random.randint(key_act, (), 0, env.num_actions)
            obs, state, reward, terminated, truncated, info = env.step(key_step, state, action, params)
            return (state, total + reward), (terminated, truncated, obs)

        (state, total), (terminated, truncated, obs) = jax.lax.scan(
            step, (state, 0.0), jax.random.split(key_steps, horizon)
        )
        return state, total, terminated, truncated, obs

    run = jax.jit(jax.vmap(chex.assert_max_traces(rollout, n=1)))  # a new budget must not retrace
    keys = jax.random.split(jax.random.key(0), n_envs)
    budgets = jnp.asarray([1024, 4096] * 4, jnp.int32)
    state, total, terminated, truncated, obs = run(keys, budgets)
    assert obs.shape == (n_envs, horizon, F.N_FEATURES)
    assert terminated.sum(axis=1).tolist() == [1] * n_envs and not truncated.any()
    assert np.asarray(terminated)[:, 29].all()  # the 30th step ends each episode
    # rewards sum to the final store's exact F1; bytes stay within budget
    n_critical = encoded.n_critical[np.asarray(state.episode)]
    f1 = 2 * np.asarray(state.hits) / np.maximum(np.asarray(state.retained) + n_critical, 1)
    np.testing.assert_allclose(np.asarray(total), f1, atol=1e-5)
    assert (np.asarray(state.store.used) <= np.asarray(budgets)).all()
    run(keys, budgets + 1)  # a new budget is a traced value: no retrace


def test_env_always_write_matches_fifo_store_all():
    encoded = encode_episodes(generate_episodes(DriftConfig(mode="burst_drift", steps=40), 2))
    batch = encoded.batch("unprivileged")
    env = WriteEnv(batch, "unprivileged")
    params = env.default_params._replace(budget=jnp.asarray(2048, jnp.int32))

    def always_write(episode_index):
        _, state = env.reset_episode(episode_index, params)

        def step(state, _):
            _, state, *_ = env.step(jax.random.key(0), state, 1, params)
            return state, None

        return jax.lax.scan(step, state, None, length=40)[0]

    counts = rollout.batch_counts(make("fifo_store_all"), batch, [2048])
    for index in range(2):
        state = always_write(jnp.asarray(index))
        assert int(state.retained) == int(counts.n_retained[index, 0])
        assert int(state.store.used) == int(counts.bytes_used[index, 0])


def test_self_critical_loss_has_finite_nonzero_gradients():
    from wpbjax.learn.reinforce import self_critical_loss

    batch = hand_episode().batch("unprivileged")
    weights = init_gate(jax.random.key(3), hidden=4)
    grads, f1 = jax.jit(
        jax.grad(
            lambda w: self_critical_loss(w, batch, jnp.asarray([600]), "unprivileged", jax.random.key(0)), has_aux=True
        )
    )(weights)
    leaves = jax.tree_util.tree_leaves(grads)
    assert all(np.isfinite(leaf).all() for leaf in leaves) and 0.0 <= float(f1) <= 1.0
    # each head's weights get a gradient: the sampled rollout's F1 differs from the greedy one's here
    for head, head_grads in grads.items():
        assert max(float(np.abs(leaf).max()) for leaf in jax.tree_util.tree_leaves(head_grads)) > 0, head


def test_cli_train_writes_a_checkpoint_and_rejects_bad_arguments(tmp_path, capsys):
    from wpbjax.cli import main

    out = tmp_path / "gate.npz"
    assert (
        main(
            [
                "train",
                "--track",
                "unprivileged",
                "--seed",
                "3",
                "--out",
                str(out),
                "--steps",
                "2",
                "--batch",
                "4",
                "--pool-per-mode",
                "2",
                "--calibration-per-mode",
                "2",
                "--hidden",
                "4",
                "--log-every",
                "1",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "wpbjax train: step 1/2" in err and "wrote unprivileged gate" in err
    weights, track, info = load_gate(str(out))
    assert track == "unprivileged" and info["config"]["seed"] == 3 and len(info["history"]) == 2
    assert isinstance(info["afford_threshold"], float)
    assert main(["train", "--seed", "-1", "--out", str(tmp_path / "x.npz")]) == 2
    assert "wpbjax train: error: --seed must be >= 0" in capsys.readouterr().err
