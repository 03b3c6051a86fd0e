"""Checks of command-line arguments that argparse cannot make one at a time: repeated values of a
sweep (warned about and dropped) and episode sets too large to hold (refused before any work)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from wpbjax.episodes.batch import ENCODED_BYTES_PER_STEP
from wpbjax.files.output_size import human_size as _size  # 1,234.5 MiB

# Host bytes per episode-step of episodes as Python dicts (tracemalloc; docs/performance.md). A
# command that holds its whole set (generate; a sweep of episode files or of the jax engine's
# episodes) refuses a set past the machine's memory up front rather than failing on an allocation
# (or the kernel's OOM killer) minutes later; a sweep of the python engine's episodes makes them a
# block at a time (wpbjax.sweeps.blocks).
DICT_BYTES_PER_STEP = 800
PARAM_BYTES = 64  # one endpoint param of the generator's state: a short str and its list slot


def stderr_warning(prog: str) -> Callable[[str], None]:
    """A printer of one warning line for ``prog`` (``wpbjax packages sweep``)."""

    def warn(message: str) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)

    return warn


_stderr_warning = stderr_warning("wpbjax sweep")


def unique_values(values: list, flag: str, warn: Callable[[str], None], key=lambda value: value) -> list:
    """``values`` without repeats (first occurrence kept), with one warning naming the repeats."""
    seen, unique, repeated = set(), [], []
    for value in values:
        if key(value) in seen:
            repeated.append(value)
        else:
            seen.add(key(value))
            unique.append(value)
    if repeated:
        warn(f"{flag} lists {', '.join(map(str, dict.fromkeys(repeated)))} more than once; each runs once")
    return unique


def drop_repeats(args, warn: Callable[[str], None] = _stderr_warning) -> None:
    """Repeated budgets, policies, tracks, modes or episode files (the same file after resolving
    links) would give duplicate rows that count as extra episodes: keep each once, warn once."""
    for flag, name in (
        ("--budgets", "budgets"),
        ("--journal-budgets", "journal_budgets"),
        ("--tracks", "tracks"),
        ("--modes", "modes"),
    ):
        if getattr(args, name, None):
            setattr(args, name, unique_values(list(getattr(args, name)), flag, warn))
    names = [name.strip() for name in args.policies.split(",") if name.strip()]
    args.policies = ",".join(unique_values(names, "--policies", warn))
    if args.episodes:
        args.episodes = unique_values(list(args.episodes), "--episodes", warn, key=os.path.realpath)


def physical_memory() -> int | None:
    """Bytes of RAM on this machine, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def refuse_past_memory(
    what: str, needed: int, memory: int | None = None, advice: str = "use fewer episodes or steps per run"
) -> None:
    """ValueError when ``needed`` bytes exceed this machine's memory; ``what`` names the arguments,
    ``advice`` what to change."""
    memory = physical_memory() if memory is None else memory
    if memory is not None and needed > memory:
        raise ValueError(
            f"{what} need about {_size(needed)} of memory, more than this machine's {_size(memory)}; {advice}"
        )


def check_generator_size(args, memory: int | None = None) -> None:
    """Refuse generator knobs whose state or episodes could not be held in memory: the published
    generator keeps ``--max-params`` params for each of ``--api-pool`` endpoints, and a step's
    observation lists its endpoint's params."""
    refuse_past_memory(
        f"--api-pool {args.api_pool:,} x --max-params {args.max_params:,}",
        args.api_pool * args.max_params * PARAM_BYTES,
        memory,
    )
    if args.command == "generate":
        refuse_past_memory(
            f"--episodes {args.episodes:,} x --steps {args.steps:,}",
            args.episodes * args.steps * (DICT_BYTES_PER_STEP + 8 * args.max_params),
            memory,
        )
    elif not args.episodes and args.engine == "jax":  # sweep: generated on device, all at once
        refuse_past_memory(
            f"--n-episodes {args.n_episodes}: {len(args.modes)} modes x {args.n_episodes:,} episodes x "
            f"{args.steps:,} steps",
            len(args.modes) * args.n_episodes * args.steps * ENCODED_BYTES_PER_STEP,
            memory,
        )
