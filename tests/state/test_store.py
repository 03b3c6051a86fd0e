"""Each store rule of SEMANTICS §3, checked on hand-built episodes with hand-computed bytes."""

import dataclasses

import numpy as np
import pytest
from helpers import SCRIPTED, SCRIPTED_ONCE, make_episode, run_one, script

from wpbjax.state.actions import MERGE, SKIP, WRITE

# {"api": "a"} is 12 characters, the unprivileged view {"mode": "hand"} 16: 12 + 16 + 32 + 16 = 76.
COST_A = 76


def run_script(observations, plan, budget, **episode_kw):
    episode = make_episode(observations, **episode_kw)
    params = script(len(observations), plan)
    encoded, stores, counts = run_one(SCRIPTED, [episode], budget, params=params)
    store = {name: value[0] for name, value in vars(stores).items() if value is not None}
    store["present"], store["is_delta"] = store["held"] != 0, store["held"] > 0
    store["item_costs"] = np.where(store["is_delta"], store["held"], encoded.track_costs("unprivileged")[0])
    return store, {name: value[0] for name, value in vars(counts).items() if value is not None}


def test_write_cost_is_the_byte_model():
    from wpbjax.episodes.encode import encode_episodes

    encoded = encode_episodes([make_episode([{"api": "a"}, "é"])])
    # "é" serialises as "\u00e9" (8 characters with quotes): 8 + 16 + 48 = 72.
    assert encoded.track_costs("unprivileged")[0].tolist() == [COST_A, 72]


def test_write_accepted_iff_it_fits():
    obs = [{"api": "a"}] * 3
    plan = {0: (WRITE, -1, []), 1: (WRITE, -1, []), 2: (WRITE, -1, [])}
    store, counts = run_script(obs, plan, budget=2 * COST_A)
    assert store["present"].tolist() == [True, True, False]
    assert store["used"] == 2 * COST_A
    assert counts["write_actions"] == 3  # emitted, the rejected one included
    store, _ = run_script(obs, plan, budget=2 * COST_A - 1)
    assert store["present"].tolist() == [True, False, False]


def test_expire_credits_exact_cost_and_rejects_absent_or_current():
    obs = [{"api": "a"}] * 3
    # Step 1 expires slot 0 (accepted) and slot 2 (absent: rejected) then writes into the freed room.
    plan = {0: (WRITE, -1, []), 1: (WRITE, -1, [0, 2]), 2: (WRITE, -1, [2])}
    store, counts = run_script(obs, plan, budget=COST_A)
    assert store["present"].tolist() == [False, True, False]
    assert store["used"] == COST_A
    assert counts["expire_actions"] == 3


def test_rejected_main_action_keeps_the_expires():
    obs = [{"api": "a"}, {"api": "a", "x": "long value that does not fit"}]
    plan = {0: (WRITE, -1, []), 1: (WRITE, -1, [0])}
    store, _ = run_script(obs, plan, budget=COST_A)
    assert store["present"].tolist() == [False, False]
    assert store["used"] == 0


def test_merge_rules_and_cost():
    base = {"api": "a", "x": 1, "y": [1]}
    same = {"api": "a", "x": 1.0, "y": [True], "z": None}  # equal under Python equality: empty delta
    changed = {"api": "a", "x": 2}  # delta {"x": 2}: '{"x": 2}' = 8, +16 = 24
    other_api = {"api": "b", "x": 3}
    obs = [base, same, changed, other_api, changed]
    plan = {0: (WRITE, -1, []), 1: (MERGE, 0, []), 2: (MERGE, 0, []), 3: (MERGE, 0, []), 4: (MERGE, 2, [])}
    store, counts = run_script(obs, plan, budget=10_000)
    # empty delta rejected; changed accepted; api mismatch rejected; a delta is no merge target
    assert store["present"].tolist() == [True, False, True, False, False]
    assert store["is_delta"].tolist() == [False, False, True, False, False]
    assert store["parent"][2] == 0
    assert store["item_costs"][2] == 24
    assert counts["merge_actions"] == 4 and counts["write_actions"] == 1
    # the same merge does not fit one byte short
    base_cost = store["item_costs"][0]
    store, _ = run_script(obs, {0: (WRITE, -1, []), 2: (MERGE, 0, [])}, budget=int(base_cost) + 23)
    assert store["present"].tolist() == [True, False, False, False, False]


def test_merge_needs_dicts_with_equal_non_null_api():
    obs = [
        {"api": None, "x": 1},
        {"api": None, "x": 2},
        {"x": 1},
        {"x": 2},
        ["api"],
        {"api": 1, "x": 1},
        {"api": 1.0, "x": 2},
    ]
    plan = {
        0: (WRITE, -1, []),
        1: (MERGE, 0, []),
        2: (WRITE, -1, []),
        3: (MERGE, 2, []),
        4: (WRITE, -1, []),
        5: (WRITE, -1, []),
        6: (MERGE, 5, []),
    }
    store, _ = run_script(obs, plan, budget=100_000)
    # null and absent apis never merge; 1 == 1.0 does (Python equality)
    assert store["present"].tolist() == [True, False, True, False, True, True, True]
    assert store["is_delta"][6]


def test_orphan_and_non_string_deltas_keep_bytes_but_do_not_count():
    obs = [{"api": "a", "x": 1}, {"api": "a", "x": 2}, {"api": 7, "x": 1}, {"api": 7.0, "x": 2}, {"api": "z"}]
    plan = {0: (WRITE, -1, []), 1: (MERGE, 0, []), 2: (WRITE, -1, []), 3: (MERGE, 2, []), 4: (SKIP, -1, [0])}
    store, counts = run_script(obs, plan, budget=100_000, critical=[1, 3])
    assert store["present"].tolist() == [False, True, True, True, False]
    retained = np.unpackbits(counts["retained"], count=5).astype(bool).tolist()
    # slot 1 is an orphan (its parent expired); slot 3's apis are numbers, not strings
    assert retained == [False, False, True, False, False]
    assert counts["n_hit"] == 0
    assert counts["bytes_used"] == store["item_costs"][[1, 2, 3]].sum()


