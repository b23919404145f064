"""A curious server that keeps every round's sum: the differencing attacks of
:mod:`fedrec.attacks.differencing` against today's secure sums and against the DP aggregate, on
ML-100K, F1 beside chance after a number of rounds.

    FEDREC_DATA=../shared/datasets OMP_NUM_THREADS=1 python bench/bench_aggregate_attacks.py \\
        --rounds 160 --at 40 80 160 --out results/privacy-attacks

The bench plays the server: it wraps the server's own aggregation (the decoded sum and who is
in it: exactly what the server holds after each round) and keeps it. Cases:

* ``fedgnn-secure-sum``: FedGNN ``item_privacy: secure_sum``, ``item_avg: uploaders`` (exact
  per-item rater counts in every sum), 128 clients a round: the counts linear system.
* ``fedgnn-dp``: FedGNN ``dp: distributed`` at the same expected cohort: the linear system on
  the noised sum's per-item row energy (no counts are released).
* ``fcf-secure-sum``: FCF ``secure_aggregation: true`` (dense explicit gradients, zero on
  items no cohort member rated), 100 clients a round: the support intersection.
* ``fcf-dp``: FCF ``dp: distributed``: the support intersection of the noised sums.
* ``fedgrec-secure-sum``: FedGRec ``secure_aggregation: true`` (its default), ``num_layers`` 1,
  100 clients a round: the support intersection on each round's item-update block ``delta
  e_t^0`` (a client trains its positives every round, so they lie in every sum it was in; its
  sampled negatives change). The warm-up's degree and latent sums are not kept, nor is the
  sum's exact rows-trained count block (a counts linear system on it, positives plus one
  sampled negative each, is not run here): with 100 clients' positives and negatives in a sum,
  nearly every item row is nonzero, so this attack is a weak lower bound on what FedGRec's
  secure sums leak.
* ``fedgrec-dp``: FedGRec ``dp: distributed`` with its ``dp`` preset's item-only settings (no
  latent release, public degree 48, ``dp_clip`` 5, ``server_lr`` 10) at the same expected
  cohort: the support intersection of the noised item-update sums.

Models are small (``dim`` 8) and evaluation is skipped: what the attacks use does not depend on
accuracy. Each case writes ``<out>/<case>.json``; into the checkout's results/privacy-attacks,
the page ``README.md`` is written again from them (``fedrec pages results/privacy-attacks``
does the same, running nothing; ``--report`` runs no case).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fcf import server as fcf_server
from fedrec.algorithms.methods.fcf import steps as fcf_steps
from fedrec.algorithms.methods.fedgrec import steps as fedgrec_steps
from fedrec.attacks.differencing import (
    chance_f1,
    f1_against,
    linear_system_scores,
    support_intersection_guess,
    top_k_guess,
)
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.federation import secure_sum
from fedrec.federation.secrets import ClientSecrets
from fedrec.reproduce.bench_pages import write_bench_page

#: FedGRec's item-only DP settings (its ``dp`` preset, ``src/fedrec/configs/fedgrec.yaml``): no
#: latent release and a public degree, so the item-update block is all a round's sum carries.
FEDGREC_DP_ITEM_ONLY = {"dp_latent": "none", "dp_degree": 48.0, "dp_clip": 5.0,
                        "server_lr": 10.0}

CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "fedgnn-secure-sum": ("fedgnn", {"item_privacy": "secure_sum", "item_avg": "uploaders",
                                     "laplace": 0.0, "clients_per_round": 128}, "counts"),
    "fedgnn-dp": ("fedgnn", {"dp": "distributed", "target_epsilon": 10.0,
                             "clients_per_round": 128}, "counts"),
    "fcf-secure-sum": ("fcf", {"secure_aggregation": True, "clients_per_round": 100},
                       "support"),
    "fcf-dp": ("fcf", {"dp": "distributed", "target_epsilon": 10.0, "clients_per_round": 100},
               "support"),
    "fedgrec-secure-sum": ("fedgrec", {"secure_aggregation": True, "num_layers": 1,
                                       "clients_per_round": 100}, "support"),
    "fedgrec-dp": ("fedgrec", {"dp": "distributed", "target_epsilon": 10.0, "num_layers": 1,
                               "clients_per_round": 100, **FEDGREC_DP_ITEM_ONLY}, "support"),
}


ROOT = Path(__file__).resolve().parent.parent


class Keeper:
    """What the curious server keeps: per round, who is in the sum and the per-item statistic
    (counts or row energy) or support of the decoded sum."""

    def __init__(self, num_clients: int) -> None:
        self.num_clients = num_clients
        self.members: list[np.ndarray] = []
        self.stats: list[np.ndarray] = []

    def keep(self, clients: Any, stat: np.ndarray) -> None:
        row = np.zeros(self.num_clients, dtype=bool)
        row[np.asarray(list(clients), dtype=np.int64)] = True
        self.members.append(row)
        self.stats.append(np.asarray(stat, dtype=np.float64))


#: Puts back what :func:`instrument` wrapped.
Undo = Callable[[], None]


def _wrap(owner: Any, attr: str, make: Callable[[Any], Any]) -> Undo:
    """Replace ``owner.attr`` by ``make(owner.attr)``; the undo puts the original back."""
    inner = getattr(owner, attr)
    setattr(owner, attr, make(inner))
    return lambda: setattr(owner, attr, inner)


def support(items: np.ndarray) -> np.ndarray:
    """The rows of an item block that are not all zero."""
    return (items != 0).any(1)


def instrument(name: str, server: Any, keeper: Keeper, num_items: int) -> Undo:
    """Wrap the server's aggregation so that the keeper sees each decoded sum (the item rows'
    support, or FedGNN's counts or row energy) and who is in it. Returns the undo: the FCF and
    FedGRec secure sums are wrapped where their module looks them up, so a later case in the
    same process must not find them wrapped."""
    algorithm, opts, _kind = CASES[name]

    def rows(total: np.ndarray) -> np.ndarray:
        return item_block(algorithm, server, total, num_items)

    if "dp" in opts:
        stat = ((lambda t: np.square(rows(t)).sum(1)) if algorithm == "fedgnn"
                else (lambda t: support(rows(t))))
        return keep_dp_aggregate(server, keeper, stat)
    if algorithm == "fedgnn":
        return keep_fedgnn_counts(server, keeper)
    if algorithm == "fcf":
        return keep_secure_sums(fcf_server, {fcf_steps.TRAIN}, keeper, rows)
    return keep_secure_sums(secure_sum, {fedgrec_steps.TRAIN, fedgrec_steps.TRAIN_ROWS}, keeper,
                            rows)


def keep_fedgnn_counts(server: Any, keeper: Keeper) -> Undo:
    """FedGNN's secure sum of item rows: the survivors and the exact per-item rater counts."""
    def make(inner: Callable[..., Any]) -> Callable[..., Any]:
        def secure_sum(rt: Any, selected: Any, stats: Any) -> Any:
            out = inner(rt, selected, stats)
            keeper.keep(out[3], out[2].numpy())
            return out
        return secure_sum
    return _wrap(server, "secure_sum", make)


