"""A generated set too large to hold is made and swept a block at a time (wpbjax/sweeps/blocks.py):
the table is byte-identical to an in-memory sweep's, and a killed sweep resumes without making the
finished blocks again."""

import filecmp
import os

import pytest

import wpbjax as wj
from wpbjax.episodes.source import EpisodeSource
from wpbjax.files import resume as resume_lib
from wpbjax.files.results_io import ResultsWriter, partial_path
from wpbjax.sweeps import blocks

# 4 modes x 5 episodes of 40 steps (7 KB encoded) against a 24 KB cap: blocks of a few episodes
SWEEP = dict(
    episodes=wj.Generate(n_episodes=5, steps=40),
    grid=wj.Grid([1024, 4096], policies="priority_greedy,merge_aggressive,random"),  # levels, merges, random keys
    run=wj.Run(memory_cap=24_000),
)


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory):
    path = tmp_path_factory.mktemp("memory") / "rows.csv"
    mp = pytest.MonkeyPatch()
    mp.setattr(blocks, "streams", lambda source, memory_cap: False)
    try:
        wj.sweep(**SWEEP, out=path)
    finally:
        mp.undo()
    return path


def _made_blocks(monkeypatch) -> list:
    """Record the (start, stop) of every block generated from here on."""
    made, load_range = [], EpisodeSource.load_range
    monkeypatch.setattr(
        EpisodeSource,
        "load_range",
        lambda self, start, stop: made.append((start, stop)) or load_range(self, start, stop),
    )
    return made


def test_a_streamed_sweep_writes_the_rows_of_one_in_memory(tmp_path, in_memory, monkeypatch):
    made = _made_blocks(monkeypatch)
    done = wj.sweep(**SWEEP, out=tmp_path / "rows.csv")
    assert len(made) > 3 and made[1:] == sorted(made[1:])  # a probe of episode 0, then the blocks in order
    assert [stop for _, stop in made[1:-1]] == [start for start, _ in made[2:]]
    assert filecmp.cmp(done.path, in_memory, shallow=False)


def test_a_killed_streamed_sweep_resumes_without_making_finished_blocks(tmp_path, in_memory, monkeypatch):
    out = tmp_path / "rows.csv"
    written, write = [], ResultsWriter._write_text

    def dies_after_four_chunks(self, texts):  # each chunk's bytes, whichever way they were made
        if len(written) == 4:
            raise KeyboardInterrupt  # as a kill would, between chunks
        written.append(len(texts))
        write(self, texts)

    monkeypatch.setattr(ResultsWriter, "_write_text", dies_after_four_chunks)
    # killed outright (SIGKILL): nothing cleans up, neither the temporary table nor its resume manifest
    monkeypatch.setattr(ResultsWriter, "abort", lambda self: None)
    monkeypatch.setattr(resume_lib, "finish", lambda target: None)
    with pytest.raises(KeyboardInterrupt):
        wj.sweep(**SWEEP, out=out)
    assert not out.exists() and os.path.exists(partial_path(out))
    monkeypatch.undo()
    made = _made_blocks(monkeypatch)
    wj.sweep(**SWEEP, out=out, resume=True)
    assert made[1][0] > 0  # the blocks of the chunks on disk were not made again
    assert filecmp.cmp(out, in_memory, shallow=False)
