"""The server plays the seed-replay attack (fedrec.attacks.seed_replay) with nothing but the
run's config and the messages it receives, on real data, and must fail in every algorithm:
FedGNN's shuffle (which rows are real) and Laplace noise, its expansion key, PTF-FedRec's
sampling draws, FedMF's Paillier key.

Written against the interface every fedrec version has (``build_*_job``, ``FederatedTrainer``,
the trainer's runtime and its observers), so that the same file run on commit b43ef81 -- where
client draws were keyed by the public seed -- fails there (the mutation check; numbers in
bench/bench_seed_replay.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedgnn import FedGNNConfig, build_fedgnn_job
from fedrec.algorithms.methods.fedmf import FedMFConfig, build_fedmf_job
from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig, build_ptf_fedrec_job
from fedrec.attacks.seed_replay import (
    FedGNNReplay,
    FedMFKeyReplay,
    PTFReplay,
    fedgnn_replayed_expansion_key,
)
from fedrec.config import build_config
from fedrec.engines.common import slice_users
from fedrec.privacy import ItemTokenizer

CPU = torch.device("cpu")


def _fedgnn_trainer(ml100k, **overrides):
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k",
                       overrides={"rounds": 2, "pseudo_items": 200, "neighbours": 0, **overrides})
    return cfg, FederatedTrainer(build_fedgnn_job(cfg, slice_users(ml100k, 80), CPU), cfg, CPU)


def test_fedgnn_shuffle_and_noise_cannot_be_replayed(ml100k):
    cfg, trainer = _fedgnn_trainer(ml100k)
    replay = FedGNNReplay(cfg.seed, cfg.pseudo_items, cfg.clip, cfg.laplace)
    trainer.runtime.observers.append(replay)
    for rnd in (1, 2):
        trainer.train_round(rnd)
    rated = {c: d.train_items for c, d in trainer.job.client_data.items()}
    got = replay.score(rated)
    assert got.uploads == 160
    # Chance: a random guess of K of the K + M uploaded ids (~0.3 here); seed-keyed draws gave 1.
    assert got.f1 < got.f1_chance + 0.05
    assert got.noise_exact == 0.0  # no upload denoised to within the clip bound


def test_fedgnn_expansion_key_is_not_derivable(ml100k):
    """The third party could tokenise every item with a key derived from the config."""
    cfg, trainer = _fedgnn_trainer(ml100k, neighbours=5, expand_after=0)
    seen: list = []
    trainer.runtime.observers.append(lambda m: seen.append(m) if m.step == "expand_key" else None)
    trainer.train_round(1)
    keys = {bytes(np.asarray(m.payload["key"], dtype=np.uint8)) for m in seen
            if m.sender == "server"}
    tokens = [m.payload["tokens"] for m in seen if m.receiver == "third_party"]
    assert len(keys) == 1 and tokens
    replayed = ItemTokenizer(fedgnn_replayed_expansion_key(cfg.seed, 1))
    every_item = set(replayed.tokens(np.arange(ml100k.num_items)).tolist())
    assert not any(set(np.asarray(t).tolist()) & every_item for t in tokens)


def test_ptf_sampling_draws_cannot_be_replayed(ml100k):
    cfg = build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k",
                       overrides={"rounds": 1, "local_epochs": 1})
    trainer = FederatedTrainer(build_ptf_fedrec_job(cfg, slice_users(ml100k, 80), CPU), cfg, CPU)
    replay = PTFReplay(cfg.seed, tuple(cfg.beta_range), tuple(cfg.gamma_range))
    trainer.runtime.observers.append(replay)
    trainer.train_round(1)
    positives = {c: d.train_items for c, d in trainer.job.client_data.items()}
    got = replay.score(positives)
    assert got.uploads >= 40
    assert got.f1 < got.f1_chance + 0.08  # seed-keyed draws gave far more (bench)


@pytest.mark.parametrize("bits", [512])
def test_fedmf_key_cannot_be_rebuilt(ml100k, bits):
    cfg = build_config(FedMFConfig, "fedmf", "ml-100k",
                       overrides={"rounds": 1, "key_bits": bits, "clients_per_round": 2})
    trainer = FederatedTrainer(build_fedmf_job(cfg, slice_users(ml100k, 20), CPU), cfg, CPU)
    replay = FedMFKeyReplay(cfg.seed, bits)
    trainer.runtime.observers.append(replay)
    trainer.train_round(1)
    assert replay.rebuilt and not any(replay.rebuilt)
