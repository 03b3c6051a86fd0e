"""Time one wpbjax command on two commits, interleaved, in fresh processes.

    python experiments/ab_grid.py --a f3bdd4b --b main --rounds 4 -- sweep --n-episodes 1000 --quiet --out {out}
    python experiments/ab_grid.py --a cab8c87 --b HEAD --rounds 4 -- bench --episodes 10000
    python experiments/ab_grid.py --a f3bdd4b --b HEAD --script experiments/param_sweep_timing.py --rounds 4

Each commit is checked out once in a temporary ``git worktree`` under /tmp; every timed run is a new
``python -m wpbjax.cli ...`` process (the CLI is a module on old commits and a package with
``__main__`` on new ones: ``-m`` runs both) with ``PYTHONPATH`` set to that worktree, so the installed
package is never what runs. Rounds alternate A,B then B,A (ABBA...), so that a machine growing busier or
quieter over the minutes weighs on both sides alike. ``{out}`` in the command becomes a fresh path in a
temporary directory per run (a .csv file).

Compile cache: by default each commit gets its own persistent cache directory (``WPBJAX_CACHE_DIR``),
warmed by one untimed run, so both sides are timed as a user's second run is; ``--no-cache`` turns the
cache off for both (every run compiles). ``--script PATH`` times a script of the repository (each commit's
own copy, run from its worktree, with its arguments after ``--``) instead of the CLI, and shows its output.

Prints each round's seconds, then per side the median, min and max, and the ratio of medians B / A.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _worktree(repository: str, commit: str, root: str, label: str) -> str:
    """A detached worktree of ``commit`` under ``root``; returns its path."""
    path = os.path.join(root, label)
    subprocess.run(["git", "-C", repository, "worktree", "add", "--detach", "--quiet", path, commit], check=True)
    return path


def _command(tree: str, script: str | None, arguments: list[str], out: str) -> list[str]:
    """The argv of one run in worktree ``tree`` (``{out}`` replaced by ``out``)."""
    arguments = [argument.replace("{out}", out) for argument in arguments]
    if script is not None:
        return [sys.executable, os.path.join(tree, script), *arguments]
    return [sys.executable, "-m", "wpbjax.cli", *arguments]


def _run(tree: str, command: list[str], cache: str | None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds: user + system) of one process running ``command`` against ``tree``
    and its stdout (failure raised). CPU time is less sensitive than wall time to other work on a
    shared machine (but counts every thread of the run)."""
    environment = dict(os.environ, PYTHONPATH=tree)
    environment["WPBJAX_CACHE_DIR"] = "" if cache is None else cache
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise SystemExit(
            f"ab_grid: {' '.join(command)} failed in {tree} (exit {result.returncode}):\n{result.stderr[-2000:]}"
        )
    return seconds, cpu, result.stdout


def _order(rounds: int) -> list[str]:
    """A,B,B,A,A,B,B,A... for ``rounds`` rounds of one run per side."""
    return [side for number in range(rounds) for side in (("A", "B") if number % 2 == 0 else ("B", "A"))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--a", required=True, help="commit A (the baseline)")
    parser.add_argument("--b", required=True, help="commit B")
    parser.add_argument("--rounds", type=int, default=4, help="runs per side (default 4)")
    parser.add_argument("--no-cache", action="store_true", help="no persistent compile cache on either side")
    parser.add_argument("--script", help="a script path inside the repository to run instead of the CLI")
    parser.add_argument("--repository", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("command", nargs=argparse.REMAINDER, help="after --: the wpbjax (or script) arguments")
    args = parser.parse_args(argv)
    arguments = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.rounds < 1:
        parser.error(f"argument --rounds: {args.rounds} is not a positive count")
    if not arguments and args.script is None:
        parser.error("no command after --")
    root = tempfile.mkdtemp(prefix="ab_grid-", dir="/tmp")
    trees = {}
    try:
        for side, commit in (("A", args.a), ("B", args.b)):
            trees[side] = _worktree(args.repository, commit, root, side)
        caches = {side: None if args.no_cache else os.path.join(root, f"cache-{side}") for side in trees}
        outs = os.path.join(root, "out")
        os.makedirs(outs)

        def once(side: str, number: int) -> tuple[float, float, str]:
            out = os.path.join(outs, f"{side}{number}.csv")
            for path in (out, out + ".meta.json"):
                if os.path.exists(path):
                    os.remove(path)
            return _run(trees[side], _command(trees[side], args.script, arguments, out), caches[side])

        described = {
            side: subprocess.run(
                ["git", "-C", trees[side], "log", "-1", "--format=%h %s"], check=True, capture_output=True, text=True
            ).stdout.strip()[:80]
            for side in trees
        }
        for side in trees:
            print(f"{side}: {described[side]}", flush=True)
        if not args.no_cache:  # one untimed run per side fills its cache
            for side in ("A", "B"):
                print(f"warm-up {side}: {once(side, 0)[0]:.2f} s (untimed)", flush=True)
        times, cpus = {"A": [], "B": []}, {"A": [], "B": []}
        for number, side in enumerate(_order(args.rounds), start=1):
            seconds, cpu, stdout = once(side, number)
            times[side].append(seconds)
            cpus[side].append(cpu)
            print(f"round {(number + 1) // 2} {side}: {seconds:.2f} s wall, {cpu:.2f} s CPU", flush=True)
            if args.script is not None:  # the script's own figures
                print("".join(f"    {line}\n" for line in stdout.splitlines()), end="", flush=True)
        for side in ("A", "B"):
            values = times[side]
            print(
                f"{side} ({described[side][:7]}): median {statistics.median(values):.2f} s wall, "
                f"min {min(values):.2f}, max {max(values):.2f} over {len(values)} runs; "
                f"median CPU {statistics.median(cpus[side]):.2f} s"
            )
        ratio = statistics.median(times["B"]) / statistics.median(times["A"])
        cpu_ratio = statistics.median(cpus["B"]) / statistics.median(cpus["A"])
        print(f"ratio B / A (medians): wall {ratio:.3f}, CPU {cpu_ratio:.3f}")
    finally:
        for tree in trees.values():
            subprocess.run(
                ["git", "-C", args.repository, "worktree", "remove", "--force", tree],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(
            ["git", "-C", args.repository, "worktree", "prune"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