def keep_dp_aggregate(server: Any, keeper: Keeper,
                      stat: Callable[[np.ndarray], np.ndarray]) -> Undo:
    """The DP aggregate (every method's): the survivors and ``stat`` of the noised sum."""
    def make(inner: Callable[..., Any]) -> Callable[..., Any]:
        def aggregate(rt: Any, replies: Any, cohort: int, *, step: str) -> Any:
            total, survivors = inner(rt, replies, cohort, step=step)
            keeper.keep(survivors, stat(total))
            return total, survivors
        return aggregate
    return _wrap(server.dp, "aggregate", make)


def keep_secure_sums(module: Any, steps: set[str], keeper: Keeper,
                     rows: Callable[[np.ndarray], np.ndarray]) -> Undo:
    """Bonawitz et al.'s secure sum as ``module`` calls it (``run_secure_sum``), for the sums
    of ``steps`` (the round's upload; not FedGRec's warm-up): the survivors and the support of
    the decoded sum's item rows."""
    def make(inner: Callable[..., Any]) -> Callable[..., Any]:
        def run_secure_sum(rt: Any, adverts: Any, config: Any, *, step: str) -> Any:
            result = inner(rt, adverts, config, step=step)
            if step in steps:
                keeper.keep(result.survivors, support(rows(result.total)))
            return result
        return run_secure_sum
    return _wrap(module, "run_secure_sum", make)


