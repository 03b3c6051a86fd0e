"""Rebuild the shipped real API histories (wpbjax/data/real) from clones of their public repositories, with
each one's NOTICE; every history is one `wpbjax import-openapi` command, recorded in its sidecar (`rebuild`).

    python experiments/ship_real_histories.py --clones DIR [--only stripe,openai] [--out wpbjax/data/real]

DIR holds one clone (bare or not) per vendor, named as in VENDORS' `clone` (or CLONE/repo). A full clone reads more versions
than the snapshot the shipped files were made from; the sidecars say which commits were read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

VENDORS = {
    "stripe": dict(
        clone="stripe+openapi",
        origin="https://github.com/stripe/openapi",
        spec="openapi/spec3.json,openapi/spec2.json,spec/spec.json",
        title="the Stripe API",
    ),
    "openai": dict(
        clone="openai+openai-openapi",
        origin="https://github.com/openai/openai-openapi",
        spec="openapi.yaml",
        title="the OpenAI API",
    ),
    "digitalocean": dict(
        clone="digitalocean+openapi",
        origin="https://github.com/digitalocean/openapi",
        spec="specification/DigitalOcean-public.v2.yaml",
        title="the DigitalOcean API",
    ),
    "discord": dict(
        clone="discord+discord-api-spec",
        origin="https://github.com/discord/discord-api-spec",
        spec="specs/openapi.json",
        title="the Discord HTTP API",
    ),
}


def notice(name: str, meta: dict) -> str:
    """The NOTICE beside a shipped history: where it comes from, what it holds, the source's licence."""
    vendor = VENDORS[name]
    commits = meta["commits"]
    return (
        f"wpbjax/data/real/{meta['file']} is derived from the OpenAPI specification of {vendor['title']}\n"
        f"published at {vendor['origin']} (commits {commits['first_date'][:10]} .. {commits['last_date'][:10]};\n"
        f"the exact range and the command that rebuilds it are in {meta['file']}.meta.json). It holds, per\n"
        "changed (version, endpoint), the request and response surfaces (field names, locations, types,\n"
        "enum values, required and deprecated flags) and labels computed by wpbjax. The source is distributed\n"
        "under the following licence:\n\n" + meta["licence"]["text"]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clones", required=True, help="directory of the vendors' clones")
    parser.add_argument("--only", default=",".join(VENDORS), help="vendors to rebuild (comma-separated)")
    parser.add_argument("--out", default=os.path.join("wpbjax", "data", "real"))
    args = parser.parse_args(argv)
    for name in args.only.split(","):
        vendor = VENDORS[name]
        out = os.path.join(args.out, f"{name}.history.jsonl.gz")
        source = os.path.join(args.clones, vendor["clone"])
        if os.path.isdir(os.path.join(source, "repo")):  # a mirror laid out as CLONE/repo
            source = os.path.join(source, "repo")
        started = time.perf_counter()
        command = [sys.executable, "-m", "wpbjax.cli", "import-openapi", source, "--spec", vendor["spec"]]
        subprocess.run([*command, "--origin", vendor["origin"], "--out", out, "--quiet"], check=True)
        with open(out + ".meta.json", encoding="utf-8") as handle:
            meta = json.load(handle)
        with open(os.path.join(args.out, f"{name}.NOTICE"), "w", encoding="utf-8", newline="\n") as handle:
            handle.write(notice(name, meta))
        counts = meta["counts"]
        print(
            f"{name}: {counts['lines']:,} lines, {counts['breaking_lines']:,} breaking, "
            f"{os.path.getsize(out) / 1e6:.2f} MB, {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
