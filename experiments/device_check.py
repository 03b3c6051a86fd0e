"""The device check: every headline figure on whatever JAX backend this machine has, in one command.

    PYTHONPATH=. python experiments/device_check.py --out DIR [--quick]

Runs, each in a fresh ``python -m wpbjax.cli`` process of this checkout (nothing to install):

* ``bench``: ``wpbjax bench`` at 10,000 episodes x 200 steps and 1,000 x 2,000 (the published line-up,
  3 budgets; steady-state episode-steps/s per policy, compile seconds apart), then at 10,000 x 200 again in
  one pass per device (``--per-pass``) for the evicting policies and fifo_store_all: the default passes are
  sized for a CPU's cache, and an accelerator may want its whole share at once;
* the paper grid (``wpbjax sweep``: 40 episodes x 11 budgets x the published line-up of both tracks),
  the 100x grid (``sweep --n-episodes 1000``) and a real-drift sweep (``sweep --episodes real:stripe``),
  each twice: *cold* (empty XLA and episode caches in DIR) and *warm* (the same command again, the
  compiled programs and encoded windows read back), wall seconds end to end (Python and JAX start
  included) and the episode-steps/s that makes (rows x steps per run / wall).

Writes ``DIR/device_check.json`` (each figure with wall seconds, episode-steps/s, backend, device name and
JAX version; ``"complete": false`` until every figure ran, rewritten atomically after each one, so a killed
run leaves the figures it had and says it is incomplete) and ``DIR/device_check.md`` (the same as a
Markdown table). ``--quick`` runs small sizes (a few minutes on a 2-core CPU); ``--size tiny`` is the test's.
``--time-limit S`` skips the figures that would start after S seconds (default 480, the budget of a
15-minute device loan after the machine starts); a skipped figure is listed as such.

Only the packages a bare accelerator machine has are needed (jax, numpy, pandas, pyarrow, scipy,
matplotlib, optax, chex, tqdm): this script imports none of them itself (the parent never starts JAX,
so it holds no accelerator memory while the measured processes run).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import time

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPOSITORY)
from wpbjax.files.atomic import write_text  # noqa: E402  (standard library only: no JAX in this process)

SCHEMA = "wpbjax.device-check/1"
DEFAULT_TIME_LIMIT_S = 480.0
FIGURE_TIMEOUT_S = 1800.0  # a hung command, not a slow one


@dataclasses.dataclass(frozen=True)
class Size:
    """What one size of the check runs: bench shapes and the extra ``sweep`` arguments of each grid."""

    bench: tuple[tuple[int, int], ...]  # (episodes, steps) of each bench
    bench_repeats: int
    bench_policies: str | None  # comma-separated; None: the published line-up
    one_pass: tuple[tuple[int, int], ...]  # (episodes, steps) of each bench in one pass per device
    one_pass_policies: str
    paper_grid: tuple[str, ...]  # sweep arguments beyond the defaults (the paper grid is the default sweep)
    grid_100x: tuple[str, ...]
    real_drift: tuple[str, ...]
    real_steps: int  # steps per real window (the spec's STEPS)
    warm: bool = True  # also time each sweep a second time, its caches filled


SIZES = {
    "full": Size(
        bench=((10000, 200), (1000, 2000)),
        bench_repeats=3,
        bench_policies=None,
        one_pass=((10000, 200),),
        one_pass_policies="fifo_store_all,priority_greedy,last_kb,merge_aggressive",
        paper_grid=(),
        grid_100x=("--n-episodes", "1000"),
        real_drift=("--episodes", "real:stripe"),
        real_steps=200,
    ),
    "quick": Size(
        bench=((1000, 200), (100, 2000)),
        bench_repeats=1,
        bench_policies=None,
        one_pass=((1000, 200),),
        one_pass_policies="fifo_store_all,priority_greedy,last_kb,merge_aggressive",
        paper_grid=(),
        grid_100x=("--n-episodes", "50"),
        real_drift=("--episodes", "real:stripe:200:1000", "--budgets", "1024,10240,102400"),
        real_steps=200,
    ),
    "tiny": Size(
        bench=((8, 40),),
        bench_repeats=1,
        bench_policies="fifo_store_all,last_kb",
        one_pass=((8, 40),),
        one_pass_policies="last_kb",
        paper_grid=("--n-episodes", "1", "--budgets", "1024,102400", "--policies", "fifo_store_all,last_kb"),
        grid_100x=("--n-episodes", "2", "--budgets", "1024,102400", "--policies", "fifo_store_all,last_kb"),
        real_drift=(
            "--episodes",
            "real:openai:50:400",
            "--budgets",
            "1024",
            "--policies",
            "last_kb",
            "--tracks",
            "unprivileged",
        ),
        real_steps=50,
        warm=False,
    ),
}

PROBE = (  # the devices the CLI's commands get (one per core on a CPU)
    "import json, jax; from wpbjax.runtime.devices import use_every_core; use_every_core(); d = jax.devices(); "
    "print(json.dumps({'backend': jax.default_backend(), 'device': d[0].device_kind, 'devices': len(d), "
    "'jax_version': jax.__version__}))"
)


class CheckFailed(RuntimeError):
    """A measured command failed: its command line and the end of its stderr."""


def _environment(folder: str, figure: str = "probe") -> dict:
    """The measured processes' environment: this checkout first on the path, the XLA and episode caches
    in ``folder``, one pair per figure (so each cold run starts empty)."""
    path = os.pathsep.join(p for p in (REPOSITORY, os.environ.get("PYTHONPATH", "")) if p)
    caches = os.path.join(folder, "caches", figure.replace(" ", "_"))
    return dict(
        os.environ,
        PYTHONPATH=path,
        WPBJAX_CACHE_DIR=os.path.join(caches, "xla"),
        WPBJAX_EPISODE_CACHE=os.path.join(caches, "episodes"),
    )


def _run(arguments: list[str], env: dict, timeout: float) -> tuple[float, str]:
    """(wall seconds, stdout) of ``python ARGUMENTS`` in a fresh process; CheckFailed if it fails."""
    command = [sys.executable, *arguments]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, cwd=REPOSITORY, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise CheckFailed(f"{' '.join(command)}: still running after {timeout:.0f} s") from error
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise CheckFailed(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-1500:]}")
    return seconds, done.stdout


def _bench_figures(size: Size, env: dict, timeout: float) -> list[dict]:
    figures = []
    benches = [(shape, False, size.bench_policies) for shape in size.bench]
    benches += [(shape, True, size.one_pass_policies) for shape in size.one_pass]
    for (episodes, steps), one_pass, policies in benches:
        arguments = ["-m", "wpbjax.cli", "bench", "--episodes", str(episodes), "--steps", str(steps)]
        arguments += ["--repeats", str(size.bench_repeats), "--json"]
        arguments += ["--policies", policies] if policies else []
        arguments += ["--per-pass", str(episodes)] if one_pass else []  # at least each device's share
        label = "one pass " if one_pass else ""
        wall, stdout = _run(arguments, env, timeout)
        report = json.loads(stdout.strip().splitlines()[-1])
        for row in report["policies"]:
            figures.append(
                {
                    "figure": f"bench {episodes}x{steps} {label}{row['policy']}",
                    "wall_s": row["run_s"],
                    "compile_s": row["compile_s"],
                    "runs": report["runs"],
                    "steps": steps,
                    "episode_steps_per_s": row["episode_steps_per_s"],
                    "per_pass": report["per_pass"],
                    "process_wall_s": round(wall, 2),
                }
            )
    return figures


def _sweep_figure(name: str, arguments: tuple[str, ...], steps: int, folder: str, warm: bool, timeout: float) -> list:
    """The sweep cold (then warm): a figure each (wall seconds end to end, rows x steps / wall)."""
    env, figures = _environment(folder, name), []
    for state in ("cold", "warm") if warm else ("cold",):
        out = os.path.join(folder, f"{name.replace(' ', '_')}.csv")
        wall, _ = _run(["-m", "wpbjax.cli", "sweep", "--quiet", *arguments, "--out", out], env, timeout)
        with open(out + ".meta.json", encoding="utf-8") as handle:
            rows = json.load(handle)["rows"]
        figures.append(
            {
                "figure": f"{name} ({state})",
                "wall_s": round(wall, 4),
                "runs": rows,
                "steps": steps,
                "episode_steps_per_s": rows * steps / round(wall, 4),
                "command": "wpbjax sweep " + " ".join(arguments),
            }
        )
    return figures


def _rate(per_s: float) -> str:
    return f"{per_s / 1e6:,.1f}M" if per_s >= 1e6 else f"{per_s:,.0f}"


def _markdown(report: dict) -> str:
    lines = [
        f"Device check ({report['size']}): {report['backend']} backend, {report['devices']} x {report['device']}, "
        f"JAX {report['jax_version']}, host {report['host']}; {report['wall_s']:.0f} s in all"
        + ("" if report["complete"] else " (INCOMPLETE)"),
        "",
        "| figure | runs x steps | wall (s) | compile (s) | episode-steps/s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for figure in report["figures"]:
        if "skipped" in figure:
            lines.append(f"| {figure['figure']} | | skipped: {figure['skipped']} | | |")
            continue
        compile_s = f"{figure['compile_s']:.2f}" if "compile_s" in figure else ""
        lines.append(
            f"| {figure['figure']} | {figure['runs']:,} x {figure['steps']:,} | {figure['wall_s']:.3g} | {compile_s} "
            f"| {_rate(figure['episode_steps_per_s'])} |"
        )
    return "\n".join(lines) + "\n"


def _write(folder: str, report: dict) -> None:
    write_text(os.path.join(folder, "device_check.json"), json.dumps(report, indent=1) + "\n")
    write_text(os.path.join(folder, "device_check.md"), _markdown(report))


def run_check(folder: str, size_name: str, time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> dict:
    """Run every figure of ``size_name`` into ``folder`` (created); returns the report written there."""
    size = SIZES[size_name]
    os.makedirs(folder, exist_ok=True)
    env = _environment(folder)
    if os.path.isdir(os.path.join(folder, "caches")):  # cold means cold: no programs from an earlier check
        shutil.rmtree(os.path.join(folder, "caches"))
    started = time.perf_counter()
    _, probe = _run(["-c", PROBE], env, timeout=600)
    machine = json.loads(probe.strip().splitlines()[-1])
    report = {"schema": SCHEMA, "size": size_name, "host": platform.node(), **machine, "complete": False}
    report.update(wall_s=0.0, figures=[])
    steps_of_grid = 200  # the generator's default episode length
    work = [
        ("bench", lambda timeout: _bench_figures(size, env, timeout)),
        ("paper grid", lambda t: _sweep_figure("paper grid", size.paper_grid, steps_of_grid, folder, size.warm, t)),
        ("100x grid", lambda t: _sweep_figure("100x grid", size.grid_100x, steps_of_grid, folder, size.warm, t)),
        ("real drift", lambda t: _sweep_figure("real drift", size.real_drift, size.real_steps, folder, size.warm, t)),
    ]
    for name, measure in work:
        left = time_limit_s - (time.perf_counter() - started)
        if left <= 0:
            report["figures"].append({"figure": name, "skipped": f"past the {time_limit_s:.0f} s time limit"})
            continue
        for figure in measure(FIGURE_TIMEOUT_S):  # a started figure runs to its end (or this)
            report["figures"].append({**figure, "backend": machine["backend"], "device": machine["device"]})
            report["figures"][-1]["jax_version"] = machine["jax_version"]
        report["wall_s"] = round(time.perf_counter() - started, 1)
        _write(folder, report)
    report["complete"] = all("skipped" not in figure for figure in report["figures"])
    report["wall_s"] = round(time.perf_counter() - started, 1)
    _write(folder, report)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--out", required=True, help="folder for device_check.json, device_check.md and caches")
    parser.add_argument("--quick", action="store_true", help="small sizes (same as --size quick)")
    parser.add_argument("--size", choices=sorted(SIZES), default=None, help="full (default), quick or tiny")
    parser.add_argument(
        "--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S, help="seconds after which no figure starts"
    )
    args = parser.parse_args(argv)
    if args.quick and args.size not in (None, "quick"):
        parser.error(f"argument --quick: conflicts with --size {args.size}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"argument --out: {args.out} exists and is not a folder")
    size = args.size or ("quick" if args.quick else "full")
    try:
        report = run_check(args.out, size, args.time_limit)
    except CheckFailed as error:
        print(f"device_check: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
