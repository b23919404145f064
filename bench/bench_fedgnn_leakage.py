"""How well a curious server guesses FedGNN clients' rated items, for several M, with/without LDP.

    FEDREC_DATA=/work/shared/datasets python bench/bench_fedgnn_leakage.py --threads 1 \
        [--rounds 16] [--score-rounds 1,8,16] [--pseudo 0,100,500,1000,2000] [--json out.json]

Runs FedGNN with its configured ML-100K settings (``configs/fedgnn.yaml``), overriding only the
number of pseudo items ``M`` and the privacy settings: LDP on (clip 0.1, Laplace 0.2) and off
(clip 0, Laplace 0; and the server lr, see below). A :class:`fedrec.attacks.RatedItemsAttack`
observes the server's inbox and guesses each uploading client's rated items (threat model and
guess rules in its module). Prints one markdown row per (M, LDP, scored round): the RMSE after
that round, the mean number of rows each client uploaded, the best rule's mean precision /
recall / F1 over the round's uploads, and the F1 of each rule (``random`` is the chance level;
``all`` guesses every uploaded id). With ``--json results/fedgnn-leakage.json`` the page
``results/fedgnn-leakage.md`` is written from it (as ``fedrec pages results/fedgnn-leakage``).

The attack needs only uploads, not a trained model, so a few rounds suffice; rounds are scored
at 1 (untrained model: real rows bunch at a few rating levels) and after some training (the
scoring rules may do better or worse on a trained model, which changes the real rows' spread:
measured, not assumed); the RMSE column says how far training got. Without LDP the configured
server learning rate (0.2 on the summed loss) is tuned for clipped gradients: unclipped, it
diverges (non-finite uploads, which the runtime rejects), so the LDP-off runs use ``--lr-off``
(default 0.002: RMSE 1.18 -> 1.07 in 16 rounds at M=1000; with one local step per round, 0.01
and more diverge within 8 rounds); a run that still diverges is reported as such. The graph
expansion starts after 2 epochs (round 17 with 128 clients per round); stay at ``--rounds 16``
to keep it out. k (how many rows the scoring rules
guess) is the number of real items in each upload (granted), or ``len(items) - M`` with
``--estimated-k``. The default run took 67 s (820 MB peak resident) on one core of an otherwise
idle 2-core machine, 3.5 minutes with the other core busy.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.attacks import RatedItemsAttack
from fedrec.attacks.rated_items import GUESS_RULES
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.errors import ProtocolError
from fedrec.reproduce.bench_pages import write_bench_page

ROOT = Path(__file__).resolve().parent.parent
PRIVACY = {"on": {"clip": 0.1, "laplace": 0.2}, "off": {"clip": 0.0, "laplace": 0.0}}


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def run(ds, dataset: str, m: int, ldp: str, rounds: int, score_rounds: list[int],
        clients_per_round: int | None, seed: int, estimated_k: bool, lr_off: float | None
        ) -> list[dict]:
    """Train ``rounds`` rounds with ``M = m`` and LDP ``ldp``; the attack's numbers per round."""
    overrides = {"pseudo_items": m, "rounds": rounds, "seed": seed, **PRIVACY[ldp]}
    if ldp == "off" and lr_off:
        overrides["lr"] = lr_off
    if clients_per_round:
        overrides["clients_per_round"] = clients_per_round
    cfg = build_config(FedGNNConfig, "fedgnn", dataset, overrides=overrides)
    trainer = get_algorithm("fedgnn").trainer(cfg, ds, torch.device("cpu"))
    positives = {u: c.train_items for u, c in trainer.job.client_data.items()}
    attack = RatedItemsAttack(positives, pseudo_items=m if estimated_k else None,
                              rounds=score_rounds, seed=seed)
    trainer.runtime.observers.append(attack)
    out = []
    t0 = time.perf_counter()
    for rnd in range(1, rounds + 1):
        try:
            stats = trainer.train_round(rnd)
        except ProtocolError:  # every upload non-finite: training diverged
            return out + [{"M": m, "ldp": ldp, "round": r, "diverged": True, "lr": cfg.lr}
                          for r in score_rounds if r >= rnd]
        if rnd in score_rounds:
            s = attack.summary(round=rnd)
            out.append({"M": m, "ldp": ldp, "round": rnd, "lr": cfg.lr,
                        "best_rule": attack.best_rule(rnd), "train_loss": stats.get("train_loss"),
                        "rmse": trainer.evaluate()["rmse"],
                        "seconds": time.perf_counter() - t0, **s})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--data-dir", default=None, help="default: $FEDREC_DATA")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--score-rounds", default="1,8,16", help="rounds whose uploads are scored")
    ap.add_argument("--pseudo", default="0,100,500,1000,2000", help="values of M")
    ap.add_argument("--ldp", default="on,off", help="on, off or both")
    ap.add_argument("--clients-per-round", type=int, default=None, help="default: the config's")
    ap.add_argument("--lr-off", type=float, default=0.002,
                    help="server lr of the LDP-off runs (0: the config's, which diverges)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--estimated-k", action="store_true",
                    help="k = len(items) - M instead of the granted number of real items")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    score_rounds = [r for r in _ints(args.score_rounds) if 1 <= r <= args.rounds]
    ds = load_dataset(args.dataset, args.data_dir)
    rules = [r for r in GUESS_RULES if r != "random"] + ["random"]
    print(f"FedGNN on {args.dataset}, k {'estimated' if args.estimated_k else 'granted'}; "
          f"F1 columns: each rule's mean F1")
    print("| M | LDP | round | RMSE | rows/client | uploads | best rule | precision | recall "
          "| F1 | " + " | ".join(f"F1 {r}" for r in rules) + " |")
    print("|---" * (10 + len(rules)) + "|")
    results = []
    for ldp in [x.strip() for x in args.ldp.split(",") if x.strip()]:
        for m in _ints(args.pseudo):
            for row in run(ds, args.dataset, m, ldp, args.rounds, score_rounds,
                           args.clients_per_round, args.seed, args.estimated_k,
                           args.lr_off):
                results.append(row)
                if "attack_f1" not in row:
                    why = "diverged" if row.get("diverged") else "no upload scored"
                    print(f"| {m} | {ldp} | {row['round']} | - | - | 0 | ({why}) |")
                    continue
                print(f"| {m} | {ldp} | {row['round']} | {row['rmse']:.3f} | "
                      f"{row['attack_rows']:.0f} | "
                      f"{row['attack_uploads']:.0f} | {row['best_rule']} | "
                      f"{row['attack_precision']:.3f} | {row['attack_recall']:.3f} | "
                      f"{row['attack_f1']:.3f} | "
                      + " | ".join(f"{row[f'attack_{r}_f1']:.3f}" for r in rules) + " |",
                      flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                         "results": results}, indent=2))
        if args.json.resolve() == (ROOT / "results" / "fedgnn-leakage.json").resolve():
            print(f"page: {write_bench_page('results/fedgnn-leakage', ROOT)}")


if __name__ == "__main__":
    main()
