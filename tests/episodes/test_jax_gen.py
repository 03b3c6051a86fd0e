"""The JAX generator: its arrays equal the encoder's output on its decoded JSON (bytes, ids, labels,
and so every sweep row), it is statistically the published process, and knobs never recompile."""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import numpy as np
import pandas as pd
import pytest
from helpers import assert_same_encoding

from wpbjax.cli import main
from wpbjax.episodes.encode import concat_encoded, encode_episodes, json_len
from wpbjax.episodes.generators import decode, jax_gen
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.episodes.jsonl import load_jsonl
from wpbjax.sweeps import run_sweep
from wpbjax.testing import count_compiles, max_traces

BUDGETS = (700, 2048, 8192)  # tight, medium and roomy for ~60-step episodes


def _both(config: jax_gen.JaxGenConfig, n_episodes: int, start: int = 0):
    """(arrays → EncodedEpisodes, decode → JSON dicts → encoder) for the same generated batch."""
    generated = jax_gen.generate_arrays(config, n_episodes, start)
    episodes = decode.decode_episodes(config, generated, start)
    return jax_gen.to_encoded(config, generated, start), encode_episodes(episodes), episodes


def _same_shapes(*encodings):
    """``encodings`` with field slots and api tables padded to the largest among them (absent
    fields, no apis), so one compiled program serves them all."""
    n_fields = max(e.arrays.field_value.shape[-1] for e in encodings)
    n_apis = max(e.arrays.api_ids.shape[1] for e in encodings)
    out = []
    for encoded in encodings:
        arrays = encoded.arrays
        extra = n_fields - arrays.field_value.shape[-1]
        padded = {
            name: np.pad(getattr(arrays, name), ((0, 0), (0, 0), (0, extra)))
            for name in ("field_value", "field_present", "field_frag_len")
        }
        padded["api_ids"] = np.pad(arrays.api_ids, ((0, 0), (0, n_apis - arrays.api_ids.shape[1])), constant_values=-1)
        out.append(dataclasses.replace(encoded, arrays=dataclasses.replace(arrays, **padded)))
    shapes = {tuple(leaf.shape for leaf in jax.tree_util.tree_leaves(e.arrays)) for e in out}
    assert len(shapes) == 1
    return out


@pytest.mark.parametrize("mode", jax_gen.JAX_MODES)
def test_arrays_equal_encoding_of_decoded_json(mode):
    for seed in (0, 1, 2):
        direct, via_json, _ = _both(jax_gen.JaxGenConfig(mode=mode, seed=seed, steps=150), 6, start=3 * seed)
        assert_same_encoding(direct, via_json)


def test_byte_model_at_extremes():
    """Versions past 9 and 99 (digit classes), lists popped to empty, 2-digit initial params and
    endpoints: one endpoint drifting almost every step, and 12 endpoints with up to 12 params."""
    seen = {"empty list": False, "3-digit version": False, "2-digit initial param": False}
    for config in (
        jax_gen.JaxGenConfig(api_pool=1, drift_prob=0.95, steps=260, max_params=12, seed=5),
        jax_gen.JaxGenConfig(api_pool=2, drift_prob=0.9, steps=120, max_params=2, seed=5),
        jax_gen.JaxGenConfig(mode="rollback", api_pool=1, drift_prob=0.9, steps=240, seed=6),
        jax_gen.JaxGenConfig(mode="decoy", api_pool=12, drift_prob=0.5, decoy_prob=0.9, steps=200, seed=7),
        jax_gen.JaxGenConfig(
            mode="docs_migration", api_pool=12, max_params=12, docs_prob=0.4, guide_prob=0.4, drift_prob=0.6, seed=8
        ),
    ):
        direct, via_json, episodes = _both(config, 4)
        assert_same_encoding(direct, via_json)
        observations = [step["observation"] for episode in episodes for step in episode["steps"]]
        seen["empty list"] |= any(obs.get("params") == [] for obs in observations)
        seen["3-digit version"] |= any(
            isinstance(obs.get("version"), int) and obs["version"] >= 100 for obs in observations
        )
        seen["2-digit initial param"] |= any("p0_11" in obs.get("params", ()) for obs in observations)
    assert all(seen.values()), seen


