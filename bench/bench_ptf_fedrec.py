"""PTF-FedRec's full run: wall time, each round's time split and peak memory.

    FEDREC_DATA=../shared/datasets python bench/bench_ptf_fedrec.py ml-100k [gowalla]
        [--out bench-runs/ptf-fedrec] [--threads 1] [--json FILE]

Runs ``fedrec run ptf-fedrec --dataset D`` with the packaged settings (20 rounds, seed 0;
Gowalla's own section of the config) into ``OUT/D/ptf-fedrec/seed-0`` (the layout of
``fedrec reproduce ptf-fedrec``: ``--out results/ptf-fedrec/runs/table`` measures the
reproduction's own runs), resuming an interrupted run from its checkpoint (its wall time then
adds the interrupted part), and prints the wall time of the whole run (evaluation
included), the mean seconds per round of client training, server training and dispersal, and
the process's peak resident memory. A run already complete there is reported, not re-run.
Targets (issue): ML-100K at most 10 min; Gowalla reported (at most 90 min).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import torch

from fedrec.experiment import RESULTS_NAME, run_experiment
from fedrec.federation.checkpoint import CHECKPOINT_NAME
from fedrec.options import RunOptions
from fedrec.reproduce.ptf_fedrec import time_split


def bench(dataset: str, out: Path, data_dir: str | None) -> dict[str, float]:
    path = out / RESULTS_NAME
    done = path.is_file() and json.loads(path.read_text()).get("status") == "complete"
    if not done:
        run_experiment("ptf-fedrec", dataset, data_dir=data_dir, out_dir=out,
                       options=RunOptions(progress=False,
                                          resume=(out / CHECKPOINT_NAME).is_file()))
    run = json.loads(path.read_text())
    return {"rounds": run["config"]["rounds"], "clients": run["final"].get("client_eval_clients"),
            "wall_s": run["wall_time_s"], **time_split(run),
            "peak_rss_mib": run.get("peak_rss_mib", float("nan")),
            "Recall@20": run["final"]["Recall@20"], "NDCG@20": run["final"]["NDCG@20"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--out", default="bench-runs/ptf-fedrec")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    res = {d: bench(d, Path(args.out) / d / "ptf-fedrec" / "seed-0", args.data_dir)
           for d in args.datasets}
    print("| dataset | rounds | wall min | clients s/round | server s/round | dispersal s/round "
          "| peak RSS MiB | Recall@20 |")
    print("|---|---|---|---|---|---|---|---|")
    for d, r in res.items():
        print(f"| {d} | {r['rounds']} | {r['wall_s'] / 60:.1f} | {r['time_clients_s']:.1f} | "
              f"{r['time_server_s']:.1f} | {r['time_dispersal_s']:.1f} | "
              f"{r['peak_rss_mib']:,.0f} | {r['Recall@20']:.4f} |")
    if args.json:  # the command first: the benchmarks page shows it over the figures
        command = shlex.join(["python", "bench/bench_ptf_fedrec.py", *sys.argv[1:]])
        Path(args.json).write_text(json.dumps({"command": command, **res}, indent=1))


if __name__ == "__main__":
    main()
