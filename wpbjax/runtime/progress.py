"""Progress of long work (runs done, runs per second, time left) through tqdm's ``auto`` bar: a
widget in Jupyter, a line on stderr in a terminal, nothing when disabled (``--quiet``)."""

from __future__ import annotations


class Progress:
    """``advance(runs, label)`` as runs finish; ``close()`` (or leave a ``with`` block) at the end."""

    def __init__(self, total_runs: int, enabled: bool = True, stream=None):
        from tqdm.auto import tqdm

        self.total, self.done, self.enabled = total_runs, 0, enabled
        self._bar = tqdm(
            total=total_runs,
            disable=not enabled,
            file=stream,
            unit=" runs",
            unit_scale=False,
            dynamic_ncols=True,
            leave=True,
        )

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *error) -> None:
        self.close()

    def advance(self, runs: int, label: str = "") -> None:
        self.done += runs
        if self.enabled:
            if label:
                self._bar.set_postfix_str(label, refresh=False)
            self._bar.update(runs)

    def steps(self, steps_done: int, n_steps: int) -> None:
        """Within a long call (episodes of many steps): how far its rollouts are."""
        if self.enabled:
            self._bar.set_postfix_str(f"rollouts at step {steps_done:,} of {n_steps:,}")

    def close(self) -> None:
        self._bar.close()
