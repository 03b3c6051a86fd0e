"""Sweeps of any size: memory-capped chunks, several devices, streamed CSV/Parquet, progress."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import DriftConfig, generate_episodes
from wpbjax.sweeps import run_sweep

KEY = ["mode", "budget_bytes", "episode_id", "track", "policy"]
SWEEP = ["sweep", "--n-episodes", "5", "--steps", "60", "--budgets", "700,2048,9000", "--seed", "3", "--quiet"]


def sorted_rows(table):
    return table.sort_values(KEY, kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def one_chunk(tmp_path_factory):
    out = tmp_path_factory.mktemp("one") / "results.csv"
    assert main(SWEEP + ["--out", str(out)]) == 0
    return pd.read_csv(out)


def test_small_memory_cap_gives_the_same_rows_in_chunks(one_chunk, tmp_path):
    from wpbjax.sweeps import chunk_size

    encoded = encode_episodes(generate_episodes(DriftConfig(steps=60), 20))
    assert chunk_size(encoded, 3, 100_000, 1) == 2  # so the 20 episodes run as 10 chunks
    out = tmp_path / "chunks.csv"
    assert main(SWEEP + ["--memory-cap", "100K", "--out", str(out)]) == 0
    chunked = pd.read_csv(out)
    assert len(chunked) == len(one_chunk) == 20 * 3 * 12
    pd.testing.assert_frame_equal(sorted_rows(chunked), sorted_rows(one_chunk))


def test_a_failed_write_stops_the_sweep_with_its_error(tmp_path, monkeypatch, capsys):
    """Chunks are written on a thread while the next is computed; a write that fails (the second
    of ten here) stops the sweep at the next chunk with the writer's error."""
    from wpbjax import sweeps

    calls = []
    original = sweeps.ResultsWriter._write_text

    def write(self, texts):  # each chunk's bytes, whichever way they were made
        calls.append(len(texts))
        if len(calls) == 2:
            raise OSError(f"{self.path}: No space left on device")
        original(self, texts)

    monkeypatch.setattr(sweeps.ResultsWriter, "_write_text", write)
    out = tmp_path / "full.csv"
    assert main(SWEEP + ["--memory-cap", "100K", "--out", str(out)]) == 2
    assert f"wpbjax sweep: error: {out}: No space left on device" in capsys.readouterr().err
    assert len(calls) == 2  # the third chunk was computed but never handed to the writer


def test_chunks_are_padded_to_one_shape_and_compile_once(monkeypatch):
    from wpbjax.core import rollout
    from wpbjax.sweeps import run as sweep_run
    from wpbjax.testing import max_traces

    episodes = generate_episodes(DriftConfig(steps=40, seed=9), 7)
    encoded = encode_episodes(episodes)
    # ~20 KB per episode and run pair at this size: a 50 KB cap gives chunks of 2 (one per device on two,
    # two on one), so the 7 episodes run as 2 + 2 + 2 + 1, the last padded to 2
    ran = []
    original = sweep_run.run_chunk
    monkeypatch.setattr(
        sweep_run,
        "run_chunk",
        lambda plan, chunk, *args, **kwargs: (
            ran.append((chunk.stop - chunk.start, chunk.size)) or original(plan, chunk, *args, **kwargs)
        ),
    )
    with max_traces(rollout, "_batch_counts_quick"), max_traces(rollout, "_batch_counts"):
        table = run_sweep(
            encoded, budgets=[500, 5000], policies="fifo_store_all", tracks=["unprivileged"], memory_cap=50_000
        )
    assert len(ran) >= 3 and len({size for _, size in ran}) == 1, ran  # several chunks, one padded shape
    assert any(n_episodes < size for n_episodes, size in ran), ran  # the last one padded
    assert len(table) == 7 * 2 and sorted(set(table.episode_id)) == list(range(7))


def test_parquet_output_matches_csv(one_chunk, tmp_path):
    out = tmp_path / "results.parquet"
    assert main(SWEEP + ["--out", str(out)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), one_chunk, check_dtype=False)