def test_sweep_rows_equal_for_every_mode():
    """One sweep over all eight modes (three seeds each): arrays vs their decoded JSON, row for row."""
    direct_parts, json_parts = [], []
    for mode in jax_gen.JAX_MODES:
        for seed in (10, 11, 12):
            direct, via_json, _ = _both(jax_gen.JaxGenConfig(mode=mode, seed=seed, steps=60), 2)
            direct_parts.append(direct)
            json_parts.append(via_json)
    direct, via_json = concat_encoded(direct_parts), concat_encoded(json_parts)
    direct, via_json = _same_shapes(direct, via_json)  # each policy compiles once
    direct_rows = run_sweep(direct, budgets=BUDGETS)
    json_rows = run_sweep(via_json, budgets=BUDGETS)
    pd.testing.assert_frame_equal(direct_rows, json_rows)
    assert (direct_rows["policy"] == "merge_aggressive").any() and direct_rows["f1"].gt(0).any()
    # merges happen in every mode (each repeats apis), so the equality above covers MERGE rows too
    merges = direct_rows[direct_rows["policy"] == "merge_aggressive"].groupby("mode")["merge_actions"].sum()
    assert sorted(merges.index) == sorted(jax_gen.JAX_MODES) and (merges > 0).all(), merges


def test_docs_are_1_to_5_kb_and_guides_name_apis():
    config = jax_gen.JaxGenConfig(mode="docs_migration", docs_prob=0.5, guide_prob=0.2, seed=3)
    episodes = decode.decode_episodes(config, jax_gen.generate_arrays(config, 3))
    docs = [s["observation"] for e in episodes for s in e["steps"] if "content" in s["observation"]]
    guides = [s["observation"] for e in episodes for s in e["steps"] if "old_api" in s["observation"]]
    assert docs and guides
    assert all(1000 <= json_len(doc) <= 5200 for doc in docs)
    assert all(guide["new_api"] != guide["old_api"] and guide["old_api"].startswith("api.v") for guide in guides)


@pytest.mark.parametrize("mode", MODES)
def test_statistically_the_published_process(mode):
    """300 episodes x 200 steps: drift fraction within 0.01 and mean utility within 2% of the
    published generator's."""
    reference = encode_episodes(generate_episodes(DriftConfig(mode=mode, seed=0), 300))
    ours = jax_gen.to_encoded(
        jax_gen.JaxGenConfig(mode=mode, seed=0),
        jax_gen.generate_arrays(jax_gen.JaxGenConfig(mode=mode, seed=0), 300, with_latent=False),
    )
    drift_ref, drift_jax = reference.arrays.critical.mean(), ours.arrays.critical.mean()
    utility_ref, utility_jax = reference.utility64.mean(), ours.utility64.mean()
    assert abs(drift_ref - drift_jax) <= 0.01, (drift_ref, drift_jax)
    assert abs(utility_jax / utility_ref - 1) <= 0.02, (utility_ref, utility_jax)
    # costs come from the same param process: mean write cost within 2% too
    assert abs(ours.write_cost.mean() / reference.write_cost.mean() - 1) <= 0.02


def test_knobs_are_traced_and_chunks_do_not_matter():
    config = jax_gen.JaxGenConfig(mode="burst_redundancy", steps=50)
    changed = jax_gen.JaxGenConfig(
        mode="burst_redundancy",
        steps=50,
        drift_prob=0.3,
        burst_len=3,
        burst_interval=9,
        burst_drift_prob=0.9,
        redundancy_prob=0.1,
        seed=4,
    )
    # Knobs are traced: one compile of each part, in the quick build (a small batch)
    with max_traces(jax_gen, "_latent_quick"), max_traces(jax_gen, "_post_quick"), count_compiles() as compiles:
        first = jax_gen.generate_arrays(config, 8, with_latent=False)
        other = jax_gen.generate_arrays(changed, 8, with_latent=False)
    assert sorted(name.split("_quick")[0] for name in compiles.elements() if "_quick" in name) == [
        "jit(_latent",
        "jit(_post",
    ]
    assert other["critical"].sum() > first["critical"].sum()
    tail = jax_gen.generate_arrays(config, 3, start=5, with_latent=False)
    for name in ("write_cost", "api_id", "field_value", "critical", "code"):
        assert np.array_equal(np.asarray(first[name])[5:], np.asarray(tail[name])), name


