"""The table of results/fedgnn-secure-sum.md: FedGNN's paper mode (pseudo items) beside
``item_privacy=secure_sum``, from the runs' ``results.json``.

    python bench/fedgnn_secure_sum_table.py

Runs were made with ``--out runs/secsum/NAME`` (the commands below) and their ``results.json``
copied to ``results/fedgnn-secure-sum/NAME/``. Per run: final RMSE/MAE, rounds, training
traffic per round from the ledger (every step but ``evaluate`` and the graph expansion's
``expand_*``; up = client -> server, down = server -> client, mean over the rounds), the
median wall time of a round (``history[].time_s``; rounds with an evaluation included) and the
composed epsilon where the run claims local DP. Runs that have not finished are listed so.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "fedrec run fedgnn --threads 1"
C160 = "--set rounds=160 --set eval_every=8 --set init_std=0.1 --set lr_decay=0.92"
# (dataset, mode, LDP, results dir, command)
RUNS = [
    ("ml-100k", "pseudo (paper)", "on", "results/fedgnn-secure-sum/ml-100k-pseudo-ldp",
     f"{BASE} --dataset ml-100k {C160} --out runs/secsum/ml-100k-pseudo-ldp"),
    ("ml-100k", "secure_sum", "on", "results/fedgnn-secure-sum/ml-100k-secsum-ldp",
     f"{BASE} --dataset ml-100k {C160} --set item_avg=cohort --set item_privacy=secure_sum "
     "--out runs/secsum/ml-100k-secsum-ldp"),
    ("ml-100k", "pseudo, M = 0", "off", "results/fedgnn-secure-sum/ml-100k-pseudo-clip",
     f"{BASE} --dataset ml-100k {C160} --set laplace=0.0 --set pseudo_items=0 "
     "--out runs/secsum/ml-100k-pseudo-clip"),
    ("ml-100k", "secure_sum", "off", "results/fedgnn-secure-sum/ml-100k-secsum-clip",
     f"{BASE} --dataset ml-100k {C160} --set laplace=0.0 --set item_privacy=secure_sum "
     "--out runs/secsum/ml-100k-secsum-clip"),
    ("ml-100k", "secure_sum (40 rounds)", "off",
     "results/fedgnn-secure-sum/ml-100k-secsum-clip-40",
     f"{BASE} --dataset ml-100k {C160} --set rounds=40 --set laplace=0.0 "
     "--set item_privacy=secure_sum --out runs/secsum/ml-100k-secsum-clip-40"),
]
TRAINING_EXCLUDED = ("evaluate", "expand_")


def traffic_per_round(res: dict) -> tuple[float, float]:
    up = down = 0
    for step, v in res["communication"]["by_step"].items():
        if step.startswith(TRAINING_EXCLUDED):
            continue
        if v["direction"] == "up":
            up += v["bytes"]
        else:
            down += v["bytes"]
    rounds = len(res["history"])
    return up / rounds / 2**20, down / rounds / 2**20


def eval_at(res: dict, rnd: int) -> float | None:
    for h in res["history"]:
        if h["round"] == rnd and h.get("eval"):
            return h["eval"]["rmse"]
    return None


def main() -> int:
    print("| dataset | item privacy | LDP | rounds | RMSE | MAE | RMSE @40 | MiB up / round "
          "| MiB down / round | s / round (median) | epsilon (composed) | command |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for ds, mode, ldp, path, cmd in RUNS:
        f = ROOT / path / "results.json"
        if not f.is_file():
            print(f"| {ds} | {mode} | {ldp} | not finished |  |  |  |  |  |  |  | `{cmd}` |")
            continue
        res = json.loads(f.read_text())
        up, down = traffic_per_round(res)
        sec = statistics.median(h["time_s"] for h in res["history"])
        eps = (res.get("privacy") or {}).get("epsilon")
        at40 = eval_at(res, 40)
        print(f"| {ds} | {mode} | {ldp} | {len(res['history'])} | {res['final']['rmse']:.4f} "
              f"| {res['final']['mae']:.4f} | {'' if at40 is None else f'{at40:.4f}'} "
              f"| {up:,.2f} | {down:,.2f} | {sec:.1f} | {'' if eps is None else f'{eps:.1f}'} "
              f"| `{cmd}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
