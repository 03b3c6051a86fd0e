"""Reads on the WRIT scenarios by category: what each write policy's store answers (docs/reads.md "WRIT by category").

    python experiments/reads_writ_table.py [--scenarios ../shared/writ/scenarios] [--gates DIR] [--steps 300]

Every scenario imported by `wpbjax import-writ` (its probe mapped by wpbjax.episodes.importers.writ_probes; those without a
probe are left out), swept with always_write, supersede, version_journal, add_only and three learned gates
(unprivileged track, default retriever, K = 5 and K = 20, budgets 1 KB and 100 KB). The gates are the three of
experiments/reads_gate.py (``wpbjax train`` defaults, one trained on soft F1, two on soft read accuracy: of
one-fact and of the default generated probes), trained here unless ``--gates`` holds them (reads_gate_f1.npz,
reads_gate_reads_one.npz, reads_gate_reads.npz). A scenario's category, from
its probe: abstention (should_abstain), constraint (constraint_application among the required capabilities),
history (history_preservation or temporal_replay: an answer that needs an old version), multi-hop (multi_hop,
entity_resolution or relationship_traversal), update (update_tracking), else retrieval. Prints one markdown
table per K: read accuracy / read credit per category (mean over its scenarios).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import pandas as pd

import wpbjax.api as wj
from wpbjax.episodes.encode import encode_episodes
from wpbjax.episodes.importers.writ import import_writ_mapped
from wpbjax.reports.tables import budget_label

BUDGETS = (1024, 102400)
TOP_K = (5, 20)
POLICIES = ("always_write", "supersede", "version_journal", "add_only")
CATEGORIES = ("retrieval", "update", "history", "multi-hop", "constraint", "abstention")
REPO = pathlib.Path(__file__).resolve().parents[1]


def category(scenario: dict) -> str:
    """The scenario's category (module note)."""
    probe = scenario.get("probe") or {}
    capabilities = set(probe.get("required_capabilities") or [])
    if probe.get("should_abstain") is True:
        return "abstention"
    if "constraint_application" in capabilities:
        return "constraint"
    if capabilities & {"history_preservation", "temporal_replay"}:
        return "history"
    if capabilities & {"multi_hop", "entity_resolution", "relationship_traversal"}:
        return "multi-hop"
    if "update_tracking" in capabilities:
        return "update"
    return "retrieval"


def gates(directory: pathlib.Path, steps: int) -> dict:
    """{shown name: path} of experiments/reads_gate.py's three gates, trained (as there) where absent."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reads_gate", pathlib.Path(__file__).with_name("reads_gate.py"))
    reads_gate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reads_gate)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    return {f"gate ({name})": path for name, path in reads_gate.train_gates(directory, steps, log=log).items()}


def table(results: pd.DataFrame, names: dict) -> str:
    parts = []
    counts = results.drop_duplicates("episode_id")["category"].value_counts()
    header = ["policy", "budget"] + [f"{name} ({counts.get(name, 0)})" for name in CATEGORIES] + ["all"]
    for top_k, at_k in results.groupby("top_k"):
        lines = [
            f"\n#### K = {top_k}\n",
            "| " + " | ".join(header) + " |",
            "| " + " | ".join(["---"] * len(header)) + " |",
        ]
        for policy in names:
            for budget in BUDGETS:
                rows = at_k[(at_k["policy"] == names[policy]) & (at_k["budget_bytes"] == budget)]
                cells = []
                for name in CATEGORIES + ("all",):
                    chosen = rows if name == "all" else rows[rows["category"] == name]
                    cells.append(
                        f"{chosen['read_accuracy'].mean():.2f} / {chosen['read_credit'].mean():.2f}"
                        if len(chosen)
                        else "–"
                    )
                lines.append("| " + " | ".join([policy, budget_label(budget)] + cells) + " |")
        parts.append("\n".join(lines))
    return "\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=str(REPO.parent / "shared" / "writ" / "scenarios"))
    parser.add_argument("--gates", default=str(REPO / "experiments" / "results"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--without-gates", action="store_true", help="the four zoo policies only")
    args = parser.parse_args()
    names = {name: name for name in POLICIES}
    if not args.without_gates:
        names |= {name: f"learned_gate:{path}" for name, path in gates(pathlib.Path(args.gates), args.steps).items()}
    results, counts = sweep(args.scenarios, names, TOP_K)
    print(
        f"{counts[0]} of {counts[1]} WRIT scenarios with a probe; read accuracy / read credit, mean over the "
        "scenarios of each category (their number in brackets)"
    )
    print(table(results, names))
    return 0


def sweep(directory, names: dict, top_k=TOP_K) -> tuple[pd.DataFrame, tuple]:
    """(results rows with a ``category`` column, (scenarios with a probe, scenarios)) of the policies ``names``
    (shown name -> policy) on the WRIT scenarios of ``directory`` that have a probe."""
    mapped = [(episode, mapping) for episode, mapping in import_writ_mapped([directory]) if mapping.probes]
    files = sorted(name for name in os.listdir(directory) if name.endswith(".json"))
    scenarios = [json.loads((pathlib.Path(directory) / name).read_text()) for name in files]
    by_id = {scenario.get("scenario_id", str(index)): category(scenario) for index, scenario in enumerate(scenarios)}
    results = wj.sweep(
        encode_episodes([episode for episode, _ in mapped]),
        grid=wj.Grid(list(BUDGETS), policies=list(names.values()), tracks=["unprivileged"]),
        reads=wj.Reads(top_k=tuple(top_k)),
    )
    results["category"] = results["episode_id"].map(by_id)
    return results, (len(mapped), len(scenarios))


if __name__ == "__main__":
    sys.exit(main())
