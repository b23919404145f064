"""Does FL-MV-DSSM gain from its second view when the views know different things about the user?

With ML-100K's two views it does not (docs/fl-mv-dssm.md, "Both tuned alike"): the demographics
view carries nothing the SVD view lacks. This bench builds two views that do differ, from the
same "other app" data view 2 is made of: the held-aside rows (``MultiViewData.held_aside``,
never in the task's rows) split by item id into two apps with disjoint catalogues, app A the
even item ids and app B the odd ones, each view the SVD factors of its app's rows alone
(:func:`fedrec.data.other_app.svd_view`; a user with no row in an app gets a zero vector). They
take the two view slots of the same task split (``demographics`` holds app A, ``svd`` app B),
and FL-MV-DSSM runs with both, FL-DSSM with each alone. Everything else is the packaged
configuration with the overrides given (noise off and the plain sum by default, as Table III's
noise-off rows); test Recall@10 at the evaluation round of the best validation Recall@10.

    FEDREC_DATA=../shared/datasets python bench/fl_mv_dssm_complementary.py --seeds 0,1,2 \\
        --json results/fl-mv-dssm-tuning/complementary.json

A diagnostic of the method on other data, not a row of the reproduction: each seed's client
secret is the seed (as ``--client-secret $(printf '%064d' S)``), the same for all three models.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fl_mv_dssm import build_job_from_multiview, multiview_of
from fedrec.data import load_dataset
from fedrec.data.multiview import MultiViewData
from fedrec.data.other_app import svd_view
from fedrec.federation.secrets import ClientSecrets

METRIC = "Recall@10"
#: (label, views) of the models compared: the slot names the config accepts.
MODELS = (("FL-MV-DSSM, apps A + B", "[demographics,svd]"),
          ("FL-DSSM, app A alone", "[demographics]"),
          ("FL-DSSM, app B alone", "[svd]"))


def app_views(mv: MultiViewData) -> MultiViewData:
    """``mv`` with its two view slots holding apps A and B (module docstring)."""
    held, task = mv.held_aside, mv.task
    dim = int(mv.meta["svd_dim"])
    views = tuple(svd_view(held.select(np.flatnonzero(held.items % 2 == parity)),
                           task.num_users, task.num_items, dim)[0] for parity in (0, 1))
    return dataclasses.replace(mv, user_views=views)


def run(views: str, seed: int, sets: list[str], rounds: int, every: int, mv: MultiViewData
        ) -> dict[str, float]:
    cfg = resolve_config("fl-mv-dssm", "ml-100k", overrides=[
        "secure_aggregation=false", "noise_multiplier=0", *sets, f"seed={seed}",
        f"views={views}", f"rounds={rounds}"])
    trainer = FederatedTrainer(build_job_from_multiview(cfg, mv), cfg, torch.device("cpu"),
                               ClientSecrets(seed.to_bytes(32, "big")))
    start = time.perf_counter()
    best = {"valid": -1.0, "test": float("nan"), "round": 0.0}
    for rnd in range(1, rounds + 1):
        trainer.train_round(rnd)
        if rnd % every == 0 or rnd == rounds:
            valid = trainer.evaluate("valid")[METRIC]
            if valid > best["valid"]:  # the earliest round on a tie
                best = {"valid": valid, "test": trainer.evaluate("test")[METRIC],
                        "round": float(rnd)}
    return {**best, "wall_s": time.perf_counter() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",")]
    base = resolve_config("fl-mv-dssm", "ml-100k", overrides=args.sets)
    mv = app_views(multiview_of(base, load_dataset("ml-100k", args.data_dir)))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label, views in MODELS:
        for seed in seeds:
            res = run(views, seed, args.sets, args.rounds, args.eval_every, mv)
            out.setdefault(label, {})[str(seed)] = res
            print(f"{label}, seed {seed}: validation {res['valid']:.4f}, test {res['test']:.4f} "
                  f"(round {res['round']:.0f}, {res['wall_s']:.0f} s)", flush=True)
    print(f"\n| model | validation {METRIC} | test {METRIC} |\n|---|---|---|")
    for label, by_seed in out.items():
        cells = []
        for key in ("valid", "test"):
            vals = [r[key] for r in by_seed.values()]
            spread = f" ± {statistics.stdev(vals):.4f}" if len(vals) > 1 else ""
            cells.append(f"{statistics.mean(vals):.4f}{spread} ({len(vals)})")
        print(f"| {label} | {cells[0]} | {cells[1]} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"command_sets": args.sets, "seeds": seeds,
                                               "runs": out}, indent=1))


if __name__ == "__main__":
    main()
