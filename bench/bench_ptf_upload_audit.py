"""The one-run audit of PTF-FedRec's ``upload_dp: gaussian`` uploads
(:func:`fedrec.algorithms.methods.ptf_fedrec.upload_dp.audit_uploads`): audited lower bound
beside the accounted epsilon, with the noise on and removed, at the plans of the measured runs
in ``docs/ptf-fedrec.md`` (m = 100 items, z solved for the target over 20 uploads).

    OMP_NUM_THREADS=1 python bench/bench_ptf_upload_audit.py [--canaries 1000]
"""

from __future__ import annotations

import argparse

from fedrec.algorithms.methods.ptf_fedrec.upload_dp import (
    UploadPlan,
    audit_uploads,
    solve_upload_noise,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--canaries", type=int, default=1000)
    ap.add_argument("--uploads", type=int, default=20)
    ap.add_argument("--items", type=int, default=100)
    args = ap.parse_args()
    print("| target epsilon | z | accounted | audited lower bound | audited without noise |")
    print("|---|---|---|---|---|")
    for target in (1.0, 8.0):
        z = solve_upload_noise(target, args.uploads, 1e-5)
        plan = UploadPlan(args.items, z, 1e-5, args.uploads)
        on = audit_uploads(plan, args.canaries, args.uploads, seed=0)
        off = audit_uploads(plan, args.canaries, args.uploads, seed=0, remove_noise=True)
        print(f"| {target:g} | {z:.4g} | {on.accounted_epsilon:.4g} | "
              f"{on.epsilon_lower_bound:.3g} | {off.epsilon_lower_bound:.3g} |")


if __name__ == "__main__":
    main()
