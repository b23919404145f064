"""``fedrec deploy``: run an algorithm on a local Flower deployment (see
:mod:`fedrec.engines.flower.deploy`) and print what ``fedrec run`` prints.

    fedrec deploy ALGORITHM --dataset NAME [--nodes N] [--max-users N] [--set key=value ...]
                  [--config FILE] [--out DIR] [--compare] [--timeout S] [--straggler-timeout S]
                  [--experimenter-oracle]

``--compare`` also runs the same job in the in-process simulator and prints both.
``--experimenter-oracle`` lets the ServerApp load the held-out data to compute the metrics of a
model that never leaves the server (PTF-FedRec), as the simulator's experimenter does; it is
never used for training (:mod:`fedrec.engines.flower.server`). Centralized algorithms have
nothing to deploy and are refused.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from fedrec.cli.summary import (
    add_client_secret_option,
    client_secrets_of,
    format_bytes,
    summary_rows,
    table,
)


def add_deploy_parser(sub: Any) -> None:
    dep = sub.add_parser(
        "deploy", help="run an algorithm on Flower: a SuperLink and N SuperNodes on 127.0.0.1")
    dep.add_argument("algorithm")
    dep.add_argument("--dataset", required=True)
    dep.add_argument("--config", help="YAML file overriding the algorithm's defaults")
    dep.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one option")
    dep.add_argument("--nodes", type=int, default=3, help="client SuperNodes (default 3); "
                     "service parties (FedGNN's third party) get one SuperNode each on top")
    dep.add_argument("--max-users", type=int, default=None,
                     help="keep only the first N users (a slice of the dataset)")
    dep.add_argument("--out", help="directory for results.json, progress.jsonl, server.log")
    dep.add_argument("--compare", action="store_true",
                     help="also run the in-process simulator on the same job and compare")
    dep.add_argument("--timeout", type=float, default=1800.0, help="whole run, seconds")
    dep.add_argument("--call-timeout", type=float, default=300.0,
                     help="longest wait for one step's replies, seconds")
    dep.add_argument("--straggler-timeout", type=float, default=60.0,
                     help="once a reply is in, longest wait for the others (0 = call-timeout)")
    dep.add_argument("--executor", choices=["warm", "subprocess"], default="warm",
                     help="warm: one long-lived ClientApp process per SuperNode (fast); "
                     "subprocess: Flower's default, a process per message")
    dep.add_argument("--experimenter-oracle", action="store_true",
                     help="let the ServerApp load the held-out data as the experimenter's "
                     "oracle, only to score a model that stays on the server and attacks "
                     "(PTF-FedRec's server-model metrics and top-guess attack); never used for "
                     "training")
    dep.add_argument("--keep-workdir", action="store_true", help="keep the temp dir and logs")
    dep.add_argument("--quiet", action="store_true", help="no progress lines")
    add_client_secret_option(dep)
    dep.set_defaults(func=cmd_deploy)


def max_relative_difference(a: dict[str, float], b: dict[str, float]) -> float:
    keys = set(a) & set(b)
    return max((abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in keys), default=math.nan)


def cmd_deploy(args: argparse.Namespace) -> int:
    import torch

    from fedrec.engines.flower.deploy import deploy

    torch.set_num_threads(1)
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"fedrec deploy: {m}",
                                                                file=sys.stderr, flush=True))
    # One root for the deployment and, with --compare, the simulator: both then draw the same.
    secrets = client_secrets_of(args)
    result = deploy(
        args.algorithm, args.dataset, data_dir=args.data_dir, config_file=args.config,
        overrides=args.set or [], max_users=args.max_users, nodes=args.nodes, out_dir=args.out,
        timeout=args.timeout, call_timeout=args.call_timeout,
        straggler_timeout=args.straggler_timeout, executor=args.executor,
        keep_workdir=args.keep_workdir, experimenter_oracle=args.experimenter_oracle, log=say,
        client_secrets=secrets)
    eng = result["engine"]
    rows = [("engine", f"flower (1 SuperLink, {eng['nodes']} SuperNodes on 127.0.0.1, "
                       f"{eng['clients']} clients)")]
    rows += summary_rows(result)
    wire = sum(eng["wire"]["sent"].values()) + sum(eng["wire"]["received"].values())
    rows.append(("flower message bytes", format_bytes(wire)))
    if eng["dead_nodes"]:
        rows.append(("SuperNodes lost", str(len(eng["dead_nodes"]))))
    if args.out:
        rows.append(("results", os.path.join(args.out, "results.json")))
    print(table(rows))
    if args.compare:
        from fedrec.engines.common import simulate

        say("running the same job in the in-process simulator")
        sim = simulate(args.algorithm, args.dataset, data_dir=args.data_dir,
                       config_file=args.config, overrides=args.set or [],
                       max_users=args.max_users, client_secrets=secrets).to_json()
        print("\nin-process simulator, same job:")
        print(table(summary_rows(sim)))
        only_sim = sorted(set(sim["final"]) - set(result["final"]))
        if only_sim:
            print(f"\n  only in the simulator: {', '.join(only_sim)} (the experimenter's metrics;"
                  " pass --experimenter-oracle to compute them on the deployment)")
        diff = max_relative_difference(result["final"], sim["final"])
        same_bytes = result["communication"]["totals"] == sim["communication"]["totals"]
        print(f"\n  max relative difference of final metrics: {diff:.3g}; "
              f"ledger totals {'identical' if same_bytes else 'DIFFER'}")
    return 0
