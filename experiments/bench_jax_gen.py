"""Time the JAX generator: 1M episodes x 200 steps of encoded arrays (both tracks' write costs,
api ids and table, field ids/fragments/presence, utility codes, critical flags), best of 3.

    python experiments/bench_jax_gen.py [--episodes 1000000] [--steps 200] [--chunk 2048] [--modes default,...]

Arrays are generated chunk by chunk (a sweep consumes them that way; all of 1M x 200 at once
would be ~12 GB). XLA:CPU already spreads each chunk's work over the cores; with several devices
(e.g. ``XLA_FLAGS=--xla_force_host_platform_device_count=2``: 9.5-9.8 s against 10.1-10.3 s as one
device on a quiet 2-core machine)
consecutive chunks go to different devices. Every round of chunks is completed
(``block_until_ready``) before the next. Prints the load average,
since the machine is shared.

Every chunk allocates fresh output buffers of tens of MB; glibc serves those with mmap and gives
them back at once, so each chunk page-faults its memory in again (a fifth of the CPU time went to
the kernel). ``keep_freed_memory`` tells glibc to keep freed memory in the heap instead (as the
environment variables ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` would); ``--no-mallopt``
measures without it.
"""

from __future__ import annotations

import argparse
import os
import time

import jax

from wpbjax.episodes.generators import jax_gen


def keep_freed_memory() -> bool:
    """glibc mallopt: serve big blocks from the heap and never trim it (Linux/glibc only)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
        return bool(
            libc.mallopt(m_mmap_threshold, 1 << 30)
            and libc.mallopt(m_trim_threshold, 1 << 30)
            and libc.mallopt(m_top_pad, 512 << 20)
        )
    except (OSError, AttributeError):
        return False


def time_mode(mode: str, n_episodes: int, steps: int, chunk: int, repeats: int) -> tuple[float, float]:
    config = jax_gen.JaxGenConfig(mode=mode, steps=steps)
    devices = jax.local_devices()
    started = time.perf_counter()
    for device in devices:  # compile (once per device)
        jax.block_until_ready(jax_gen.generate_arrays(config, chunk, with_latent=False, device=device))
    compile_s = time.perf_counter() - started
    best = float("inf")
    for repeat in range(repeats):
        started = time.perf_counter()
        for first in range(0, n_episodes, chunk * len(devices)):
            jax.block_until_ready(
                [
                    jax_gen.generate_arrays(config, chunk, first + k * chunk + repeat, with_latent=False, device=device)
                    for k, device in enumerate(devices)
                ]
            )
        best = min(best, time.perf_counter() - started)
    return compile_s, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default="default")
    parser.add_argument("--no-mallopt", action="store_true", help="leave glibc's malloc settings alone")
    args = parser.parse_args()
    kept = False if args.no_mallopt else keep_freed_memory()
    per_round = args.chunk * jax.local_device_count()
    n_episodes = -(-args.episodes // per_round) * per_round
    print(
        f"{jax.device_count()} {jax.devices()[0].platform} device(s), {os.cpu_count()} cores; "
        f"glibc keeps freed memory: {kept}; load average before: {os.getloadavg()[0]:.2f}"
    )
    for mode in args.modes.split(","):
        compile_s, best = time_mode(mode, n_episodes, args.steps, args.chunk, args.repeats)
        print(
            f"{mode:<18} {n_episodes:,} episodes x {args.steps} steps: best of {args.repeats} {best:.2f} s "
            f"({n_episodes * args.steps / best / 1e6:.1f}M episode-steps/s; compile {compile_s:.1f} s); "
            f"load average now {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
