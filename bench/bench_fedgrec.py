"""FedGRec epoch against a centralized LightGCN epoch on the same data, and peak memory.

    FEDREC_DATA=../shared/datasets python bench/bench_fedgrec.py [ml-100k] [gowalla]
        [--threads 1] [--plain-upload sparse|dense] [--json FILE]

For each dataset, in this process, one after the other: FedGRec with the packaged settings,
``clients_per_round: 0`` (every client in every round, so a round is an epoch: every client trains
once) and ``secure_aggregation: false`` (the plain sum of the same fixed-point uploads, sent as
``--plain-upload``: ``sparse``, the default here, the nonzero entries and their positions;
``dense``, the whole vector), three rounds: round 1 is the warm-up (degrees and K latent sums over
every client) plus a refresh epoch, round 2 a plain epoch (refresh period 2), round 3 a refresh
epoch; the warm-up is round 1 minus round 3. Then one epoch of the centralized ``lightgcn`` with the
same K and dim (its packaged batch of 1,024 triples, a full-graph propagation per step). Times
exclude evaluation and dataset loading. Peak memory is the process's resident peak (``ru_maxrss``)
after the FedGRec rounds and at the end. Target (issue 15): a FedGRec epoch at most 3 times the
centralized epoch on Gowalla; peak memory of the Gowalla run at most 8 GiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import sys
import time
from typing import Any

import torch

from fedrec.algorithms import get_algorithm
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.federation.runtime import seed_everything


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def build(algorithm: str, ds: Any, **overrides: Any) -> tuple[Any, Any]:
    spec = get_algorithm(algorithm)
    cfg = build_config(spec.config_cls, algorithm, ds.name, overrides=overrides)
    seed_everything(cfg.seed)
    return spec.trainer(cfg, ds, torch.device("cpu")), cfg


def timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def bench(dataset: str, data_dir: str | None, plain_upload: str) -> dict[str, Any]:
    ds = load_dataset(dataset, data_dir)
    fed, cfg = build("fedgrec", ds, clients_per_round=0, secure_aggregation=False,
                     plain_upload=plain_upload)
    rounds = [timed(fed.train_round, r) for r in (1, 2, 3)]
    fed_peak = peak_rss_mib()
    clients = fed.runtime.client_ids
    del fed
    central, _ = build("lightgcn", ds, dim=cfg.dim, layers=(cfg.dim,) * cfg.num_layers,
                       split=cfg.split)
    central_s = timed(central.train_round, 1)
    return {"clients": len(clients), "K": cfg.num_layers, "dim": cfg.dim,
            "plain_upload": plain_upload,
            "warmup_s": rounds[0] - rounds[2], "round1_s": rounds[0],
            "fedgrec_plain_epoch_s": rounds[1], "fedgrec_refresh_epoch_s": rounds[2],
            "central_epoch_s": central_s,
            "ratio_plain": rounds[1] / central_s, "ratio_refresh": rounds[2] / central_s,
            "peak_rss_fedgrec_mib": fed_peak, "peak_rss_end_mib": peak_rss_mib()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="*", default=["ml-100k"])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--plain-upload", choices=("sparse", "dense"), default="sparse")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    res = {d: bench(d, args.data_dir, args.plain_upload) for d in args.datasets}
    print("| dataset | clients | K, dim | upload | warm-up s | FedGRec epoch s (plain / refresh) | "
          "LightGCN epoch s | ratio (plain / refresh) | peak RSS MiB (FedGRec / end) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d, r in res.items():
        print(f"| {d} | {r['clients']:,} | {r['K']}, {r['dim']} | {r['plain_upload']} | "
              f"{r['warmup_s']:.1f} | "
              f"{r['fedgrec_plain_epoch_s']:.1f} / {r['fedgrec_refresh_epoch_s']:.1f} | "
              f"{r['central_epoch_s']:.1f} | {r['ratio_plain']:.2f} / {r['ratio_refresh']:.2f} "
              f"| {r['peak_rss_fedgrec_mib']:,.0f} / {r['peak_rss_end_mib']:,.0f} |")
    if args.json:  # the command first: the benchmarks page shows it over the figures
        with open(args.json, "w") as f:
            json.dump({"command": shlex.join(["python", "bench/bench_fedgrec.py", *sys.argv[1:]]),
                       **res}, f, indent=2)


if __name__ == "__main__":
    main()
