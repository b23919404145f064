"""How far are a finished FedGRec run's users from their best fit? Its validation and test
Recall@20 re-evaluated with ``user_fit_steps`` (each client fits ``e_u^0`` alone to the final
tables before ranking; :mod:`fedrec.algorithms.methods.fedgrec`) at the given steps and lr, and,
with
``--moved``, how far the fit moves the users (mean L2 distance against their mean norm).

    FEDREC_DATA=../shared/datasets python bench/fedgrec_user_fit.py \\
        results/fedgrec-gowalla-probe/steps3 0:0.05 200:0.05

Loads the run's checkpoint (the state after its last checkpointed round, with the run's own
client secret, which the checkpoint holds); ``0:LR`` is the run's own ranking without a fit.
Evaluating changes no client state, so every setting starts from the same users.
"""

from __future__ import annotations

import argparse
import time

import torch

from fedrec.algorithms import get_algorithm, resolve_config
from fedrec.algorithms.base import evaluate_splits
from fedrec.algorithms.methods.fedgrec.client import full_tables
from fedrec.data import load_dataset
from fedrec.federation.secrets import ClientSecrets

CPU = torch.device("cpu")


def fit_moved(trainer) -> tuple[float, float]:
    """Mean L2 distance the fit before ranking (the trainer's ``user_fit_steps``) moves each
    client's ``e_u^0``, and the users' mean norm before it."""
    client, runtime = trainer.job.client_logic, trainer.runtime
    ids = sorted(runtime.states)
    ctxs = [runtime._context(c, "evaluate") for c in ids]
    users, _ = client.ranking_layers(ctxs, full_tables(trainer.job.server.tables(), CPU))
    e0 = torch.stack([runtime.states[c]["e0"] for c in ids]).float()
    return float((users[0] - e0).norm(dim=1).mean()), float(e0.norm(dim=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a finished fedgrec run's folder (with checkpoint.pt)")
    parser.add_argument("settings", nargs="+", help="STEPS:LR of the fit before ranking")
    parser.add_argument("--moved", action="store_true", help="also print how far users move")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ckpt = torch.load(f"{args.run}/checkpoint.pt", weights_only=False, map_location="cpu")
    made = ckpt["made_from"]
    ds = load_dataset(made["dataset"], args.data_dir, **made.get("dataset_options", {}))
    secrets = ClientSecrets(ckpt["trainer"]["runtime"]["client_secret"])
    for setting in args.settings:
        steps, lr = setting.split(":")
        cfg = resolve_config("fedgrec", made["dataset"], overrides={
            **made["config"], "user_fit_steps": int(steps), "user_fit_lr": float(lr)})
        trainer = get_algorithm("fedgrec").trainer(cfg, ds, CPU, secrets)
        trainer.load_state_dict(ckpt["trainer"])
        start = time.perf_counter()
        metrics = evaluate_splits(trainer)
        shown = {k: round(v, 4) for k, v in metrics.items() if k.endswith("Recall@20")}
        moved = ""
        if args.moved and int(steps):
            distance, norm = fit_moved(trainer)
            moved = f", users moved {distance:.2f} (mean norm {norm:.2f})"
        print(f"fit {steps} steps, lr {lr}: {shown}, "
              f"{time.perf_counter() - start:.0f} s{moved}", flush=True)


if __name__ == "__main__":
    main()
