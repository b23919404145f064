"""The same job on fedrec's simulator, in Flower's simulation engine and on a Flower deployment.

For each algorithm (FCF, FedGNN) on the first ``--users`` users of ML-100K, ``--rounds``
rounds, evaluation in every round:

* ``simulator``: fedrec's in-process runtime (:func:`fedrec.engines.common.simulate`);
* ``flower (warm)``: ``fedrec deploy``: 1 SuperLink + ``--nodes`` SuperNodes (+ FedGNN's third
  party) on 127.0.0.1, each SuperNode with one long-lived ClientApp executor;
* ``flower (subprocess)`` (``--executors warm,subprocess``): Flower's default executor, a new
  ClientApp process per message;
* ``flower-sim``: the same ServerApp and ClientApp in Flower's simulation engine
  (:mod:`fedrec.engines.flower.simulation`: ``flwr.simulation.run_simulation``, Ray backend,
  ``--nodes`` virtual client SuperNodes + FedGNN's third party, ``--sim-actors`` Ray actors of one
  CPU each, default one per virtual SuperNode). Needs ``flwr[simulation]`` (Ray); without it
  the row says so.

``--engines`` picks among ``simulator``, ``flower-sim`` and ``deploy`` (the deployment, once per
``--executors`` entry); default all three.

Printed as a markdown table: seconds per round (training + evaluation, measured by the
orchestrator; the deployment's start-up -- processes, imports, connection -- is its own
column; for flower-sim, Ray's and its actors' start-up), ledger bytes per round (the
protocol's bytes: each client's copy of a broadcast counts; identical on every engine) and,
for Flower, the bytes of the Flower messages per round (serialised objects; one broadcast copy
per SuperNode). ``wall`` is the whole run as a user
sees it. ``max |Δ| vs simulator`` is the largest difference of a final metric (and, in brackets,
of the ledger's bytes per round) from the simulator's row.

    FEDREC_DATA=/work/shared/datasets python bench/bench_engines.py [--users 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time

import torch

from fedrec.engines.common import simulate
from fedrec.engines.flower.deploy import deploy
from fedrec.engines.flower.simulation import simulate_on_flower
from fedrec.options import RunOptions

JOBS = {
    "fcf": {"dim": 16},
    "fedgnn": {"dim": 16, "clients_per_round": 32, "pseudo_items": 100, "neighbours": 8,
               "expand_after": 0},
}


def per_round(history: list[dict], key) -> float:
    return sum(key(h) for h in history) / len(history)


def flower_row(alg: str, engine: str, res: dict, wall: float, rounds: int) -> dict:
    wire = res["engine"]["wire"]
    keys = [str(r) for r in range(1, rounds + 1)]
    flower = sum(wire["sent"].get(r, 0) + wire["received"].get(r, 0) for r in keys) / rounds
    round_s = per_round(res["history"], lambda h: h["time_s"])
    return {"algorithm": alg, "engine": engine, "wall_s": wall,
            "setup_s": wall - round_s * rounds, "round_s": round_s,
            "ledger_bytes": per_round(res["history"],
                                      lambda h: h["communication"]["bytes_total"]),
            "flower_bytes": flower, "final": res["final"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--algorithms", default="fcf,fedgnn")
    p.add_argument("--engines", default="simulator,flower-sim,deploy",
                   help="comma list of simulator, flower-sim, deploy")
    p.add_argument("--executors", default="warm",
                   help="deploy: comma list of warm, subprocess")
    p.add_argument("--sim-actors", type=int, default=None,
                   help="flower-sim: Ray actors (default: one per virtual SuperNode)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args()
    torch.set_num_threads(1)
    engines = args.engines.split(",")
    unknown = set(engines) - {"simulator", "flower-sim", "deploy"}
    if unknown:
        p.error(f"unknown engines {sorted(unknown)}")
    have_ray = importlib.util.find_spec("ray") is not None
    flower = RunOptions(engine="flower", max_users=args.users, nodes=args.nodes, progress=False)
    rows = []
    for alg in args.algorithms.split(","):
        ov = dict(JOBS[alg], rounds=args.rounds, eval_every=1)
        if "simulator" in engines:
            t = time.perf_counter()
            sim = simulate(alg, "ml-100k", data_dir=args.data_dir, overrides=ov,
                           options=RunOptions(max_users=args.users, progress=False)).to_json()
            rows.append({"algorithm": alg, "engine": "simulator",
                         "wall_s": time.perf_counter() - t, "setup_s": 0.0,
                         "round_s": per_round(sim["history"], lambda h: h["time_s"]),
                         "ledger_bytes": per_round(
                             sim["history"], lambda h: h["communication"]["bytes_total"]),
                         "flower_bytes": None, "final": sim["final"]})
        if "flower-sim" in engines:
            if not have_ray:
                rows.append({"algorithm": alg, "engine": "flower-sim", "missing": True})
            else:
                t = time.perf_counter()
                res = simulate_on_flower(alg, "ml-100k", data_dir=args.data_dir, overrides=ov,
                                         options=flower, actors=args.sim_actors)
                rows.append(flower_row(alg, f"flower-sim ({res['engine']['actors']} actors)",
                                       res, time.perf_counter() - t, args.rounds))
        if "deploy" in engines:
            for ex in args.executors.split(","):
                t = time.perf_counter()
                res = deploy(alg, "ml-100k", data_dir=args.data_dir, overrides=ov,
                             options=RunOptions.of(flower, executor=ex, straggler_timeout=0.0))
                rows.append(flower_row(alg, f"flower ({ex})", res, time.perf_counter() - t,
                                       args.rounds))
    print(f"\nML-100K, first {args.users} users, {args.rounds} rounds, {args.nodes} client "
          f"SuperNodes on 127.0.0.1 or virtual in Flower's simulation engine (FedGNN: + 1 "
          "third-party SuperNode)\n")
    print("| algorithm | engine | s / round | start-up s | wall s | ledger MiB / round "
          "| Flower msg MiB / round | final RMSE | max |Δ| vs simulator |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    ref = {r["algorithm"]: r for r in rows if r["engine"] == "simulator"}
    for r in rows:
        if r.get("missing"):
            print(f"| {r['algorithm']} | {r['engine']} | not run: needs flwr[simulation] (Ray) "
                  "| | | | | | |")
            continue
        fb = "-" if r["flower_bytes"] is None else f"{r['flower_bytes'] / 2**20:.2f}"
        base = ref.get(r["algorithm"])
        if base is None or base is r:
            diff = "-"
        else:
            d = max((abs(float(v) - float(base["final"].get(k, float("nan"))))
                     for k, v in r["final"].items()), default=0.0)
            diff = f"{d:.1e} ({abs(r['ledger_bytes'] - base['ledger_bytes']):.0f} B)"
        print(f"| {r['algorithm']} | {r['engine']} | {r['round_s']:.2f} | {r['setup_s']:.1f} | "
              f"{r['wall_s']:.1f} | {r['ledger_bytes'] / 2**20:.2f} | {fb} | "
              f"{r['final'].get('rmse', float('nan')):.6f} | {diff} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2, default=float)


if __name__ == "__main__":
    main()
