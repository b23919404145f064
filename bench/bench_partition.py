"""Partitioning a dataset among its users: seconds per call (median of repeats).

    python bench/bench_partition.py [--dataset gowalla] [--repeats 5]

Gowalla (29,858 users, 1.03M rows) took under 1.5 s when this was a timed test; a timed unit
test fails on a busy machine, so the figure lives here.
"""

from __future__ import annotations

import argparse
import statistics
import time

from fedrec.data import load_dataset, partition_by_user


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="gowalla")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    ds = load_dataset(args.dataset, args.data_dir, download=True)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        clients = partition_by_user(ds)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"{args.dataset}: {len(clients):,} clients, partition median {median:.3f} s "
          f"(min {min(times):.3f}, {args.repeats} repeats)")


if __name__ == "__main__":
    main()
