"""Top-guess attack F1 on PTF-FedRec uploads under each defence (one round, every client).

    FEDREC_DATA=../shared/datasets python bench/bench_top_guess.py [--dataset ml-100k]

The shape of the paper's Table VI: a curious server labels the top share of each client's
uploaded scores as positives (k from the public negative ratio) and is scored against the
client's whole interaction set.
"""

from __future__ import annotations

import argparse
import time

import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig
from fedrec.config import build_config
from fedrec.data import load_dataset

DEFENCES = ("none", "ldp", "sampling", "sampling+swapping")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds = load_dataset(args.dataset, args.data_dir, download=True)
    print("| defence | attack precision | attack recall | attack F1 | seconds |")
    print("|---|---|---|---|---|")
    for defence in DEFENCES:
        cfg = build_config(PTFFedRecConfig, "ptf-fedrec", args.dataset,
                           overrides={"defense": defence, "rounds": 1})
        trainer = get_algorithm("ptf-fedrec").trainer(cfg, ds, torch.device("cpu"))
        t0 = time.perf_counter()
        stats = trainer.train_round(1)
        print(f"| {defence} | {stats['attack_precision']:.3f} | {stats['attack_recall']:.3f} | "
              f"{stats['attack_f1']:.3f} | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
