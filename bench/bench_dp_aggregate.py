"""What the DP aggregate costs: CPU seconds of a round with ``dp: distributed`` (Skellam noise
inside the secure sum) against the secure-sum round it replaces, on ML-100K.

    FEDREC_DATA=../shared/datasets OMP_NUM_THREADS=1 python bench/bench_dp_aggregate.py \\
        [--rounds 3] [--out results/bench_dp_aggregate.json]

Pairs (same algorithm, cohort and model, masking on in both): FCF ``secure_aggregation: true``
against FCF ``dp: distributed``, 100 clients a round (the DP run's Poisson cohort has 100 on
average); FedGNN ``item_privacy: secure_sum`` (clip only) against FedGNN ``dp: distributed``,
128 a round. CPU time (``time.process_time``, one torch thread), not wall time, since the
machine is shared; the first round is a warm-up and not counted. The target: a DP round within
1.5x of the secure-sum round.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.base import FederatedTrainer
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.federation.secrets import ClientSecrets

PAIRS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "fcf": ("fcf", {"secure_aggregation": True, "clients_per_round": 100},
            {"dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 100}),
    "fedgnn": ("fedgnn", {"item_privacy": "secure_sum", "laplace": 0.0, "neighbours": 0,
                          "clients_per_round": 128},
               {"dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 128}),
}


def seconds_per_round(algorithm: str, overrides: dict[str, Any], rounds: int,
                      data_dir: str) -> tuple[float, float]:
    ds = load_dataset("ml-100k", data_dir)
    spec = get_algorithm(algorithm)
    cfg = build_config(spec.config_cls, algorithm, "ml-100k",
                       overrides={"rounds": rounds + 1, **overrides})
    trainer = FederatedTrainer(spec.build_job(cfg, ds, torch.device("cpu")), cfg,
                               torch.device("cpu"), ClientSecrets(bytes(range(32))))
    trainer.train_round(1)  # warm-up
    times, clients = [], []
    for r in range(2, rounds + 2):
        start = time.process_time()
        stats = trainer.train_round(r)
        times.append(time.process_time() - start)
        clients.append(stats.get("clients", 0.0))
    return float(np.mean(times)), float(np.mean(clients))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="results/bench_dp_aggregate.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    data_dir = os.environ.get("FEDREC_DATA", "../shared/datasets")
    rows = []
    for name, (algorithm, secure, dp) in PAIRS.items():
        base, base_clients = seconds_per_round(algorithm, secure, args.rounds, data_dir)
        noised, dp_clients = seconds_per_round(algorithm, dp, args.rounds, data_dir)
        rows.append({"pair": name, "secure_sum_cpu_s": base, "secure_sum_clients": base_clients,
                     "dp_cpu_s": noised, "dp_clients": dp_clients,
                     "ratio_per_client": (noised / dp_clients) / (base / base_clients)})
        print(rows[-1], flush=True)
    out = {"command": "python bench/bench_dp_aggregate.py --rounds " + str(args.rounds),
           "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
