"""A one-line progress report on stderr: runs done, runs per second, time left."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total_runs: int, enabled: bool = True, stream=None):
        self.total, self.done, self.enabled = total_runs, 0, enabled
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()

    def advance(self, runs: int, label: str = "") -> None:
        self.done += runs
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        line = (f"\r  {self.done:>{len(str(self.total))},}/{self.total:,} runs ({100 * self.done / self.total:5.1f}%)"
                f"  {_rate(rate)} runs/s  ETA {left:5.1f} s  {label:<32}")
        self.stream.write(line)
        self.stream.flush()

    def steps(self, steps_done: int, n_steps: int) -> None:
        """Within a long call (episodes of many steps): how far its rollouts are."""
        if self.enabled:
            self.stream.write(f"\r  {self.done:,}/{self.total:,} runs; rollouts at step {steps_done:,} of {n_steps:,}"
                              + " " * 30)
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.started
            self.stream.write(f"\r  {self.done:,} runs in {elapsed:.1f} s ({_rate(self.done / max(elapsed, 1e-9))} runs/s)"
                              + " " * 40 + "\n")
            self.stream.flush()


def _rate(per_second: float) -> str:
    """1,234 / 56 / 0.083: whole numbers from 10 up, two significant digits below (a sweep of a few
    long episodes runs well under one run per second)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"
