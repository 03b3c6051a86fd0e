"""How long the shipped real histories take: a sweep of each (`wpbjax sweep --episodes real:NAME`, the
published line-up x 11 budgets) cold (an empty episode cache: the history read, streamed and encoded) and
warm (the same command again: the encoded windows read back from wpbjax.episodes.cache, the compiled programs
from the XLA cache), and, given clones, each vendor's import (`wpbjax import-openapi`, the sidecar's command).
Wall seconds and the peak resident memory of each command; a markdown table on stdout (docs/performance.md).

    python experiments/real_drift_speed.py [--vendors stripe,openai,digitalocean,discord] [--clones DIR]
        [--repeats 1]

DIR holds one clone (bare or not) per vendor, named as experiments/ship_real_histories.py names them. Each
command runs in a fresh process, so the figures include Python's and JAX's start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ship_real_histories import VENDORS  # noqa: E402  (the clones' names and each import's spec patterns)


def run(command: list, env: dict) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command in a fresh process; exits 1 naming it if it fails."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace").strip()[-400:]
            sys.exit(f"{' '.join(command)} failed ({process.returncode}): {message}")
    return wall, usage.ru_maxrss / 1024  # Linux: kilobytes


def sweep_times(vendor: str, folder: str, repeats: int) -> dict:
    env = dict(
        os.environ, WPBJAX_EPISODE_CACHE=os.path.join(folder, "episodes"), WPBJAX_CACHE_DIR=os.path.join(folder, "xla")
    )
    out = os.path.join(folder, f"{vendor}.csv")
    command = ["wpbjax", "sweep", "--episodes", f"real:{vendor}", "--out", out, "--quiet"]
    cold = run(command, env)
    warm = min((run(command, env) for _ in range(repeats)), key=lambda pair: pair[0])
    return {"cold_s": cold[0], "warm_s": warm[0], "peak_mb": max(cold[1], warm[1])}


def import_time(vendor: str, clones: str, folder: str) -> float:
    settings = VENDORS[vendor]
    clone = os.path.join(clones, settings["clone"])
    clone = clone if not os.path.isdir(os.path.join(clone, "repo")) else os.path.join(clone, "repo")
    out = os.path.join(folder, f"{vendor}.history.jsonl.gz")
    command = ["wpbjax", "import-openapi", clone, "--spec", settings["spec"], "--origin", settings["origin"]]
    return run(command + ["--out", out, "--quiet"], dict(os.environ))[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vendors", default=",".join(VENDORS))
    parser.add_argument("--clones", default=None, help="a folder of one clone per vendor: time the imports too")
    parser.add_argument("--repeats", type=int, default=1, help="warm runs per vendor (the fastest is kept)")
    args = parser.parse_args(argv)
    vendors = [vendor for vendor in args.vendors.split(",") if vendor]
    unknown = [vendor for vendor in vendors if vendor not in VENDORS]
    if unknown:
        parser.error(f"--vendors: unknown {', '.join(unknown)} (known: {', '.join(VENDORS)})")
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for vendor in vendors:
            rows[vendor] = sweep_times(vendor, folder, args.repeats)
            if args.clones:
                rows[vendor]["import_s"] = import_time(vendor, args.clones, folder)
            print(json.dumps({vendor: rows[vendor]}), file=sys.stderr)
    columns = ["cold_s", "warm_s", "peak_mb"] + (["import_s"] if args.clones else [])
    print("| history | " + " | ".join(columns) + " |")
    print("| --- | " + " | ".join("---" for _ in columns) + " |")
    for vendor, row in rows.items():
        print(f"| `real:{vendor}` | " + " | ".join(f"{row[column]:.1f}" for column in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
