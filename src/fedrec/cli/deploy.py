"""``fedrec deploy``: run an algorithm on a local Flower deployment (see
:mod:`fedrec.engines.flower.deploy`) and print what ``fedrec run`` prints.

    fedrec deploy ALGORITHM --dataset NAME [--nodes N] [--max-users N] [--set key=value ...]
                  [--config FILE] [--out DIR] [--overwrite] [--compare] [--timeout S]
                  [--call-timeout S] [--straggler-timeout S] [--connect-timeout S]
                  [--executor warm|subprocess] [--experimenter-oracle] [--keep-workdir]
                  [--quiet] [--client-secret HEX]

The run options' defaults and help are :class:`fedrec.options.RunOptions`'s.

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

from fedrec.cli.options import (
    add_client_secret_option,
    add_preset_option,
    add_run_option,
    run_options_of,
)
from fedrec.cli.outdir import out_dir_for
from fedrec.cli.summary import summary_rows, table
from fedrec.options import EXECUTORS


def add_deploy_parser(sub: Any) -> None:
    dep = sub.add_parser(
        "deploy", help="run an algorithm on Flower: a SuperLink and N SuperNodes on 127.0.0.1")
    dep.add_argument("algorithm")
    dep.add_argument("--dataset", required=True)
    dep.add_argument("--config", help="YAML file overriding the algorithm's defaults")
    add_preset_option(dep)
    dep.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one option")
    add_run_option(dep, "nodes", metavar="N")
    add_run_option(dep, "max_users", metavar="N")
    dep.add_argument("--out", help="directory for results.json, progress.jsonl, server.log "
                     "(default: a new runs/ALGORITHM-DATASET-YYYYmmdd-HHMMSS/ here)")
    add_run_option(dep, "overwrite")
    dep.add_argument("--compare", action="store_true",
                     help="also run the in-process simulator on the same job and compare")
    add_run_option(dep, "timeout", metavar="S")
    add_run_option(dep, "call_timeout", metavar="S")
    add_run_option(dep, "straggler_timeout", metavar="S")
    add_run_option(dep, "connect_timeout", metavar="S")
    add_run_option(dep, "executor", choices=EXECUTORS)
    add_run_option(dep, "experimenter_oracle")
    add_run_option(dep, "keep_workdir")
    add_run_option(dep, "progress")
    add_client_secret_option(dep)
    dep.set_defaults(func=cmd_deploy)


def max_relative_difference(a: dict[str, float], b: dict[str, float]) -> float:
    keys = set(a) & set(b)
    return max((abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in keys), default=math.nan)


def cmd_deploy(args: argparse.Namespace) -> int:
    import torch

    from fedrec.engines.flower.deploy import deploy
    from fedrec.reproduce.report import format_bytes

    torch.set_num_threads(1)
    # One set of options, and so one client root, for the deployment and, with --compare, the
    # simulator: both then draw the same.
    options = run_options_of(args, "flower")
    with out_dir_for(args.out, args.algorithm, args.dataset) as out:
        result = deploy(args.algorithm, args.dataset, data_dir=args.data_dir,
                        config_file=args.config, overrides=args.set or [], out_dir=out,
                        options=options, preset=args.preset)
    eng = result["engine"]
    rows = [("engine", f"flower (1 SuperLink, {eng['nodes']} SuperNodes on 127.0.0.1, "
                       f"{eng['clients']} clients)")]
    rows += summary_rows(result)
    wire = sum(eng["wire"]["sent"].values()) + sum(eng["wire"]["received"].values())
    rows.append(("flower message bytes", format_bytes(wire)))
    if eng["dead_nodes"]:
        rows.append(("SuperNodes lost", str(len(eng["dead_nodes"]))))
    rows.append(("results", os.path.join(str(out), "results.json")))
    print(table(rows))
    if args.compare:
        from fedrec.engines.common import simulate

        if options.progress:
            print("fedrec deploy: running the same job in the in-process simulator",
                  file=sys.stderr, flush=True)
        sim = simulate(args.algorithm, args.dataset, data_dir=args.data_dir,
                       config_file=args.config, overrides=args.set or [],
                       options=options, preset=args.preset).to_json()
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
