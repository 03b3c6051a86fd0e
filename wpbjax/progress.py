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
                f"  {rate:,.0f} runs/s  ETA {left:5.1f} s  {label:<32}")
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.started
            self.stream.write(f"\r  {self.done:,} runs in {elapsed:.1f} s ({self.done / max(elapsed, 1e-9):,.0f} runs/s)"
                              + " " * 40 + "\n")
            self.stream.flush()
