"""Torch threads on a shared machine: seconds per round of the README's main command with 1 and
all cores' threads, alone and beside competing single-threaded processes, and with OpenMP's
passive wait policy.

    python bench/bench_threads.py [--rounds 12] [--competitors 0 1] [--out results/threads.json]

Each cell runs ``fedrec run fedgnn --dataset ml-100k --set rounds=R --set eval_every=R`` in a
fresh process (torch's OpenMP pool is set up once per process) and reports the median of the
rounds' ``time_s`` after the first. A competitor is a busy Python loop (one core's worth of
work, as another experiment on the machine would be). ``--threads`` absent means the CLI's
default.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY = "import time\nt = time.time()\nwhile time.time() - t < 3600: pass\n"


def one_run(threads: int | None, policy: str | None, rounds: int, data_dir: str | None
            ) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    else:
        env.pop("OMP_WAIT_POLICY", None)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "fedrec.cli.main"]
        if data_dir:
            cmd += ["--data-dir", data_dir]
        cmd += ["run", "fedgnn", "--dataset", "ml-100k", "--set", f"rounds={rounds}",
                "--set", f"eval_every={rounds}", "--out", out, "--quiet"]
        if threads is not None:
            cmd += ["--threads", str(threads)]
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        res = json.loads((Path(out) / "results.json").read_text())
    per_round = [h["time_s"] for h in res["history"][1:]]
    return {"s_per_round": statistics.median(per_round), "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--competitors", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="thread counts to try (default: 1 and the cores available)")
    ap.add_argument("--policies", nargs="+", default=["default", "PASSIVE"])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    threads = args.threads or sorted({1, cores})
    rows = []
    for n_comp in args.competitors:
        procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(n_comp)]
        try:
            for policy in args.policies:
                for t in threads:
                    cell = one_run(t, None if policy == "default" else policy, args.rounds,
                                   args.data_dir)
                    row = {"competitors": n_comp, "threads": t, "omp_wait_policy": policy,
                           **cell}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            for p in procs:
                p.kill()
    if args.out:
        Path(args.out).write_text(json.dumps({
            "command": "python bench/bench_threads.py " + " ".join(sys.argv[1:]),
            "cores": cores, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
