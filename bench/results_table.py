"""Print a markdown table of every results/*/results.json (what README's tables are made of).

    python bench/results_table.py [results]

Metrics are the test metrics at the round each run chose on its validation split
(``results.json["selection"]``, :func:`fedrec.reproduce.report.at_selected_round`); the
"chosen round" column names it. A run made before the validation split existed (results format
1: it trained on today's validation rows too) shows its last round and says so.
The epsilon column is the whole run's guarantee for what a client releases
(:func:`fedrec.privacy.run_epsilon`, which also reads results.json files written before the
report said so; "none": no formal guarantee).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fedrec.algorithms import get_algorithm
from fedrec.config import build_config, to_dict
from fedrec.experiment import RESULTS_FORMAT
from fedrec.privacy import run_epsilon
from fedrec.reproduce.report import at_selected_round

METRICS = ("rmse", "mae", "Recall@20", "NDCG@20")


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    print("| algorithm | dataset | rounds | chosen round | " + " | ".join(METRICS)
          + " | epsilon | MiB up | MiB down | wall s | command |")
    print("|" + "---|" * (len(METRICS) + 9))
    for path in sorted(root.glob("*/results.json")):
        r = json.loads(path.read_text())
        if r.get("status") != "complete":
            continue
        shown = at_selected_round(r)
        vals = [f"{shown[m]:.4f}" if m in shown else "" for m in METRICS]
        chosen = (f"{r['selection']['round']} ({r['selection']['select_on']})"
                  if r.get("selection") else "last (no validation split: older run)"
                  if r.get("format") != RESULTS_FORMAT else "last")
        tot = r["communication"]["totals"]
        spec = get_algorithm(r["algorithm"])
        # Through JSON, as results.json was written (tuples become lists).
        defaults = json.loads(json.dumps(
            to_dict(build_config(spec.config_cls, r["algorithm"], r["dataset"]))))
        sets = "".join(f" --set {k}={v}" for k, v in r["config"].items() if defaults.get(k) != v)
        cmd = f"`fedrec run {r['algorithm']} --dataset {r['dataset']}{sets} --out {path.parent}`"
        eps, _ = run_epsilon(r.get("privacy"))
        cells = [r["algorithm"], r["dataset"], str(r["config"]["rounds"]), chosen, *vals,
                 "none" if eps is None else f"{eps:.3g}",
                 mib(tot["bytes_up"]), mib(tot["bytes_down"]), f"{r['wall_time_s']:.0f}", cmd]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
