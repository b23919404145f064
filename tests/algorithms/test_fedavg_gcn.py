"""fedavg-gcn on real Cora: it learns, its hosts are the job's parties, a metadata-only graph
gives the server the same start, and bad input is a one-line error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer, evaluate_splits
from fedrec.algorithms.methods.fedavg_gcn import build_fedavg_gcn_job
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets

pytestmark = pytest.mark.usefixtures("single_thread")

FAST = {"rounds": 4, "local_epochs": 10, "lr": 0.05, "num_hosts": 3}


def test_learns_above_the_majority_class_on_cora(cora) -> None:
    cfg = resolve_config("fedavg-gcn", "cora", overrides=FAST)
    trainer = FederatedTrainer(build_fedavg_gcn_job(cfg, cora, torch.device("cpu")), cfg,
                               torch.device("cpu"), ClientSecrets(bytes(range(32))))
    for rnd in range(1, cfg.rounds + 1):
        stats = trainer.train_round(rnd)
        assert stats["hosts"] == 3
    metrics = evaluate_splits(trainer)
    labels = cora.y[cora.test_mask]
    majority = np.bincount(labels).max() / len(labels)
    assert metrics["eval_clients"] == 3
    assert metrics["accuracy"] > majority + 0.2, (metrics, majority)
    assert metrics["val_accuracy"] > majority + 0.2
    # The hosts are the job's clients, named as hosts, and the messages are "up"/"down".
    assert trainer.runtime.client_ids == ["host-0", "host-1", "host-2"]
    totals = trainer.ledger.totals()
    assert totals["messages_up"] == totals["messages_down"] > 0


def test_bad_input_is_a_config_error(cora, ml100k) -> None:
    with pytest.raises(ConfigError, match="public_fraction must be < 1"):
        resolve_config("fedavg-gcn", "cora", overrides={"public_fraction": 1.0})
    with pytest.raises(ConfigError, match="num_hosts"):
        resolve_config("fedavg-gcn", "cora", overrides={"num_hosts": 0})
    with pytest.raises(ConfigError, match=r"^clients_per_round is 5 but fedavg-gcn has 4 "
                                          r"clients \(num_hosts\); use at most 4"):
        resolve_config("fedavg-gcn", "cora", overrides={"clients_per_round": 5})
    cfg = resolve_config("fedavg-gcn", "cora")
    with pytest.raises(ConfigError, match="needs a graph"):
        build_fedavg_gcn_job(cfg, ml100k, torch.device("cpu"))
    multi = dataclasses.replace(cora, y=np.eye(7, dtype=np.int64)[cora.y], multilabel=True)
    with pytest.raises(ConfigError, match="multi-label"):
        build_fedavg_gcn_job(cfg, multi, torch.device("cpu"))
