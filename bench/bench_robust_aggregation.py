"""Time of each defense of :mod:`fedrec.federation.aggregation` on one cohort's sparse item-row
updates, the call FCF's server makes once a round (:func:`robust_sum`).

    FEDREC_DATA=../shared/datasets OMP_NUM_THREADS=1 python bench/bench_robust_aggregation.py
    OMP_NUM_THREADS=1 python bench/bench_robust_aggregation.py --synthetic 1000 100

The cohort's row ids are, by default, every ML-100K user's training items (943 clients, the
whole population in one round); ``--synthetic N K`` draws ``N`` clients of ``K`` distinct items
each from 1682 items with popularity ``1 / rank^0.8``. Each row is ``--dim`` standard normal
values (what Krum's and the per-item rules' cost depends on is the rows' sharing, not their
values). Prints, per defense, the best of ``--repeat`` wall-clock times in seconds.
"""

from __future__ import annotations

import argparse
import time

import torch

from fedrec.federation.aggregation import robust_sum

PARAMS = {"none": {}, "norm_bound": {"bound": 1.0}, "median": {}, "trimmed_mean": {},
          "krum": {"f": 10}, "item_median": {}, "item_trimmed_mean": {},
          "item_median (bound_rows)": {"bound_rows": True}}


def cohort(args: argparse.Namespace, gen: torch.Generator) -> tuple[list[torch.Tensor], int]:
    """Each client's item ids, and the number of items."""
    if args.synthetic:
        clients, k = args.synthetic
        weight = 1.0 / torch.arange(1, 1683, dtype=torch.float64) ** 0.8
        return [torch.multinomial(weight, k, generator=gen) for _ in range(clients)], 1682
    from fedrec.data import load_dataset

    ds = load_dataset("ml-100k", args.data_dir)
    users, items = torch.as_tensor(ds.train.users), torch.as_tensor(ds.train.items)
    return [items[users == u] for u in torch.unique(users).tolist()], ds.num_items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic", type=int, nargs=2, metavar=("CLIENTS", "ROWS"))
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    ids, num_rows = cohort(args, gen)
    rows = [torch.randn(len(i), args.dim, generator=gen) for i in ids]
    shared = torch.bincount(torch.cat(ids), minlength=num_rows).double()
    print(f"{len(ids)} clients, {sum(map(len, ids))} rows of {args.dim} over {num_rows} items; "
          f"sum over items of contributors² {int((shared ** 2).sum())}")
    for label, params in PARAMS.items():
        name = label.split()[0]
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            robust_sum(name, ids, rows, num_rows, params)
            best = min(best, time.perf_counter() - start)
        print(f"{label:26s} {best:.3f} s")


if __name__ == "__main__":
    main()
