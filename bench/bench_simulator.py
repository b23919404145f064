"""Simulator overhead: one FCF epoch through the federation runtime against the same epoch run
centrally (same model, same data, same client and server math, but no messages).

    python bench/bench_simulator.py [--dataset ml-100k] [--epochs 5]

"Centrally" means the identical FCF computation with the runtime's work removed: no message
objects, no byte metering, no NaN/Inf validation, no observers. The ratio is what federating
the computation costs in this simulator; the issue's target is at most 1.5 on ML-100K.
A PMF epoch (minibatch Adam, the classic centralized baseline) is printed for context.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fcf import FCFConfig, build_fcf_job
from fedrec.algorithms.methods.pmf import PMFConfig, build_pmf
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.federation.runtime import InProcessRuntime


class UnmeteredRuntime(InProcessRuntime):
    """The simulator minus everything federation adds: delivery is a plain function call."""

    def _deliver(self, msg, finite=None) -> bool:  # type: ignore[override]
        return True


def time_epochs(trainer, epochs: int, first: int = 1) -> list[float]:
    out = []
    for rnd in range(first, first + epochs):
        t0 = time.perf_counter()
        trainer.train_round(rnd)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds = load_dataset(args.dataset, args.data_dir, download=True)
    dev = torch.device("cpu")
    cfg = build_config(FCFConfig, "fcf", args.dataset)

    federated = FederatedTrainer(build_fcf_job(cfg, ds, dev), cfg, dev)
    central = FederatedTrainer(build_fcf_job(cfg, ds, dev), cfg, dev)
    job = central.job
    central.runtime = UnmeteredRuntime(parties=job.parties, seed=cfg.seed, device=dev)
    # Warm up both (first-touch allocation, lazy client state), then alternate to share noise.
    time_epochs(federated, 1)
    time_epochs(central, 1)
    fed_t, cen_t = [], []
    for rnd in range(2, args.epochs + 2):
        fed_t += time_epochs(federated, 1, rnd)
        cen_t += time_epochs(central, 1, rnd)
    pmf = build_pmf(build_config(PMFConfig, "pmf", args.dataset), ds, dev)
    pmf_t = time_epochs(pmf, args.epochs)
    fed, cen = statistics.median(fed_t), statistics.median(cen_t)
    print(f"dataset {args.dataset}: {len(job.client_data)} clients, {len(ds.train.users)} ratings")
    print(f"FCF epoch through the runtime (median of {args.epochs}): {fed:.3f} s")
    print(f"same FCF epoch, unmetered (median of {args.epochs}):     {cen:.3f} s")
    print(f"overhead ratio: {fed / cen:.2f}  (target <= 1.5)")
    print(f"PMF minibatch epoch, for context (median):       {statistics.median(pmf_t):.3f} s")
    print(f"bytes in one FCF round: {federated.ledger.totals(2)}")


if __name__ == "__main__":
    main()
