"""Episode blocks: a generated episode set too large to hold, made and swept a block at a time.

A sweep holds its encoded episodes in host memory (about ENCODED_BYTES_PER_STEP bytes per
episode-step). Generated episodes need not all exist at once: episode i of a generator config
draws from its own seed, so any range of them can be generated alone. A generated set whose
encoding would pass half the memory cap is therefore made in blocks of whole chunks (a quarter of the
cap each), each swept
and written before the next is generated. Every block's plan chunks as one plan over the whole set
would (the same chunk size, devices and random keys), so the table is byte-identical to an
in-memory sweep's, and a killed sweep resumes chunk by chunk without regenerating finished blocks.
"""

from __future__ import annotations

from collections.abc import Iterator

from wpbjax.episodes.batch import ENCODED_BYTES_PER_STEP, pad_to_buckets
from wpbjax.episodes.source import EpisodeSource
from wpbjax.sweeps.plan import Chunk, SweepPlan, make_plan


def streams(source: EpisodeSource | None, memory_cap: int) -> bool:
    """Whether ``source``'s episodes are made a block at a time: a generated set (python engine)
    whose encoding would pass half of ``memory_cap``."""
    if source is None or source.files or source.engine != "python":
        return False
    steps = max(config.steps for config in source.configs)
    return source.n_total * steps * ENCODED_BYTES_PER_STEP > memory_cap // 2


class Blocks:
    """The block layout of a streamed sweep: episodes ``0 .. n_total-1`` of ``source`` in blocks of
    ``block_episodes`` (whole chunks of ``plan.layout.chunk_episodes``). ``plan``: the plan of the first
    episode alone, chunked for the whole set (its budgets, line-up, devices and run count are every
    block's)."""

    def __init__(self, source: EpisodeSource, plan_arguments: dict, memory_cap: int):
        self.source, self.arguments, self.n_total = source, plan_arguments, source.n_total
        probe, set_index = source.load_range(0, 1)
        self.plan = make_plan(
            probe, set_index=set_index, memory_cap=memory_cap, n_episodes_total=self.n_total, **plan_arguments
        )
        chunk = self.plan.layout.chunk_episodes
        chunk_bytes = chunk * probe.n_steps * ENCODED_BYTES_PER_STEP
        # a quarter of the cap: while a block is made its parts and the joined set both exist
        self.block_episodes = chunk * max(1, memory_cap // 4 // chunk_bytes)
        self.memory_cap = memory_cap

    def plans(self, chunks_done: int = 0) -> Iterator[tuple[SweepPlan, list[Chunk]]]:
        """(a block's plan, its chunks still to run) for each block with chunks left after the first
        ``chunks_done`` of the sweep (blocks before them are not generated)."""
        chunk = self.plan.layout.chunk_episodes
        for start in range(0, self.n_total, self.block_episodes):
            stop = min(start + self.block_episodes, self.n_total)
            n_chunks = -(-(stop - start) // chunk) * self._slices
            if chunks_done >= n_chunks:
                chunks_done -= n_chunks
                continue
            encoded, set_index = self.source.load_range(start, stop)
            plan = make_plan(
                pad_to_buckets(encoded),
                set_index=set_index,
                memory_cap=self.memory_cap,
                first_episode=start,
                n_episodes_total=self.n_total,
                **{**self.arguments, "devices": self.plan.layout.devices},
            )
            yield plan, plan.chunks()[chunks_done:]
            chunks_done = 0

    @property
    def _slices(self) -> int:
        """Units of rows per chunk of episodes (a large param grid runs in slices of grid points)."""
        plan = self.plan
        n_points = max([plan.points(name) for name in plan.policy_names] + [1])
        return -(-n_points // plan.layout.points_per_slice)
