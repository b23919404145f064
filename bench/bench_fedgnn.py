"""FedGNN speed and memory (issue targets in brackets):

* ``ml100k``: seconds per training epoch on ML-100K with the packaged defaults (privacy on;
  an epoch = ceil(943 / 128) = 8 rounds) [<= 20 s on the 2-core machine];
* ``ratio``: a FedGNN epoch against an epoch of the same GNN trained centrally
  (``gnn-central``), measured one after the other in this process [<= 2];
* ``synthetic``: one epoch (ceil(70,000 / 128) = 547 rounds) over a synthetic problem the size of
  ML-10M: 70,000 clients, 10,000 items, 10M ratings, long-tailed user and item degrees
  [<= 15 min, <= 8 GiB peak resident memory]. Run it alone (peak memory is the process's).

    python bench/bench_fedgnn.py ml100k ratio [--threads 1]
    python bench/bench_fedgnn.py synthetic [--threads 2] [--device cuda]

Times exclude evaluation and dataset loading; expansion happens after 2 epochs, so none of
these epochs includes it (it is timed separately in ``ml100k``: one expansion on ML-100K).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shlex
import sys
import time

import numpy as np
import torch

from fedrec.algorithms import get_algorithm
from fedrec.config import build_config
from fedrec.data import Interactions, RatingDataset, load_dataset
from fedrec.federation.runtime import seed_everything


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


def build(algorithm: str, ds, device: str, **overrides):
    spec = get_algorithm(algorithm)
    cfg = build_config(spec.config_cls, algorithm, ds.name, overrides=overrides)
    seed_everything(cfg.seed)
    return spec.trainer(cfg, ds, torch.device(device)), cfg


def fedgnn_epoch(trainer, cfg, first_round: int = 1) -> float:
    per_epoch = trainer.job.server.rounds_per_epoch
    t0 = time.perf_counter()
    for rnd in range(first_round, first_round + per_epoch):
        trainer.train_round(rnd)
    return time.perf_counter() - t0


def synthetic_ml10m(users: int = 70_000, items: int = 10_000, ratings: int = 10_000_000,
                    seed: int = 0) -> RatingDataset:
    """ML-10M-sized ratings: user degrees log-normal (min 20, like ML-10M's 20-core users),
    item popularity Zipf-like (exponent ~1), half-star ratings from a rank-8 model plus noise."""
    rng = np.random.default_rng(seed)
    deg = rng.lognormal(mean=0.0, sigma=1.0, size=users)
    deg = 20 + deg / deg.sum() * (ratings - 20 * users)
    deg = np.minimum(np.round(deg).astype(np.int64), items // 2)
    pop = 1.0 / np.arange(1, items + 1) ** 0.8
    cdf = np.cumsum(pop[rng.permutation(items)])
    cdf /= cdf[-1]
    # Draw each user's items from the popularity law, drop repeated pairs, and draw again for
    # the users left short (a few passes reach the target degrees).
    keys = np.zeros(0, dtype=np.int64)
    need = deg.copy()
    for _ in range(8):
        uu = np.repeat(np.arange(users, dtype=np.int64), need)
        ii = np.searchsorted(cdf, rng.random(len(uu)))
        keys = np.unique(np.concatenate([keys, uu * items + ii]))
        need = np.maximum(deg - np.bincount(keys // items, minlength=users), 0)
        if need.sum() < 0.001 * ratings:
            break
    uu, ii = keys // items, keys % items
    p, q = rng.normal(size=(users, 8)), rng.normal(size=(items, 8))
    score = 3.5 + 0.35 * (p[uu] * q[ii]).sum(1) + rng.normal(scale=0.7, size=len(uu))
    vals = np.clip(np.round(score * 2) / 2, 0.5, 5.0).astype(np.float32)
    test = rng.random(len(uu)) < 0.1
    mk = lambda m: Interactions(uu[m], ii[m], vals[m])  # noqa: E731
    return RatingDataset(name="synthetic-ml10m", num_users=users, num_items=items,
                         train=mk(~test), test=mk(test), rating_min=0.5, rating_max=5.0)


def bench_ml100k(args) -> dict[str, float]:
    ds = load_dataset("ml-100k", args.data_dir)
    tr, cfg = build("fedgnn", ds, args.device)
    times = [fedgnn_epoch(tr, cfg, 1 + e * tr.job.server.rounds_per_epoch)
             for e in range(args.epochs)]
    t0 = time.perf_counter()
    tr.job.server.expand(tr.runtime)
    expand = time.perf_counter() - t0
    return {"ml100k_epoch_s_mean": float(np.mean(times)), "ml100k_epoch_s_min": min(times),
            "ml100k_expansion_s": expand, "rounds_per_epoch": tr.job.server.rounds_per_epoch}


def bench_ratio(args) -> dict[str, float]:
    ds = load_dataset("ml-100k", args.data_dir)
    fed, fcfg = build("fedgnn", ds, args.device)
    # The same federated job without the LDP machinery (no pseudo items, no noise; clipping
    # kept): what federating the computation costs apart from what privacy costs.
    bare, bcfg = build("fedgnn", ds, args.device, pseudo_items=0, laplace=0.0)
    cen, _ = build("gnn-central", ds, args.device, dim=fcfg.dim, gnn=fcfg.gnn)
    f_times, b_times, c_times = [], [], []
    for e in range(args.epochs):  # interleaved, so load changes hit all alike
        first = 1 + e * fed.job.server.rounds_per_epoch
        f_times.append(fedgnn_epoch(fed, fcfg, first))
        b_times.append(fedgnn_epoch(bare, bcfg, first))
        t0 = time.perf_counter()
        cen.train_round(e + 1)
        c_times.append(time.perf_counter() - t0)
    f, b, c = (float(np.median(x)) for x in (f_times, b_times, c_times))
    return {"fedgnn_epoch_s": f, "fedgnn_no_ldp_epoch_s": b, "central_epoch_s": c,
            "ratio": f / c, "ratio_no_ldp": b / c}


def bench_synthetic(args) -> dict[str, float]:
    t0 = time.perf_counter()
    ds = synthetic_ml10m()
    gen_s = time.perf_counter() - t0
    deg = np.bincount(ds.train.users)
    tr, cfg = build("fedgnn", ds, args.device)
    rounds = math.ceil(ds.num_users / cfg.clients_per_round)
    epoch = fedgnn_epoch(tr, cfg)
    return {"synthetic_ratings": len(ds.train) + len(ds.test),
            "synthetic_user_degree_median": float(np.median(deg)),
            "synthetic_user_degree_max": int(deg.max()),
            "synthetic_generate_s": gen_s, "synthetic_rounds": rounds,
            "synthetic_epoch_s": epoch, "synthetic_peak_rss_gib": peak_rss_gib()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tasks", nargs="+", choices=["ml100k", "ratio", "synthetic"])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out: dict[str, float] = {"threads": args.threads, "device": args.device}
    for task in args.tasks:
        out.update({"ml100k": bench_ml100k, "ratio": bench_ratio,
                    "synthetic": bench_synthetic}[task](args))
    out["peak_rss_gib"] = peak_rss_gib()
    for k, v in out.items():
        print(f"{k:32s} {v:.4g}" if isinstance(v, float) else f"{k:32s} {v}")
    if args.json:  # the command first: the benchmarks page shows it over the figures
        with open(args.json, "w") as fh:
            json.dump({"command": shlex.join(["python", "bench/bench_fedgnn.py", *sys.argv[1:]]),
                       **out}, fh, indent=2)


if __name__ == "__main__":
    main()
