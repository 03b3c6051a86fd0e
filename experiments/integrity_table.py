"""Every published and zoo policy's write integrity at 1 KB, 10 KB and 100 KB on the paper episodes.

    python experiments/integrity_table.py [--out experiments/results/integrity_table.md]

Paper episodes: the published generator's four modes x 10 episodes (seed 0, 200 steps); facts by the api
rule (endpoint j of api.v{k}.endpoint_{j}, version k). Each policy runs on every track it supports, at its
default params, exact oracle. Prints a markdown table per budget (also written to --out): the table in
docs/integrity.md.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import pandas as pd

from wpbjax.common.tracks import ALL_TRACKS
from wpbjax.episodes.encode import concat_encoded, encode_episodes
from wpbjax.episodes.generators.published_gen import MODES, DriftConfig, generate_episodes
from wpbjax.policies import lineup
from wpbjax.policies.zoo import ZOO_NAMES
from wpbjax.reports.integrity import scorecard, scorecard_markdown
from wpbjax.scoring.integrity import COLUMNS
from wpbjax.sweeps import run_sweep

BUDGETS = (1024, 10240, 102400)


def integrity_table(budgets=BUDGETS) -> pd.DataFrame:
    encoded = concat_encoded([encode_episodes(generate_episodes(DriftConfig(mode=mode), 10)) for mode in MODES])
    names = list(dict.fromkeys(list(lineup("privileged")) + list(ZOO_NAMES)))
    results = run_sweep(encoded, budgets=list(budgets), policies=names, tracks=list(ALL_TRACKS))
    return scorecard(results)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="experiments/results/integrity_table.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    card = integrity_table()
    markdown = scorecard_markdown(card)
    print(markdown)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(markdown)
    print(
        f"({time.perf_counter() - started:.0f} s; {len(COLUMNS)} metrics; table written to {args.out})", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
