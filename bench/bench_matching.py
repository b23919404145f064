"""Keyed item tokens for FedGNN's private matching: seconds to tokenize a million item ids.

    python bench/bench_matching.py [--ids 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fedrec.privacy.matching import ItemTokenizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    ids = np.random.default_rng(0).integers(0, 5_000_000, args.ids)
    tok = ItemTokenizer(ItemTokenizer.generate_key())
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        tok.tokens(ids)
        times.append(time.perf_counter() - start)
    print(f"{args.ids:,} ids: median {statistics.median(times):.3f} s, min {min(times):.3f} s")


if __name__ == "__main__":
    main()
