"""The one-run audit of the DP aggregate (:mod:`fedrec.privacy.audit`) over several
configurations: audited lower bound beside the accounted epsilon, with the mechanism on and with
its noise removed (the mutation a noise or accounting bug amounts to).

    OMP_NUM_THREADS=1 python bench/bench_dp_audit.py [--out results/dp-audit]

1000 canaries (each included with probability 1/2) in 20,000 dimensions, clip 1; guesses
k = 50, 100, 250 each way at confidence 95% overall. The accounted figure is the server-side
one (no amplification: every canary is in every round it is included in).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from fedrec.privacy.audit import audit_aggregate
from fedrec.reproduce.bench_pages import write_bench_page

ROOT = Path(__file__).resolve().parent.parent

AUDIT = {"canaries": 1000, "dim": 20000, "clip": 1.0, "ks": (50, 100, 250)}
CONFIGS = [("distributed", 1.0, 1, 1.0), ("distributed", 2.0, 1, 1.0),
           ("distributed", 3.0, 4, 1.0), ("distributed", 2.0, 1, 0.6),
           ("distributed", 0.5, 1, 1.0), ("central", 1.0, 1, 1.0), ("central", 2.0, 1, 1.0)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/dp-audit")
    args = ap.parse_args()
    rows = []
    for seed, (mechanism, z, rounds, threshold) in enumerate(CONFIGS):
        on = audit_aggregate(mechanism, noise_multiplier=z, rounds=rounds, threshold=threshold,
                             rng=np.random.default_rng(seed), **AUDIT)
        off = audit_aggregate(mechanism, noise_multiplier=z, rounds=rounds, threshold=threshold,
                              rng=np.random.default_rng(seed), remove_noise=True, **AUDIT)
        acc = on.accounted_epsilon
        rows.append({"mechanism": mechanism, "noise_multiplier": z, "rounds": rounds,
                     "noise_sized_for": threshold, "accounted_epsilon": acc,
                     "audited_lower_bound": on.epsilon_lower_bound,
                     "audited_without_noise": off.epsilon_lower_bound})
        print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit.json").write_text(json.dumps(rows, indent=1) + "\n")
    if out.resolve() == (ROOT / "results" / "dp-audit").resolve():
        print(f"page: {write_bench_page('results/dp-audit', ROOT)}")


if __name__ == "__main__":
    main()
