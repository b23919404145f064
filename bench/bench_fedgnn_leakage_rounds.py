"""Cross-round leakage of FedGNN's pseudo items: F1 against the number of uploads seen per client.

    FEDREC_DATA=/work/shared/datasets python bench/bench_fedgnn_leakage_rounds.py --threads 1 \
        [--rounds 100] [--max-users 200] [--clients-per-round 64] \
        [--modes per_round,fixed,fixed_coupled,fixed_copy] [--ldp on,off] \
        [--out results/fedgnn-leakage-rounds]

Runs FedGNN with its configured ML-100K settings (``configs/fedgnn.yaml``: M 1000, the tuned
learning rates, the graph expansion), overriding only ``pseudo_set``, the privacy (``on``: clip
0.1, Laplace 0.2, the packaged settings; ``off``: clip 0.1 and no noise, which trains with the
same learning rate) and the schedule. A :class:`fedrec.attacks.CrossRoundAttack` observes the
server's inbox over the whole run and scores, per client, the intersection, frequency and
row-consistency attacks after 1, 2, 5, 10, ... uploads of that client and over all of them
(threat model in its module). Uploads per client = rounds x clients per round / users, so a
slice of the users (``--max-users``: users 0..n-1, every item kept) gives many uploads per
client in few rounds. Prints, per (mode, privacy), the test RMSE after the last round (on the
sliced users); writes ``OUT.json`` with the command, that RMSE and, per upload count, each
attack's mean F1 over clients. With ``--out results/fedgnn-leakage-rounds`` the page
``results/fedgnn-leakage-rounds.md`` is written from it (as ``fedrec pages
results/fedgnn-leakage-rounds``, which runs nothing).

Cost: one round of 128 clients on all of ML-100K takes ~1 s on one core (``--threads 1``, idle
machine), so the issue's 160 x 128 schedule (~22 uploads per client) is ~3 minutes per setting
before the attack; the slice above gives 20 uploads per client in 80 rounds of 25. The
default statistics add one small SVD per upload (the shape evidence); the command in
``results/fedgnn-leakage-rounds.md`` (8 settings) took 23 minutes in all (115-205 s per
setting) while three other developers' jobs shared the two cores.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgnn import PSEUDO_SETS, FedGNNConfig
from fedrec.attacks import CrossRoundAttack
from fedrec.attacks.cross_round import CONSISTENCY_STATISTICS
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.engines.common import slice_users
from fedrec.errors import FedrecError
from fedrec.reproduce.bench_pages import write_bench_page

ROOT = Path(__file__).resolve().parent.parent
PRIVACY = {"on": {"clip": 0.1, "laplace": 0.2}, "off": {"clip": 0.1, "laplace": 0.0}}


def run(ds, dataset: str, mode: str, ldp: str, rounds: int, clients_per_round: int,
        seed: int, overrides: dict, statistics: list[str]) -> dict:
    """Train ``rounds`` rounds with ``pseudo_set=mode`` under ``ldp``; RMSE and attack table."""
    cfg = build_config(FedGNNConfig, "fedgnn", dataset, overrides={
        "pseudo_set": mode, "rounds": rounds, "seed": seed,
        "clients_per_round": clients_per_round, **PRIVACY[ldp], **overrides})
    trainer = get_algorithm("fedgnn").trainer(cfg, ds, torch.device("cpu"))
    positives = {u: c.train_items for u, c in trainer.job.client_data.items()}
    attack = CrossRoundAttack(positives, ds.num_items, pseudo_items=cfg.pseudo_items,
                              statistics=statistics)
    trainer.runtime.observers.append(attack)
    t0 = time.perf_counter()
    for rnd in range(1, rounds + 1):
        trainer.train_round(rnd)
    rmse = trainer.evaluate()["rmse"]
    attack.finish()
    return {"mode": mode, "ldp": ldp, "rounds": rounds, "rmse": rmse,
            "seconds": time.perf_counter() - t0, "attacks": attack.attacks,
            "table": attack.summary()}


def _fail(why: str) -> None:
    print(f"fedrec: error: {why}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None, help="default: $FEDREC_DATA")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--max-users", type=int, default=200, help="users 0..n-1 (0: all)")
    ap.add_argument("--clients-per-round", type=int, default=64)
    ap.add_argument("--modes", default=",".join(PSEUDO_SETS))
    ap.add_argument("--ldp", default="on,off")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--statistics", default="ratio,centered,whitened,gaussian",
                    help="row-consistency statistics (density: O(ids^2) per scoring, slow)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="another config override (repeatable; numbers parsed as YAML would)")
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md and OUT.json")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    ldps = [x.strip() for x in args.ldp.split(",") if x.strip()]
    stats = [x.strip() for x in args.statistics.split(",") if x.strip()]
    bad = [m for m in modes if m not in PSEUDO_SETS] + [x for x in ldps if x not in PRIVACY]
    bad += [x for x in stats if x not in CONSISTENCY_STATISTICS]
    if bad or args.rounds < 1 or args.clients_per_round < 1:
        _fail(f"bad --modes/--ldp/--rounds/--clients-per-round: {bad or ''}")
    overrides = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        overrides[key] = json.loads(value) if value.replace(".", "", 1).isdigit() else value
    torch.set_num_threads(args.threads)
    ds = slice_users(load_dataset(args.dataset, args.data_dir), args.max_users or None)
    command = "python bench/bench_fedgnn_leakage_rounds.py " + shlex.join(sys.argv[1:])
    results = []
    for ldp in ldps:
        for mode in modes:
            try:
                res = run(ds, args.dataset, mode, ldp, args.rounds, args.clients_per_round,
                          args.seed, overrides, stats)
            except FedrecError as e:
                _fail(str(e))
            results.append(res)
            print(f"pseudo_set={mode}, LDP {ldp}: RMSE {res['rmse']:.4f}", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(
            {"command": command, "dataset_name": ds.name, "num_users": ds.num_users,
             "args": {k: str(v) for k, v in vars(args).items()}, "results": results}, indent=2))
        if args.out.resolve() == (ROOT / "results" / "fedgnn-leakage-rounds").resolve():
            print(f"page: {write_bench_page('results/fedgnn-leakage-rounds', ROOT)}")


if __name__ == "__main__":
    main()