def test_fifo_stores_expire_only_the_oldest_item():
    """A policy declaring "fifo" (it only evicts the oldest item) gets a store that rejects any
    other EXPIRE and keeps `oldest` exact with a forward chain."""
    import dataclasses

    fifo = dataclasses.replace(SCRIPTED, name="scripted_fifo", emits={"write", "expire"}, layout={"fifo"})
    obs = [{"api": "a"}] * 5
    plan = {0: (WRITE, -1, []), 1: (WRITE, -1, []), 2: (WRITE, -1, [1]), 3: (WRITE, -1, [0]), 4: (SKIP, -1, [1])}
    _, stores, counts = run_one(fifo, [make_episode(obs)], budget=10_000, params=script(5, plan))
    # slot 1 is not the oldest at step 2: rejected; slot 0 then 1 are, in turn
    assert stores.present[0].tolist() == [False, False, True, True, False]
    assert int(stores.oldest[0]) == 2 and int(stores.used[0]) == 2 * COST_A
    assert int(counts.expire_actions[0]) == 3


def test_oldest_only_stores_match_fifo_stores():
    """ "oldest_only" leaves expired slots in `held` during the rollout, and its one EXPIRE per action takes
    the item out of `used` and the links at the next step: the final store (settled) is the fifo store's,
    and a MERGE into the item an EXPIRE just removed is still rejected."""
    obs = [{"api": "a", "x": 1}, {"api": "b"}, {"api": "a", "x": 2}, {"api": "b", "y": 1}, {"api": "a", "x": 3}]
    obs += [{"api": "c"}] * 4
    # step 2 expires slot 0 then merges into it (rejected: gone); step 3 merges into slot 1 (present);
    # step 4 expires slot 2 (not the oldest: rejected); step 5 expires slot 1 (the oldest) and writes;
    # steps 6-7 expire 3 then 4 (the store holds only 5) and skip; step 8 expires 5 (the store empties) and
    # writes (the written item is then the oldest and the newest)
    plan = {0: (WRITE, -1, []), 1: (WRITE, -1, []), 2: (MERGE, 0, [0]), 3: (MERGE, 1, []), 4: (WRITE, -1, [2])}
    plan.update({5: (WRITE, -1, [1]), 6: (SKIP, -1, [3]), 7: (SKIP, -1, [4]), 8: (WRITE, -1, [5])})
    rows = {}
    for layout in ("fifo", "oldest_only"):
        policy = dataclasses.replace(
            SCRIPTED_ONCE, name=f"scripted_{layout}", emits={"write", "expire", "merge"}, layout={layout}
        )
        params = script(9, plan, max_expires=1)
        _, stores, counts = run_one(policy, [make_episode(obs)], budget=10_000, params=params)
        rows[layout] = stores, counts
        assert stores.present[0].tolist() == [False] * 8 + [True]
        assert int(stores.oldest[0]) == 8 and int(stores.newest[0]) == 8
        assert int(counts.merge_actions[0]) == 2 and int(counts.expire_actions[0]) == 6
    (fifo, fifo_counts), (lazy, lazy_counts) = rows["fifo"], rows["oldest_only"]
    assert np.array_equal(fifo.held, lazy.held) and int(fifo.used[0]) == int(lazy.used[0])
    assert np.array_equal(fifo.parent, lazy.parent)
    for name in ("retained", "n_present", "bytes_used", "expire_actions", "merge_actions"):
        assert np.array_equal(getattr(fifo_counts, name), getattr(lazy_counts, name)), name


def test_oldest_only_takes_one_expire_per_action():
    policy = dataclasses.replace(
        SCRIPTED_ONCE, name="scripted_two_expires", emits={"write", "expire"}, layout={"oldest_only"}
    )
    obs = [{"api": "a"}] * 3
    with pytest.raises(ValueError, match="one EXPIRE per action, not 2"):
        run_one(policy, [make_episode(obs)], budget=10_000, params=script(3, {2: (WRITE, -1, [0, 1])}, max_expires=2))


def test_settle_clears_the_slots_before_the_oldest_item():
    import jax.numpy as jnp

    from wpbjax.state import store as store_lib

    lazy_layout = frozenset({"write", "expire", "oldest_only"})
    held = jnp.array([-1, 40, -1, 0, -1], jnp.int32)  # slots 0-1 expired, not cleared; 3 never written
    lazy = dataclasses.replace(store_lib.empty(5, lazy_layout), held=held, oldest=jnp.int32(2), newest=jnp.int32(4))
    assert store_lib.settle(lazy, lazy_layout).held.tolist() == [0, 0, -1, 0, -1]
    emptied = dataclasses.replace(lazy, oldest=jnp.int32(-1), newest=jnp.int32(-1))
    assert store_lib.settle(emptied, lazy_layout).held.tolist() == [0, 0, 0, 0, 0]
    assert store_lib.settle(lazy, frozenset({"fifo"})).held.tolist() == held.tolist()  # other layouts: as is


def test_oldest_only_is_instead_of_fifo():
    import pytest

    from wpbjax.state.actions import LAYOUTS, check_names

    with pytest.raises(ValueError, match="oldest_only"):
        check_names({"oldest_only", "fifo"}, LAYOUTS, "layout")
    assert check_names({"oldest_only", "order"}, LAYOUTS, "layout") == {"oldest_only", "order"}  # order's store
