"""One FL-MV-DSSM round against one epoch of centralized DSSM on the same data, in one run.

    FEDREC_DATA=../shared/datasets python bench/bench_fl_mv_dssm.py [--rounds 2] [--threads 1]
        [--set key=value ...] [--json FILE]

Builds ML-100K's multi-view data once, then times (wall clock, this process) ``--rounds``
FL-MV-DSSM rounds with the packaged settings (100 devices of 2 views a round; ``--set``
overrides, e.g. ``secure_aggregation=false``), one federated evaluation of every device
(Algorithm 2, test split), and one epoch of centralized DSSM (:class:`~fedrec.algorithms.
fl_mv_dssm.baseline.CentralDSSM`) per view over all the training positives, with its
evaluation. Prints a markdown table. The issue's target: the whole 100-round run at most 10 min.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fl_mv_dssm import build_job_from_multiview, multiview_of
from fedrec.algorithms.methods.fl_mv_dssm.baseline import CentralDSSM
from fedrec.data import load_dataset
from fedrec.federation.secrets import ClientSecrets


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = resolve_config("fl-mv-dssm", "ml-100k", overrides=args.sets)
    mv = multiview_of(cfg, load_dataset("ml-100k", args.data_dir))
    trainer = FederatedTrainer(build_job_from_multiview(cfg, mv), cfg, torch.device("cpu"),
                               ClientSecrets(bytes(32)))
    rows: dict[str, float] = {}
    for rnd in range(1, args.rounds + 1):
        _, rows[f"FL-MV-DSSM round {rnd} ({cfg.clients_per_round} devices)"] = timed(
            lambda r=rnd: trainer.train_round(r))
    _, rows["FL-MV-DSSM federated evaluation (all devices, test)"] = timed(
        lambda: trainer.evaluate("test"))
    for view in cfg.views:
        central = CentralDSSM(cfg, mv, view)
        _, rows[f"centralized DSSM ({view}) epoch, {len(central.pairs):,} positives"] = timed(
            central.fit_epoch)
        _, rows[f"centralized DSSM ({view}) evaluation (test)"] = timed(
            lambda c=central: c.evaluate("test"))
    print(f"| step (ML-100K, {args.threads} thread(s)) | wall s |")
    print("|---|---|")
    for name, secs in rows.items():
        print(f"| {name} | {secs:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