@pytest.mark.parametrize("mode", jax_gen.JAX_MODES)
def test_the_quick_and_full_builds_give_the_same_arrays(mode):
    """A small batch takes the quick build (see encoded_arrays); the full build, which large batches take, must
    give the same arrays."""
    config = jax_gen.JaxGenConfig(mode=mode, steps=60)
    shape, knobs, seeds = config.shape, config.knobs(), jax_gen.episode_seeds(config.seed, 0, 6)
    meta_len = jax.numpy.asarray(jax_gen.metadata_lengths(mode))
    full = jax_gen._post_jit(shape, knobs, meta_len, jax_gen._latent_jit(shape, knobs, seeds, True), True)
    quick = jax_gen.generate_arrays(config, 6)
    leaves = jax.tree_util.tree_leaves_with_path(full)
    assert jax.tree_util.tree_structure(full) == jax.tree_util.tree_structure(quick) and len(leaves) > 10
    for (path, leaf), other in zip(leaves, jax.tree_util.tree_leaves(quick), strict=True):
        np.testing.assert_array_equal(np.asarray(leaf), np.asarray(other), err_msg=jax.tree_util.keystr(path))


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="mode must be one of"):
        jax_gen.JaxGenConfig(mode="chaos")
    with pytest.raises(ValueError, match="docs_prob \\+ guide_prob"):
        jax_gen.JaxGenConfig(mode="docs_migration", docs_prob=0.7, guide_prob=0.5)


def test_cli_generate_jax_and_sweep_arrays_match_sweep_of_file(tmp_path, capsys):
    episodes = tmp_path / "rollback.jsonl"
    args = ["--mode", "rollback", "--seed", "4", "--steps", "80"]
    assert main(["generate", "--engine", "jax", *args, "--episodes", "3", "--out", str(episodes), "--quiet"]) == 0
    loaded = load_jsonl(episodes)
    assert len(loaded) == 3 and loaded[0]["labels"]["mode"] == "rollback"
    assert json.loads(episodes.read_text().splitlines()[0])["steps"][0]["t"] == 0
    common = ["--budgets", "1024,4096", "--policies", "fifo_store_all,merge_aggressive,priority_greedy", "--quiet"]
    from_file, from_arrays = tmp_path / "file.csv", tmp_path / "arrays.csv"
    assert main(["sweep", "--episodes", str(episodes), "--out", str(from_file), *common]) == 0
    assert (
        main(
            [
                "sweep",
                "--engine",
                "jax",
                "--modes",
                "rollback",
                "--seed",
                "4",
                "--steps",
                "80",
                "--n-episodes",
                "3",
                "--out",
                str(from_arrays),
                *common,
            ]
        )
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_csv(from_file), pd.read_csv(from_arrays))

    assert main(["generate", "--mode", "decoy", "--out", os.fspath(tmp_path / "x.jsonl")]) == 2
    assert "need the jax engine" in capsys.readouterr().err
    assert main(["sweep", "--engine", "jax", "--modes", "chaos", "--out", os.fspath(tmp_path / "y.csv")]) == 2
    assert "unknown mode 'chaos'" in capsys.readouterr().err


def test_long_episodes_end_to_end(tmp_path):
    """10,000 steps: arrays equal the encoding of the decoded JSON (costs, labels); 1,000 steps:
    the CLI sweeps generated arrays with the exact oracle."""
    for mode in ("default", "docs_migration"):
        config = jax_gen.JaxGenConfig(mode=mode, steps=10_000, seed=9)
        direct, via_json, _ = _both(config, 1)
        assert np.array_equal(direct.write_cost, via_json.write_cost)
        assert np.array_equal(direct.utility64, via_json.utility64)
        assert np.array_equal(direct.arrays.critical, via_json.arrays.critical)
        assert direct.arrays.step_t[0, -1] == 9_999
    out = tmp_path / "long.csv"
    assert (
        main(
            [
                "sweep",
                "--engine",
                "jax",
                "--modes",
                "rollback",
                "--steps",
                "1000",
                "--n-episodes",
                "2",
                "--budgets",
                "4096,65536",
                "--policies",
                "fifo_store_all,priority_greedy",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    rows = pd.read_csv(out)
    assert len(rows) == 2 * 2 * 3  # episodes x budgets x (fifo on 2 tracks + priority_greedy)
    assert (rows["oracle_utility"] >= rows["policy_utility"] - 1e-9).all()
    assert rows.loc[rows["policy"] == "priority_greedy", "f1"].gt(0).all()  # fifo fills up before any drift at 4 KB
