"""How dp-accounting's PLD copes with Laplace releases of large epsilon (FedGNN's whole uploads):
seconds to compose ``k`` releases of per-release epsilon ``eps`` and the result next to basic
composition ``k * eps``, each case in a child process under a time and memory limit.

    OMP_NUM_THREADS=1 python bench/bench_pld_large_epsilon.py [--timeout 100] \
        [--cases 1:640,10:10,30:100,50:100,50:1,200:1,1000:1]

A case ``eps:k[:interval]`` may give dp-accounting's value discretisation interval (default
1e-4). The figures quoted in :mod:`fedrec.privacy.accounting` come from this script.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

CHILD = """
import sys, dp_accounting
from dp_accounting.pld import PLDAccountant
eps, k, interval = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
acct = PLDAccountant(value_discretization_interval=interval)
acct.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1 / eps), k))
print(acct.get_epsilon(1e-5))
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=100.0)
    ap.add_argument("--cases", default="1:640,10:10,30:100,50:100,50:1,200:1,1000:1")
    args = ap.parse_args()
    print("| eps per release | releases | interval | PLD eps (delta 1e-5) | basic | seconds |")
    print("|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        eps, k, *rest = case.split(":")
        interval = rest[0] if rest else "1e-4"
        t0 = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, "-c", CHILD, eps, k, interval],
                                 capture_output=True, text=True, timeout=args.timeout,
                                 preexec_fn=_limit_memory)
            res = (out.stdout.strip() if out.returncode == 0
                   else out.stderr.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            res = f"did not finish in {args.timeout:g} s"
        print(f"| {eps} | {k} | {interval} | {res} | {float(eps) * int(k):g} "
              f"| {time.perf_counter() - t0:.1f} |")


if __name__ == "__main__":
    main()
