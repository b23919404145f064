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

from fedrec.privacy import run_epsilon
from fedrec.reproduce.report import at_selected_round

ROOT = Path(__file__).resolve().parent.parent
BASE = "fedrec run fedgnn --threads 1"
C160 = "--set rounds=160 --set eval_every=8 --set init_std=0.1 --set lr_decay=0.92"
# The secure sums by SecAgg+ (Bell et al. 2020: O(log n) masks per client instead of n - 1;
# the same sum as Bonawitz et al.'s, so the same model).
PLUS = "--set item_privacy=secure_sum --set secagg_variant=secagg+"
# (dataset, mode, LDP, results dir, command)
RUNS = [
    ("ml-100k", "pseudo (paper)", "on", "results/fedgnn-secure-sum/ml-100k-pseudo-ldp",
     f"{BASE} --dataset ml-100k {C160} --out runs/secsum/ml-100k-pseudo-ldp"),
    ("ml-100k", "secure_sum (SecAgg+)", "on", "results/fedgnn-secure-sum/ml-100k-secsum-ldp",
     f"{BASE} --dataset ml-100k {C160} --set item_avg=cohort {PLUS} "
     "--out runs/secsum/ml-100k-secsum-ldp"),
    ("ml-100k", "pseudo, M = 0", "off", "results/fedgnn-secure-sum/ml-100k-pseudo-clip",
     f"{BASE} --dataset ml-100k {C160} --set laplace=0.0 --set pseudo_items=0 "
     "--out runs/secsum/ml-100k-pseudo-clip"),
    ("ml-100k", "secure_sum (SecAgg+)", "off", "results/fedgnn-secure-sum/ml-100k-secsum-clip",
     f"{BASE} --dataset ml-100k {C160} --set laplace=0.0 {PLUS} "
     "--out runs/secsum/ml-100k-secsum-clip"),
    ("ml-100k", "secure_sum (SecAgg+, 40 rounds)", "off",
     "results/fedgnn-secure-sum/ml-100k-secsum-clip-40",
     f"{BASE} --dataset ml-100k {C160} --set rounds=40 --set laplace=0.0 {PLUS} "
     "--out runs/secsum/ml-100k-secsum-clip-40"),
]
# Douban and Flixster at the same 160-round schedule (their packaged settings otherwise).
C160_OTHER = "--set rounds=160 --set eval_every=8"
for _ds in ("flixster", "douban"):
    RUNS += [
        (_ds, "pseudo (paper)", "on", f"results/fedgnn-secure-sum/{_ds}-pseudo-ldp",
         f"{BASE} --dataset {_ds} {C160_OTHER} --out runs/secsum/{_ds}-pseudo-ldp"),
        (_ds, "pseudo, M = 0", "off", f"results/fedgnn-secure-sum/{_ds}-pseudo-clip",
         f"{BASE} --dataset {_ds} {C160_OTHER} --set laplace=0.0 --set pseudo_items=0 "
         f"--out runs/secsum/{_ds}-pseudo-clip"),
        (_ds, "secure_sum (SecAgg+)", "off", f"results/fedgnn-secure-sum/{_ds}-secsum-clip",
         f"{BASE} --dataset {_ds} {C160_OTHER} --set laplace=0.0 {PLUS} "
         f"--out runs/secsum/{_ds}-secsum-clip"),
        (_ds, "secure_sum (SecAgg+)", "on", f"results/fedgnn-secure-sum/{_ds}-secsum-ldp",
         f"{BASE} --dataset {_ds} {C160_OTHER} --set item_avg=cohort {PLUS} "
         f"--out runs/secsum/{_ds}-secsum-ldp"),
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
    print("| dataset | item privacy | LDP | rounds | round (chosen on) | RMSE | MAE | RMSE @40 "
          "| MiB up / round | MiB down / round | s / round (median) | epsilon, whole run "
          "| epsilon per coordinate (secondary) | command |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for ds, mode, ldp, path, cmd in RUNS:
        f = ROOT / path / "results.json"
        if not f.is_file():
            print(f"| {ds} | {mode} | {ldp} | not finished |" + "  |" * 9 + f" `{cmd}` |")
            continue
        res = json.loads(f.read_text())
        up, down = traffic_per_round(res)
        sec = statistics.median(h["time_s"] for h in res["history"])
        shown = at_selected_round(res)
        chosen = (f"{res['selection']['round']} ({res['selection']['select_on']})"
                  if res.get("selection") else "last (older run: no validation split)")
        eps, _ = run_epsilon(res.get("privacy"))
        coord = (res.get("privacy") or {}).get("epsilon_per_coordinate_per_upload")
        at40 = eval_at(res, 40)
        print(f"| {ds} | {mode} | {ldp} | {len(res['history'])} | {chosen} "
              f"| {shown['rmse']:.4f} | {shown['mae']:.4f} "
              f"| {'' if at40 is None else f'{at40:.4f}'} | {up:,.2f} | {down:,.2f} | {sec:.1f} "
              f"| {'none' if eps is None else f'{eps:.3g}'} "
              f"| {'' if coord is None else f'{coord:g} per upload'} | `{cmd}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
