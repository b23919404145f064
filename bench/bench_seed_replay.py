"""Seed replay: can a curious server regenerate the clients' private draws from the config?

    FEDREC_DATA=/work/shared/datasets python bench/bench_seed_replay.py --threads 1 \
        --label "this commit" [--users 200] [--rounds 4] [--json results/seed-replay.json]

Runs, on ML-100K (the first ``--users`` users, every client in every round), FedGNN with its
packaged privacy settings (clip 0.1, Laplace 0.2, M = 1000 pseudo items), PTF-FedRec with its
packaged defence (sampling + swapping) and FedMF (512-bit keys, 2 clients), each with a
:mod:`fedrec.attacks.seed_replay` observer that knows only the config and what the server
receives, and reports:

* FedGNN: the replayed shuffle's F1 in naming each upload's real item ids (chance: a random
  guess of the same size), and the share of uploads whose replayed Laplace noise, subtracted,
  leaves every coordinate within the clip bound (the noise was exact);
* PTF-FedRec: the replayed sampling keys' F1 in naming the uploaded positives (chance alike);
* FedMF: whether the replayed key pair is the clients' (then every update decrypts);
* FedGNN's expansion key: whether the key derived from the config is the one the clients use
  (then the third party tokenises every item and reads each client's ratings).

The same script runs on any fedrec version (it uses only ``build_*`` and runtime observers): the
old behaviour is measured by running it on a checkout of commit b43ef81 with this file and
``src/fedrec/attacks/seed_replay.py`` copied in. ``--json`` keeps one entry per ``--label``
(with the command it ran); into the checkout's ``results/seed-replay.json``, the page
``results/seed-replay.md`` is written again with every label (as ``fedrec pages
results/seed-replay``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.algorithms.methods.fedmf import FedMFConfig
from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig
from fedrec.attacks.seed_replay import (
    FedGNNReplay,
    FedMFKeyReplay,
    PTFReplay,
    fedgnn_replayed_expansion_key,
)
from fedrec.config import build_config
from fedrec.data import load_dataset
from fedrec.engines.common import slice_users
from fedrec.reproduce.bench_pages import write_bench_page

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parent.parent


def fedgnn_rows(ds, rounds: int) -> dict:
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k",
                       overrides={"rounds": rounds, "expand_after": 0, "clients_per_round": 0})
    trainer = get_algorithm("fedgnn").trainer(cfg, ds, CPU)
    replay = FedGNNReplay(cfg.seed, cfg.pseudo_items, cfg.clip, cfg.laplace)
    keys: list[bytes] = []
    trainer.runtime.observers.append(replay)
    trainer.runtime.observers.append(
        lambda m: keys.append(bytes(np.asarray(m.payload["key"], dtype=np.uint8)))
        if m.step == "expand_key" and m.sender == "server" else None)
    for rnd in range(1, rounds + 1):
        trainer.train_round(rnd)
    got = replay.score({c: d.train_items for c, d in trainer.job.client_data.items()})
    derived = {fedgnn_replayed_expansion_key(cfg.seed, r) for r in range(1, rounds + 1)}
    return {"fedgnn_uploads": got.uploads, "fedgnn_f1": got.f1, "fedgnn_f1_chance": got.f1_chance,
            "fedgnn_noise_exact": got.noise_exact,
            "fedgnn_expansion_key_derived": bool(keys) and all(k in derived for k in keys)}


def ptf_rows(ds, rounds: int) -> dict:
    cfg = build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k",
                       overrides={"rounds": rounds, "clients_per_round": 0})
    trainer = get_algorithm("ptf-fedrec").trainer(cfg, ds, CPU)
    replay = PTFReplay(cfg.seed, tuple(cfg.beta_range), tuple(cfg.gamma_range))
    trainer.runtime.observers.append(replay)
    for rnd in range(1, rounds + 1):
        trainer.train_round(rnd)
    got = replay.score({c: d.train_items for c, d in trainer.job.client_data.items()})
    return {"ptf_uploads": got.uploads, "ptf_f1": got.f1, "ptf_f1_chance": got.f1_chance}


def fedmf_rows(ds) -> dict:
    cfg = build_config(FedMFConfig, "fedmf", "ml-100k",
                       overrides={"rounds": 1, "key_bits": 512, "clients_per_round": 2})
    trainer = get_algorithm("fedmf").trainer(cfg, slice_users(ds, 20), CPU)
    replay = FedMFKeyReplay(cfg.seed, 512)
    trainer.runtime.observers.append(replay)
    trainer.train_round(1)
    return {"fedmf_key_rebuilt": bool(replay.rebuilt) and all(replay.rebuilt)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True, help="row name (e.g. the commit)")
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    ds = slice_users(load_dataset("ml-100k", args.data_dir), args.users)
    cmd = (f"python bench/bench_seed_replay.py --threads {args.threads} --users {args.users}"
           f" --rounds {args.rounds} --label LABEL" + (f" --json {args.json}" if args.json else ""))
    row = {**fedgnn_rows(ds, args.rounds), **ptf_rows(ds, args.rounds), **fedmf_rows(ds),
           "wall_s": time.perf_counter() - t0, "command": cmd}
    print(json.dumps(row, indent=1))
    if args.json:
        entries = json.loads(args.json.read_text()) if args.json.is_file() else {}
        entries[args.label] = row
        args.json.write_text(json.dumps(entries, indent=1) + "\n")
        if args.json.resolve() == (ROOT / "results" / "seed-replay.json").resolve():
            print(f"page: {write_bench_page('results/seed-replay', ROOT)}")


if __name__ == "__main__":
    main()