def item_block(algorithm: str, server: Any, total: np.ndarray, num_items: int) -> np.ndarray:
    """The item rows of a decoded round vector (FCF: factors then biases; FedGNN: GNN weights
    then item rows; FedGRec: ``[loss | delta e_t^0 | rows trained | latent]`` from its secure
    sum, ``[delta e_t^0 | ...]`` from the DP aggregate: the ``delta e_t^0`` rows)."""
    if algorithm == "fcf":
        dim = server.q.shape[1]
        rows = total[: num_items * dim].reshape(num_items, dim)
        return np.concatenate([rows, total[num_items * dim:, None]], 1) if server.explicit \
            else rows
    if algorithm == "fedgrec":
        start = 0 if server.dp is not None else 1
        return total[start: start + num_items * server.cfg.dim].reshape(num_items, -1)
    width = server.items.shape[1]
    return total[len(total) - num_items * width:].reshape(num_items, width)


def build(name: str, ds: Any, rounds: int) -> tuple[FederatedTrainer, dict[str, Any]]:
    """Case ``name``'s trainer on ``ds`` (``rounds`` planned: a DP run solves its noise for
    them) and the options it was built with."""
    algorithm, opts, _kind = CASES[name]
    spec = get_algorithm(algorithm)
    overrides = {"dim": 8, "rounds": rounds, "seed": 0, **opts}
    if algorithm == "fedgnn":
        overrides.update(neighbours=0, secagg_threshold=1.0 if name.endswith("-dp") else 0.6)
    cfg = build_config(spec.config_cls, algorithm, "ml-100k", overrides=overrides)
    job = spec.build_job(cfg, ds, torch.device("cpu"))
    trainer = FederatedTrainer(job, cfg, torch.device("cpu"), ClientSecrets(bytes(range(32))))
    return trainer, overrides


def run_case(name: str, rounds: int, at: list[int], data_dir: str) -> dict[str, Any]:
    algorithm, _opts, kind = CASES[name]
    ds = load_dataset("ml-100k", data_dir)
    trainer, overrides = build(name, ds, rounds)
    keeper = Keeper(ds.num_users)
    undo = instrument(name, trainer.job.server, keeper, ds.num_items)
    truth = np.zeros((ds.num_users, ds.num_items), dtype=bool)
    truth[ds.train.users, ds.train.items] = True
    rows, start = [], time.time()
    try:
        for r in range(1, rounds + 1):
            trainer.train_round(r)
            if r in at:
                rows.append(score(keeper, kind, truth, r))
                print(name, rows[-1], f"{time.time() - start:.0f}s", flush=True)
    finally:
        undo()
    privacy = trainer.privacy_report() or {}
    return {"case": name, "algorithm": algorithm, "attack": kind, "options": overrides,
            "epsilon_server": privacy.get("epsilon_server"), "rows": rows,
            "wall_s": time.time() - start}


def score(keeper: Keeper, kind: str, truth: np.ndarray, rnd: int) -> dict[str, Any]:
    """The attack's F1 on what ``keeper`` holds after round ``rnd``, beside chance and the
    popularity guess, over the clients in at least one sum."""
    members, stats = np.stack(keeper.members), np.stack(keeper.stats)
    guess = (top_k_guess(linear_system_scores(members, stats), truth.sum(1))
             if kind == "counts" else support_intersection_guess(members, stats))
    seen = np.flatnonzero(members.any(0) & truth.any(1))
    popular = top_k_guess(np.tile(truth.sum(0), (len(truth), 1)), truth.sum(1))
    return {"round": rnd, "attack_f1": f1_against(guess, truth, seen),
            "chance_f1": chance_f1(guess, truth, seen),
            "popularity_f1": f1_against(popular, truth, seen), "clients_scored": len(seen)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--rounds", type=int, default=160)
    ap.add_argument("--at", type=int, nargs="+", default=[40, 80, 160])
    ap.add_argument("--out", default="results/privacy-attacks")
    ap.add_argument("--report", action="store_true",
                    help="run no case: only write the page from the JSON")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report:
        data_dir = os.environ.get("FEDREC_DATA", "../shared/datasets")
        for name in args.cases:
            result = run_case(name, args.rounds, sorted(set(args.at)), data_dir)
            (out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    if out.resolve() == (ROOT / "results" / "privacy-attacks").resolve():
        print(f"page: {write_bench_page('results/privacy-attacks', ROOT)}")


if __name__ == "__main__":
    main()
