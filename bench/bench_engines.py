"""The same job on fedrec's simulator and on a Flower deployment on loopback.

For each algorithm (FCF, FedGNN) on the first ``--users`` users of ML-100K, ``--rounds``
rounds, evaluation in every round:

* ``simulator``: fedrec's in-process runtime (:func:`fedrec.engines.common.simulate`);
* ``flower (warm)``: ``fedrec deploy``: 1 SuperLink + ``--nodes`` SuperNodes (+ FedGNN's third
  party) on 127.0.0.1, each SuperNode with one long-lived ClientApp executor;
* ``flower (subprocess)`` (``--executors warm,subprocess``): Flower's default executor, a new
  ClientApp process per message;
* Flower's simulation engine is not run: it needs ``flwr[simulation]`` (Ray), which this
  project does not install.

Printed as a markdown table: seconds per round (training + evaluation, measured by the
orchestrator; the deployment's start-up -- processes, imports, connection -- is its own
column), ledger bytes per round (the protocol's bytes: each client's copy of a broadcast
counts; identical on every engine) and, for Flower, the bytes of the Flower messages per round
(serialised objects; one broadcast copy per SuperNode). ``wall`` is the whole run as a user
sees it.

    FEDREC_DATA=/work/shared/datasets python bench/bench_engines.py [--users 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from fedrec.engines.common import simulate
from fedrec.engines.flower.deploy import deploy

JOBS = {
    "fcf": {"dim": 16},
    "fedgnn": {"dim": 16, "clients_per_round": 32, "pseudo_items": 100, "neighbours": 8,
               "expand_after": 0},
}


def per_round(history: list[dict], key) -> float:
    return sum(key(h) for h in history) / len(history)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--algorithms", default="fcf,fedgnn")
    p.add_argument("--executors", default="warm", help="comma list of warm, subprocess")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = []
    for alg in args.algorithms.split(","):
        ov = dict(JOBS[alg], rounds=args.rounds, eval_every=1)
        t = time.perf_counter()
        sim = simulate(alg, "ml-100k", data_dir=args.data_dir, overrides=ov,
                       max_users=args.users).to_json()
        rows.append({"algorithm": alg, "engine": "simulator", "wall_s": time.perf_counter() - t,
                     "setup_s": 0.0,
                     "round_s": per_round(sim["history"], lambda h: h["time_s"]),
                     "ledger_bytes": per_round(sim["history"],
                                               lambda h: h["communication"]["bytes_total"]),
                     "flower_bytes": None, "final": sim["final"]})
        for ex in args.executors.split(","):
            t = time.perf_counter()
            res = deploy(alg, "ml-100k", data_dir=args.data_dir, overrides=ov,
                         max_users=args.users, nodes=args.nodes, executor=ex,
                         straggler_timeout=0.0)
            wall = time.perf_counter() - t
            wire = res["engine"]["wire"]
            rounds = [str(r) for r in range(1, args.rounds + 1)]
            flower = sum(wire["sent"].get(r, 0) + wire["received"].get(r, 0)
                         for r in rounds) / args.rounds
            round_s = per_round(res["history"], lambda h: h["time_s"])
            rows.append({"algorithm": alg, "engine": f"flower ({ex})", "wall_s": wall,
                         "setup_s": wall - round_s * args.rounds, "round_s": round_s,
                         "ledger_bytes": per_round(
                             res["history"], lambda h: h["communication"]["bytes_total"]),
                         "flower_bytes": flower, "final": res["final"]})
    print(f"\nML-100K, first {args.users} users, {args.rounds} rounds, {args.nodes} client "
          f"SuperNodes on 127.0.0.1 (FedGNN: + 1 third-party SuperNode)\n")
    print("| algorithm | engine | s / round | start-up s | wall s | ledger MiB / round "
          "| Flower msg MiB / round | final RMSE |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        fb = "-" if r["flower_bytes"] is None else f"{r['flower_bytes'] / 2**20:.2f}"
        print(f"| {r['algorithm']} | {r['engine']} | {r['round_s']:.2f} | {r['setup_s']:.1f} | "
              f"{r['wall_s']:.1f} | {r['ledger_bytes'] / 2**20:.2f} | {fb} | "
              f"{r['final'].get('rmse', float('nan')):.6f} |")
    print("| - | Flower simulation engine | not run: needs flwr[simulation] (Ray), not "
          "installed | | | | | |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2, default=float)


if __name__ == "__main__":
    main()
