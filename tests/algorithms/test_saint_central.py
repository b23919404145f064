"""saint-central on real Cora: every sampler learns within a few epochs, one round covers the
graph once on average, and bad input is a one-line ConfigError."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import evaluate_splits
from fedrec.algorithms.methods.saint_central import SAMPLERS, build_saint_central
from fedrec.errors import ConfigError

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("single_thread")


# The node sampler rarely draws some training nodes (its probabilities follow the neighbours'
# degrees), so their large loss weights make its gradient noisier: it needs more epochs.
ROUNDS = {"node": 30, "edge": 8, "rw": 8, "mrw": 8}


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_sampler_learns_above_the_majority_class(cora, sampler: str) -> None:
    cfg = resolve_config("saint-central", "cora",
                         overrides={"sampler": sampler, "rounds": ROUNDS[sampler], "lr": 0.05,
                                    "presample": 50})
    trainer = build_saint_central(cfg, cora, CPU)
    # Subgraphs of ~600-900 of Cora's 2,708 nodes: a few per round cover it once on average.
    assert 2 <= trainer.steps <= 6
    for rnd in range(1, cfg.rounds + 1):
        stats = trainer.train_round(rnd)
        assert stats["subgraphs"] == trainer.steps
    metrics = evaluate_splits(trainer)
    labels = cora.y[cora.test_mask]
    majority = np.bincount(labels).max() / len(labels)
    assert metrics["accuracy"] > majority + 0.2, (sampler, metrics, majority)
    assert metrics["val_accuracy"] > majority + 0.2


def test_feras_network_learns_and_is_the_one_trained(cora) -> None:
    # network=gcn-dense: Feras's two GCN layers and dense output layer (its upper bound).
    cfg = resolve_config("saint-central", "cora",
                         overrides={"sampler": "edge", "rounds": 8, "lr": 0.05, "presample": 50,
                                    "network": "gcn-dense", "feature_dropout": 0.1})
    trainer = build_saint_central(cfg, cora, CPU)
    assert set(trainer.params) == {"w1", "b1", "w2", "b2", "w3", "b3"}
    before = {k: v.detach().clone() for k, v in trainer.params.items()}
    for rnd in range(1, cfg.rounds + 1):
        trainer.train_round(rnd)
    assert all(not torch.equal(before[k], v) for k, v in trainer.params.items())
    labels = cora.y[cora.test_mask]
    majority = np.bincount(labels).max() / len(labels)
    assert evaluate_splits(trainer)["accuracy"] > majority + 0.2


def test_the_loss_weights_make_the_training_loss_unbiased(cora) -> None:
    # sum over a subgraph's training nodes of 1 / (n_train p_v) has expectation 1.
    cfg = resolve_config("saint-central", "cora", overrides={"sampler": "rw", "presample": 200})
    trainer = build_saint_central(cfg, cora, CPU)
    gen = torch.Generator().manual_seed(7)
    totals = []
    for _ in range(200):
        nodes = trainer.sampler.sample(gen).nodes
        totals.append(float(trainer.loss_weight[nodes[trainer.is_train[nodes]]].sum()))
    assert abs(np.mean(totals) - 1.0) < 0.05, np.mean(totals)


def test_bad_input_is_a_one_line_config_error(cora, ml100k) -> None:
    with pytest.raises(ConfigError, match="sampler must be one of node, edge, rw, mrw") as err:
        resolve_config("saint-central", "cora", overrides={"sampler": "forest-fire"})
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="network must be one of gcn, gcn-dense"):
        resolve_config("saint-central", "cora", overrides={"network": "gat"})
    cfg = resolve_config("saint-central", "cora")
    with pytest.raises(ConfigError, match="needs a graph dataset"):
        build_saint_central(cfg, ml100k, CPU)
    big = resolve_config("saint-central", "cora", overrides={"sampler": "node",
                                                             "node_budget": 10**6})
    with pytest.raises(ConfigError, match="sampler=node: budget"):
        build_saint_central(big, cora, CPU)
    with pytest.raises(ConfigError, match="walk_length"):
        build_saint_central(resolve_config("saint-central", "cora",
                                           overrides={"walk_length": 0}), cora, CPU)
