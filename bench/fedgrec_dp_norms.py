"""The L2 norms of the blocks of FedGRec's DP round vector before any clipping, on ML-100K: what
the per-block budgets, ``dp_latent: none`` and a public ``dp_degree`` rest on
(``docs/fedgrec.md``, User-level DP).

    FEDREC_DATA=../shared/datasets python bench/fedgrec_dp_norms.py [--rounds 3]
        [--clients-per-round 300] [--set key=value ...]

Runs FedGRec (defaults, ``refresh_period: 1`` so every round carries a latent block) under
``dp: central`` with ``noise_multiplier: 0`` and ``dp_clip: 1e6`` (nothing is clipped or noised,
so the norms are those of the unbounded contributions) and prints, per round, the 10th, 50th and
90th percentile over the cohort of the norms of the item-update, degree and latent blocks, read
where the client bounds its vector (:meth:`DPBudget.bound`, wrapped to record them), then
the mean absolute coordinate of the server's latent sums ``A``; the
clients' secrets are fixed (``bytes(range(32))``, as the tests'), so a rerun prints the same.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgrec import FedGRecConfig
from fedrec.algorithms.methods.fedgrec import dp as fedgrec_dp
from fedrec.api import load_dataset
from fedrec.config import build_config, parse_override
from fedrec.federation.secrets import ClientSecrets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients-per-round", type=int, default=300)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    torch.set_num_threads(1)
    overrides: dict[str, Any] = {"dp": "central", "noise_multiplier": 0.0, "dp_clip": 1e6,
                                 "refresh_period": 1, "rounds": args.rounds,
                                 "clients_per_round": args.clients_per_round}
    overrides.update(dict(parse_override(s) for s in args.set))
    cfg = build_config(FedGRecConfig, "fedgrec", "ml-100k", overrides=overrides)
    trainer = get_algorithm("fedgrec").trainer(cfg, load_dataset("ml-100k"),
                                               torch.device("cpu"),
                                               ClientSecrets(bytes(range(32))))
    norms: list[tuple[float, float, float]] = []
    bound = fedgrec_dp.DPBudget.bound

    def recording(self: fedgrec_dp.DPBudget, x: np.ndarray, lay: fedgrec_dp.DPLayout
                  ) -> tuple[np.ndarray, float, float]:
        item = x[: lay.num_items * lay.dim]
        degree = x[lay.degrees: lay.degrees + lay.num_items] if lay.degrees is not None else []
        latent = x[lay.latent:] if lay.latent is not None else []
        norms.append((float(np.linalg.norm(item)), float(np.linalg.norm(degree)),
                      float(np.linalg.norm(latent))))
        return bound(self, x, lay)

    fedgrec_dp.DPBudget.bound = recording  # type: ignore[method-assign]
    try:
        print("round  block    p10      p50      p90   (L2 norm over the cohort)")
        for rnd in range(1, args.rounds + 1):
            norms.clear()
            trainer.train_round(rnd)
            table = np.asarray(norms)
            for j, name in enumerate(("item", "degree", "latent")):
                p10, p50, p90 = np.percentile(table[:, j], [10, 50, 90])
                print(f"{rnd:5d}  {name:7s} {p10:8.3f} {p50:8.3f} {p90:8.3f}")
        latent = trainer.job.server.latent  # the unnormalised sums A (nothing noised)
        print(f"mean |A_t^k| coordinate after round {args.rounds}: "
              f"{float(latent.abs().mean()):.3f}")
    finally:
        fedgrec_dp.DPBudget.bound = bound  # type: ignore[method-assign]


if __name__ == "__main__":
    main()
