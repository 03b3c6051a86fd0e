"""Tiers (docs/tiers.md): each tier rule, promote/demote, a consolidation pass, a crash and the cost counts,
on hand-built episodes with hand-computed bytes."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import make_episode

from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes
from wpbjax.runtime import devices as devices_lib
from wpbjax.tiers import (
    actions as tier_actions,
    engine as tier_engine,
    policies as tier_policies,
    rows as tier_rows,
    store as tier_store,
)

# '{"api": "a", "version": 1}' is 26 characters, the view {"mode": "hand"} 16: 26 + 16 + 32 + 16 = 90 bytes in
# the checkpoint; a journal record drops the 16 index bytes: 74.
COST, RECORD = 90, 74


def versions(api="a", n=3):
    return [{"api": api, "version": v} for v in range(1, n + 1)]


def encoded_of(observations, probes=None):
    episode = make_episode(observations)
    if probes is not None:
        episode["labels"]["probes"] = probes
    return encode_episodes([episode])


def episode_arrays(encoded):
    batch = encoded.host_batch("unprivileged")
    return dataclasses.replace(
        batch, **{name: jnp.asarray(value[0]) for name, value in vars(batch).items() if value is not None}
    )


def apply_all(episode, plan, checkpoint_budget, journal_budget):
    """Apply ``plan`` ({pos: tier_action kwargs}) step by step; the final TierStore."""
    store = tier_store.tier_empty(episode.valid.shape[0])
    for pos in range(episode.valid.shape[0]):
        action = tier_actions.tier_action(**plan.get(pos, {}))
        store = tier_store.tier_apply(store, action, episode, pos, checkpoint_budget, journal_budget)
    return store


def test_costs_are_the_byte_model_less_the_index():
    encoded = encoded_of(versions())
    assert encoded.track_costs("unprivileged")[0].tolist() == [COST] * 3
    assert int(tier_store.journal_cost(jnp.int32(COST))) == RECORD


@pytest.mark.parametrize("journal_budget, accepted", [(RECORD, True), (RECORD - 1, False)])
def test_journal_append_under_its_own_budget(journal_budget, accepted):
    episode = episode_arrays(encoded_of(versions(n=1)))
    store = apply_all(episode, {0: dict(journal=True)}, checkpoint_budget=0, journal_budget=journal_budget)
    assert bool(store.in_journal[0]) == accepted
    assert int(store.journal_used) == (RECORD if accepted else 0)
    assert int(store.checkpoint_used) == 0 and int(store.rejected) == (0 if accepted else 1)


@pytest.mark.parametrize("checkpoint_budget, accepted", [(COST, True), (COST - 1, False)])
def test_checkpoint_add_under_its_own_budget(checkpoint_budget, accepted):
    episode = episode_arrays(encoded_of(versions(n=1)))
    store = apply_all(episode, {0: dict(add=0)}, checkpoint_budget=checkpoint_budget, journal_budget=0)
    assert bool(store.in_checkpoint[0]) == accepted and int(store.checkpoint_used) == (COST if accepted else 0)
    assert int(store.bytes_written) == (COST if accepted else 0)


def test_promote_keeps_the_journal_record():
    episode = episode_arrays(encoded_of(versions(n=2)))
    # step 0 is journaled only; step 1 adds slot 0 to the checkpoint: a promote (its record is journaled)
    store = apply_all(episode, {0: dict(journal=True), 1: dict(add=0)}, COST, RECORD)
    assert store.in_checkpoint.tolist() == [True, False] and store.in_journal.tolist() == [True, False]
    assert int(store.promotes) == 1 and int(store.checkpoint_adds) == 1
    assert int(store.checkpoint_used) == COST and int(store.journal_used) == RECORD
    assert int(store.checkpoint_added_at[0]) == 1


@pytest.mark.parametrize("journal_budget, accepted", [(RECORD, True), (RECORD - 1, False)])
def test_demote_moves_to_the_journal_and_never_deletes(journal_budget, accepted):
    episode = episode_arrays(encoded_of(versions(n=2)))
    store = apply_all(episode, {0: dict(add=0), 1: dict(demote=0)}, COST, journal_budget)
    # accepted: the item leaves the checkpoint (90 bytes freed) and its record enters the journal (74 bytes);
    # refused (the journal cannot take it): nothing changes, the item stays in the checkpoint
    assert bool(store.in_checkpoint[0]) != accepted and bool(store.in_journal[0]) == accepted
    assert int(store.checkpoint_used) == (0 if accepted else COST)
    assert int(store.journal_used) == (RECORD if accepted else 0)
    assert int(store.demotes) == int(accepted) and int(store.checkpoint_left_at[0]) == (1 if accepted else 2**31 - 1)


def test_demote_of_a_journaled_item_costs_no_journal_bytes():
    episode = episode_arrays(encoded_of(versions(n=2)))
    store = apply_all(episode, {0: dict(journal=True, add=0), 1: dict(demote=0)}, COST, RECORD)
    assert int(store.journal_used) == RECORD and int(store.journal_adds) == 1 and int(store.demotes) == 1


def test_delete_drops_only_the_checkpoint_item():
    episode = episode_arrays(encoded_of(versions(n=2)))
    store = apply_all(episode, {0: dict(journal=True, add=0), 1: dict(delete=0)}, COST, RECORD)
    assert not bool(store.in_checkpoint[0]) and bool(store.in_journal[0])
    assert int(store.checkpoint_used) == 0 and int(store.deletes) == 1


@pytest.mark.parametrize("checkpoint_budget, promoted", [(2 * COST, True), (2 * COST - 1, True), (COST - 1, False)])
def test_consolidation_demotes_old_versions_and_promotes_the_newest(checkpoint_budget, promoted):
    encoded = encoded_of(versions(n=3))
    episode = episode_arrays(encoded)
    # versions 1 and 2 of fact "a" in the checkpoint (the budget permitting), all three journaled
    plan = {0: dict(journal=True, add=0), 1: dict(journal=True, add=1), 2: dict(journal=True)}
    store = apply_all(episode, plan, checkpoint_budget, 3 * RECORD)
    before = store.in_checkpoint.tolist()
    fact = episode.fact_key[:, 0]
    assert fact.tolist() == [0, 0, 0]  # one fact, three versions
    after = tier_store.consolidate(store, episode, fact, 2, checkpoint_budget, 3 * RECORD)
    # step 2 is the fact's newest version: every checkpoint item before it is demoted (already journaled: no
    # journal bytes), then step 2 is promoted if its 90 bytes fit the freed checkpoint
    assert after.in_checkpoint.tolist() == [False, False, promoted]
    assert int(after.checkpoint_used) == (COST if promoted else 0)
    assert int(after.journal_used) == 3 * RECORD
    assert int(after.demotes) - int(store.demotes) == sum(before)
    assert int(after.promotes) - int(store.promotes) == int(promoted)
    assert int(after.scanned) == sum(before)  # one dedupe lookup per checkpoint item scanned


def test_consolidation_promotes_newest_first_while_they_fit():
    encoded = encoded_of(versions("a", 1) + versions("b", 1) + versions("c", 1))
    episode = episode_arrays(encoded)
    store = apply_all(episode, {pos: dict(journal=True) for pos in range(3)}, 0, 3 * RECORD)
    after = tier_store.consolidate(store, episode, episode.fact_key[:, 0], 2, 2 * COST, 3 * RECORD)
    # three facts, each newest in the journal; room for two: the two newest (steps 2, 1)
    assert after.in_checkpoint.tolist() == [False, True, True] and int(after.checkpoint_used) == 2 * COST


def four_facts():
    return [{"api": api, "version": 1} for api in "abcd"]


def run_policy(name, observations, checkpoint_budget, journal_budget, probes=None, **kw):
    encoded = encoded_of(observations, probes)
    policy = tier_policies.TIER_POLICIES[name]
    result = tier_engine.simulate_tiers(
        policy, encoded.host_batch("unprivileged"), [checkpoint_budget], [journal_budget], **kw
    )
    rows = tier_rows.tier_rows(result, encoded, "unprivileged", [checkpoint_budget], [journal_budget])
    return result, {key: np.asarray(value)[0, 0] for key, value in rows.items()}


def test_a_crash_loses_the_deferred_buffer_and_not_the_journaled_one():
    # window 2 (sessions of steps 0-1, 2-3), crash_rate 1: a crash before each of steps 1, 2, 3.
    # deferred_checkpoint: before step 1 the buffer holds step 0 (lost); step 1 is flushed at its session end;
    # before step 2 the buffer is empty; before step 3 it holds step 2 (lost); step 3 is flushed: 2 lost.
    kw = dict(params={"window": 2, "consolidate_every": 0}, crash_rate=1.0)
    result, row = run_policy("deferred_checkpoint", four_facts(), 4 * COST, 0, **kw)
    assert row["crashes"] == 3 and row["lost_at_crash"] == 2
    assert np.asarray(result.store.in_checkpoint)[0, 0].tolist() == [False, True, False, True]
    # deferred_journaled journals each step at once: nothing is lost, and the pass at each session end
    # promotes the journaled steps the crash kept out of the checkpoint
    kw["params"] = {"window": 2, "consolidate_every": 2}
    result, row = run_policy("deferred_journaled", four_facts(), 4 * COST, 4 * RECORD, **kw)
    assert row["crashes"] == 3 and row["lost_at_crash"] == 0
    assert np.asarray(result.store.in_checkpoint)[0, 0].tolist() == [True] * 4


def test_a_labelled_crash_loses_the_buffer_at_its_step():
    # deferred_checkpoint, window 2 (sessions of steps 0-1, 2-3), no drawn crashes; the episode's label puts
    # one crash before step 3 (t = 3: make_episode numbers steps from 0): the buffer then holds step 2 (lost);
    # step 3 is flushed at its session end. Steps 0 and 1 are flushed normally.
    episode = make_episode(four_facts())
    episode["labels"]["crashes"] = [3]
    encoded = encode_episodes([episode])
    assert encoded.crash_pos.tolist() == [[3]]
    policy = tier_policies.TIER_POLICIES["deferred_checkpoint"]
    result = tier_engine.simulate_tiers(
        policy,
        encoded.host_batch("unprivileged"),
        [4 * COST],
        [0],
        params={"window": 2, "consolidate_every": 0},
        crash_pos=encoded.crash_pos,
    )
    assert int(result.crashes[0, 0]) == 1 and int(result.lost_at_crash[0, 0]) == 1
    assert np.asarray(result.store.in_checkpoint)[0, 0].tolist() == [True, True, False, True]
    # the table path reads the label from the episodes
    table = tier_rows.tier_table(
        encoded,
        ["deferred_checkpoint", "deferred_journaled"],
        [4 * COST],
        [4 * RECORD],
        params={"window": 2, "consolidate_every": 2},
    )
    assert table.crashes.tolist() == [1, 1] and table.lost_at_crash.tolist() == [1, 0]


@pytest.mark.parametrize(
    "crashes, message",
    [
        ([0], r"labels.crashes\[0\]: expected the t of a step after the first; got 0"),
        ([2, 9], r"labels.crashes\[1\]: expected the t of a step after the first; got 9"),
        ("3", r"labels.crashes: expected a list of step t's; got '3'"),
    ],
)
def test_crash_labels_are_checked(crashes, message):
    from wpbjax.episodes.validate import EpisodeFormatError

    episode = make_episode(four_facts())
    episode["labels"]["crashes"] = crashes
    with pytest.raises(EpisodeFormatError, match=r"^hand: episode 0: " + message):
        encode_episodes([episode], source="hand")


def test_the_compute_budget_drops_the_adds_it_cannot_afford():
    # journal_and_checkpoint adds each of the four new facts to the checkpoint (3 calls each). A bucket of 3
    # calls gaining 1.5 a step: step 0 holds 3 (add: 0 left), step 1 1.5 (dropped), step 2 3 (add), step 3 1.5
    # (dropped): two adds, two throttled. The journal is not metered: all four are journaled.
    kw = dict(params={"consolidate_every": 0}, calls_per_step=1.5)
    result, row = run_policy("journal_and_checkpoint", four_facts(), 4 * COST, 4 * RECORD, **kw)
    assert np.asarray(result.store.in_checkpoint)[0, 0].tolist() == [True, False, True, False]
    assert row["throttled_adds"] == 2 and row["checkpoint_adds"] == 2 and row["journal_adds"] == 4
    # a bucket of 6 saves up: 6 at step 0 (add: 3), 4.5 at step 1 (add: 1.5), 3 at step 2 (add: 0), 1.5 at 3
    result, row = run_policy("journal_and_checkpoint", four_facts(), 4 * COST, 4 * RECORD, call_burst=6, **kw)
    assert np.asarray(result.store.in_checkpoint)[0, 0].tolist() == [True, True, True, False]
    assert row["throttled_adds"] == 1
    # no budget (the default): nothing throttled
    _, row = run_policy("journal_and_checkpoint", four_facts(), 4 * COST, 4 * RECORD, params={"consolidate_every": 0})
    assert row["throttled_adds"] == 0 and row["checkpoint_adds"] == 4


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(calls_per_step=-1.0), "calls_per_step: expected a number of calls >= 0; got -1.0"),
        (dict(calls_per_step=1.0, call_burst=2.0), "call_burst: expected at least one add's 3 calls; got 2.0"),
    ],
)
def test_compute_budget_arguments_are_checked(kw, message):
    from wpbjax.common.argument_errors import ArgumentError

    with pytest.raises(ArgumentError, match=message):
        run_policy("journal_and_checkpoint", four_facts(), 4 * COST, 4 * RECORD, **kw)


def test_no_crash_at_rate_zero():
    _, row = run_policy("deferred_checkpoint", four_facts(), 4 * COST, 0, params={"window": 2})
    assert row["crashes"] == 0 and row["lost_at_crash"] == 0 and row["checkpoint_bytes"] == 4 * COST


PROBES = [{"t": 2, "fact": "a", "kind": "current"}, {"t": 2, "fact": "a", "kind": "as_of", "as_of": 0}]


def test_costs_history_and_reads_of_journal_and_checkpoint():
    _, row = run_policy(
        "journal_and_checkpoint", versions(), 2 * COST, 3 * RECORD, PROBES, params={"consolidate_every": 0}
    )
    # each step passes triage (a new version): journaled (3 x 74), checkpointed (3 x 90), the older version
    # demoted (already journaled): bytes written 222 + 270 = 492; the checkpoint ends with version 3 only
    assert (row["journal_adds"], row["checkpoint_adds"], row["demotes"], row["deletes"]) == (3, 3, 2, 0)
    assert row["bytes_written"] == 492 and row["checkpoint_bytes"] == COST and row["journal_bytes"] == 3 * RECORD
    # 3 extraction + 3 embedding calls + 3 dedupe lookups (no pass): 492 + 3 * (256 + 64 + 16) = 1500
    assert (row["extraction_calls"], row["embedding_calls"], row["dedupe_lookups"]) == (3, 3, 3)
    assert row["total_cost"] == 1500 and row["amplification"] == pytest.approx(1500 / 492)
    # every (fact, version) pair is in a tier; the checkpoint alone holds 1 of 3
    assert row["history_coverage"] == 1 and row["checkpoint_history_coverage"] == pytest.approx(1 / 3)
    # the current probe reads version 3 from the checkpoint; the as-of probe (state after step 0: version 1)
    # falls back to the journal, scanning the 3 records present at step 2 (222 bytes): both right
    assert row["read_accuracy"] == 1 and row["journal_fallbacks"] == 1 and row["journal_scan_bytes"] == 3 * RECORD


def test_checkpoint_only_loses_history_and_the_as_of_answer():
    _, row = run_policy("checkpoint_only", versions(), 2 * COST, 0, PROBES)
    # the older version is deleted each time: 3 adds, 2 deletes, no journal
    assert (row["journal_adds"], row["checkpoint_adds"], row["deletes"]) == (0, 3, 2)
    assert row["history_coverage"] == pytest.approx(1 / 3)
    # the as-of probe finds no item of "a" usable at step 0 (only step 2's is present): it abstains, wrongly
    assert row["read_accuracy"] == 0.5 and row["journal_scan_bytes"] == 0


def test_triage_drops_an_identical_reobservation():
    _, row = run_policy("journal_only", [{"api": "a", "version": 1}] * 3, 0, 3 * RECORD)
    assert row["journal_adds"] == 1 and row["journal_bytes"] == RECORD and row["amplification"] == 1


def test_tier_budgets_are_checked():
    from wpbjax.common.argument_errors import ArgumentError

    batch = encoded_of(versions()).host_batch("unprivileged")
    with pytest.raises(ArgumentError, match="journal_budgets"):
        tier_engine.simulate_tiers(tier_policies.JOURNAL_ONLY, batch, [0, 10], [5])
    with pytest.raises(ArgumentError, match="budgets"):
        tier_engine.simulate_tiers(tier_policies.JOURNAL_ONLY, batch, [-1], [5])


# --- The sweep axis: wj.sweep(tiers=wj.Tiers(journal_budgets=...)) and `wpbjax sweep --journal-budgets` -----
SMALL = dict(modes=["default"], n_episodes=2, steps=30)


def test_sweep_with_journal_budgets_crosses_the_two_axes():
    import wpbjax as wj

    table = wj.sweep(
        wj.Generate(**SMALL),
        grid=wj.Grid([1024, 2048], policies=["journal_and_checkpoint", "checkpoint_only"], tracks=["unprivileged"]),
        reads=wj.Reads(probes="generate"),
        tiers=wj.Tiers(journal_budgets=[0, 4096]),
    )
    # 2 policies x 2 episodes x (2 checkpoint budgets x 2 journal budgets)
    assert len(table) == 16
    pairs = set(zip(table.budget_bytes, table.journal_budget_bytes))
    assert pairs == {(1024, 0), (1024, 4096), (2048, 0), (2048, 4096)}
    # no journal budget: nothing is journaled; checkpoint_only never journals
    assert (table[table.journal_budget_bytes == 0].journal_bytes == 0).all()
    assert (table[table.policy == "checkpoint_only"].journal_adds == 0).all()
    assert (table.checkpoint_bytes <= table.budget_bytes).all() and (
        table.journal_bytes <= table.journal_budget_bytes
    ).all()
    assert table.read_accuracy.notna().all()


def test_a_sweep_without_tiers_has_no_tier_columns():
    import wpbjax as wj

    table = wj.sweep(wj.Generate(**SMALL), grid=wj.Grid([1024], policies=["fifo_store_all"], tracks=["unprivileged"]))
    assert "journal_budget_bytes" not in table.columns and "lost_at_crash" not in table.columns


def test_cli_journal_budgets(tmp_path, capsys):
    import pandas as pd

    from wpbjax.cli import main

    out = tmp_path / "tiers.csv"
    argv = [
        "sweep",
        "--modes",
        "default",
        "--n-episodes",
        "1",
        "--steps",
        "30",
        "--budgets",
        "2048",
        "--journal-budgets",
        "0,4096",
        "--tracks",
        "unprivileged",
        "--probes",
        "generate",
        "--crash-rate",
        "0.1",
        "--policies",
        "deferred_checkpoint,deferred_journaled",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    table = pd.read_csv(out)
    assert len(table) == 4 and set(table.journal_budget_bytes) == {0, 4096}
    assert {"lost_at_crash", "amplification", "history_coverage", "read_accuracy"} <= set(table.columns)
    # the same crash draws for both policies (seed 0): the journaled one loses nothing where its journal has room
    journaled = table[(table.policy == "deferred_journaled") & (table.journal_budget_bytes == 4096)]
    assert (journaled.lost_at_crash == 0).all() and (table.crashes > 0).all()
    bad = argv[:-5] + ["--policies", "fifo_store_all", "--out", str(tmp_path / "x.csv"), "--quiet"]
    assert main(bad) == 2
    assert "--policies" in capsys.readouterr().err
    # a compute budget: 1 call a step affords an add every third step at most, so adds are throttled
    assert main([*argv[:-3], "--calls-per-step", "1", "--out", str(out), "--quiet"]) == 0
    metered = pd.read_csv(out)
    assert (metered.throttled_adds > 0).any() and (metered.checkpoint_adds <= table.checkpoint_adds).all()
    # tier-only flags on a one-tier sweep are refused, not ignored
    one_tier = [*argv[:7], "--out", str(tmp_path / "y.csv"), "--quiet"]
    for flags in (["--crash-rate", "0.1"], ["--calls-per-step", "2"], ["--call-burst", "6"]):
        assert main([*one_tier, *flags]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{flags[0]}: only tiered runs take it (give --journal-budgets)" in err
    assert not (tmp_path / "y.csv").exists()


def test_cli_tier_params(tmp_path, capsys):
    import pandas as pd

    from wpbjax.cli import main

    base = [
        "sweep",
        "--modes",
        "default",
        "--n-episodes",
        "1",
        "--steps",
        "20",
        "--budgets",
        "4096",
        "--journal-budgets",
        "0",
        "--tracks",
        "unprivileged",
        "--probes",
        "none",
        "--crash-rate",
        "1",
        "--quiet",
    ]
    # window=1: every step is flushed at once, so nothing is ever buffered at a crash; journal_only has no window
    out = tmp_path / "w.csv"
    assert (
        main(base + ["--policies", "deferred_checkpoint,journal_only", "--param", "window=1", "--out", str(out)]) == 0
    )
    table = pd.read_csv(out)
    assert (table.lost_at_crash == 0).all() and (table.crashes == 19).all()  # a crash before each step 1..19
    assert (table.n_probes == 0).all() and table.read_accuracy.isna().all()  # --probes none: blank reads
    assert main(base + ["--policies", "journal_only", "--param", "window=1", "--out", str(tmp_path / "x.csv")]) == 2
    assert "--param" in capsys.readouterr().err


def test_quick_and_full_builds_give_the_same_runs():
    # A call below QUICK_COMPILE_BELOW run-steps takes the build with XLA's backend optimisation off; told that
    # its program will run that much work, the same call takes the full build. Every leaf equal, with drawn
    # crashes and a compute budget that throttles, for the policy with consolidation passes and the one with
    # a deferred buffer.
    batch = encode_episodes(generate_episodes(DriftConfig(mode="burst_drift", seed=3, steps=60), 2)).host_batch(
        "unprivileged"
    )
    kw = dict(crash_rate=0.1, calls_per_step=0.5, call_burst=6)
    for policy in (tier_policies.JOURNAL_AND_CHECKPOINT, tier_policies.DEFERRED_CHECKPOINT):
        quick = tier_engine.simulate_tiers(policy, batch, [600, 3000], [0, 2000], **kw)
        full = tier_engine.simulate_tiers(
            policy, batch, [600, 3000], [0, 2000], work=devices_lib.QUICK_COMPILE_BELOW, **kw
        )
        assert np.asarray(quick.crashes).sum() > 0 and np.asarray(quick.throttled).sum() > 0
        assert tier_engine._simulate_quick._cache_size() and tier_engine._simulate_full._cache_size()  # both ran
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_array_equal(np.asarray(a), np.asarray(b)), quick, full)
