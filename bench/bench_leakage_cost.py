"""What FedGNN's ``measure_leakage`` costs: CPU seconds per round of the rated-items attack run as
an observer, next to the round's own training, on ML-100K with the packaged settings.

    FEDREC_DATA=/work/shared/datasets OMP_NUM_THREADS=1 python bench/bench_leakage_cost.py \
        [--rounds 4]

Two observers watch the same run: the attack's guess rules without ``density`` and ``density``
alone (its k-th-neighbour distances cost ``O(n^2)`` per upload of ``n`` rows). CPU time
(``time.process_time``, one torch thread) rather than wall time, since the machine is shared.
Prints the CPU seconds per round of training alone and of each observer, and each observer's
mean F1 per rule (``random`` is the chance level).
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.attacks import RatedItemsAttack
from fedrec.attacks.rated_items import GUESS_RULES
from fedrec.config import build_config
from fedrec.data import load_dataset, partition_by_user
from fedrec.federation.message import Message


class CPUTimed:
    """An observer that counts the CPU time of the observer it wraps."""

    def __init__(self, inner: RatedItemsAttack) -> None:
        self.inner, self.seconds = inner, 0.0

    def __call__(self, msg: Message) -> None:
        t = time.process_time()
        self.inner(msg)
        self.seconds += time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ds = load_dataset("ml-100k", os.environ.get("FEDREC_DATA", "/work/shared/datasets"))
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k")
    trainer = get_algorithm("fedgnn").trainer(cfg, ds, torch.device("cpu"))
    positives = {u: c.train_items for u, c in partition_by_user(ds).items()}
    rule_sets = {"without density": tuple(r for r in GUESS_RULES if r != "density"),
                 "density": ("density",)}
    observers = {name: CPUTimed(RatedItemsAttack(positives, pseudo_items=cfg.pseudo_items,
                                                 rules=rules))
                 for name, rules in rule_sets.items()}
    trainer.runtime.observers.extend(observers.values())
    t0 = time.process_time()
    for rnd in range(1, args.rounds + 1):
        trainer.train_round(rnd)
    total = time.process_time() - t0
    attacks = sum(o.seconds for o in observers.values())
    print(f"{args.rounds} rounds: training {(total - attacks) / args.rounds:.2f} CPU s/round")
    for name, o in observers.items():
        f1 = {k: round(v, 3) for k, v in o.inner.summary().items() if k.endswith("_f1")}
        print(f"attack rules {name}: {o.seconds / args.rounds:.2f} CPU s/round; F1 {f1}")


if __name__ == "__main__":
    main()