def test_four_devices_give_identical_rows(one_chunk, tmp_path):
    out = tmp_path / "four.csv"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", WPBJAX_CACHE_DIR="")
    done = subprocess.run(
        [sys.executable, "-m", "wpbjax.cli", *SWEEP[:-1], "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "on 4 x cpu" in done.stderr
    pd.testing.assert_frame_equal(pd.read_csv(out), one_chunk)


def test_progress_and_leaderboard_unless_quiet(tmp_path, capsys):
    assert main(SWEEP[:-1] + ["--policies", "last_kb", "--out", str(tmp_path / "r.csv")]) == 0
    captured = capsys.readouterr()
    assert "runs/s" in captured.err and "120/120" in captured.err  # tqdm: done/total runs, rate, time left
    assert "Mean F1 by policy and budget" in captured.out and "last_kb" in captured.out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--memory-cap", "lots"], "--memory-cap: expected a size like 2G"),
        (["--out", "results.txt"], "expected a .csv or .parquet file name"),
    ],
)
def test_sweep_argument_errors(argv, message, capsys, tmp_path):
    monkey_out = ["--out", str(tmp_path / "r.csv")] if "--out" not in argv else []
    try:
        code = main(SWEEP + monkey_out + argv)
    except SystemExit as exit_info:
        code = exit_info.code
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("seed", [4, 2**31 + 4])  # straight to arrays; through JSON (a seed past int32)
def test_parallel_generation_gives_the_same_rows_as_serial(seed, monkeypatch):
    """Above the threshold, episodes are generated and encoded in worker processes and joined."""
    from wpbjax.episodes.generators import parallel as parallel_lib
    from wpbjax.episodes.generators.published_gen import MODES

    monkeypatch.setattr(parallel_lib, "PARALLEL_THRESHOLD", {"arrays": 0, "json": 0})
    joined = []
    monkeypatch.setattr(
        parallel_lib, "concat_encoded", lambda parts: joined.append(len(parts)) or concat_encoded(parts)
    )
    configs = [DriftConfig(mode=mode, steps=25, seed=seed) for mode in MODES]
    n_episodes = 40
    parallel = parallel_lib.generate_encoded(configs, n_episodes, workers=2)
    assert joined == [8]  # 160 episodes in jobs of 32 per mode: 2 jobs per mode
    serial = encode_episodes([e for config in configs for e in generate_episodes(config, n_episodes)])
    kwargs = dict(budgets=[400, 3000], policies="published", set_index=np.repeat(np.arange(4), n_episodes))
    pd.testing.assert_frame_equal(run_sweep(parallel, **kwargs), run_sweep(serial, **kwargs))


def test_tracks_share_a_call_unless_that_costs_chunks():
    """The plan stacks a policy's tracks into one call where the chunks stay as few, and runs a call
    per track where stacking would need more of them (a call's memory grows with its runs); the rows
    are the same either way."""
    import dataclasses

    from wpbjax.sweeps import make_plan, plan as plan_lib, run_chunk

    encoded = concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode="default"), 6))])
    budgets, seen = [1024, 4096], set()
    per_episode = encoded.n_steps * (2 * plan_lib.BYTES_PER_RUN_STEP + plan_lib.BYTES_PER_EPISODE_STEP)
    for episodes_per_cap in (1, 2, 3, 4, 6, 12, 24):
        plan = make_plan(encoded, budgets=budgets, memory_cap=episodes_per_cap * per_episode)
        units = [
            plan_lib._layout(
                encoded,
                2 * tracks,
                1,
                episodes_per_cap * per_episode // plan.layout.first_chunk_workers,
                len(plan.layout.call_devices),
                6,
            )[0]
            for tracks in (2, 1)  # the published line-up: most policies run on both tracks
        ]
        assert plan.layout.stack_tracks == (units[0] <= units[1])
        assert plan.n_chunks == min(units)
        seen.add(plan.layout.stack_tracks)
        if not plan.layout.stack_tracks:
            one_call = dataclasses.replace(plan, layout=dataclasses.replace(plan.layout, stack_tracks=True))
            for chunk in plan.chunks()[:2]:
                pd.testing.assert_frame_equal(run_chunk(plan, chunk), run_chunk(one_call, chunk))
    assert seen == {True, False}
