"""gcn-central on real Cora: it learns within a few epochs, evaluates multi-label graphs by
micro-F1, is reproducible from its seed, and bad input is a one-line ConfigError."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import evaluate_splits
from fedrec.algorithms.methods.gcn_central import build_gcn_central
from fedrec.errors import ConfigError
from fedrec.metrics.classification import f1_micro

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("single_thread")


def _trained(ds, rounds: int, **overrides):
    cfg = resolve_config("gcn-central", "cora", overrides={"rounds": rounds, **overrides})
    trainer = build_gcn_central(cfg, ds, CPU)
    losses = [trainer.train_round(r)["train_loss"] for r in range(1, rounds + 1)]
    return trainer, losses


def test_learns_above_the_majority_class_within_few_epochs(cora) -> None:
    trainer, losses = _trained(cora, 20, lr=0.05)
    metrics = evaluate_splits(trainer)
    labels = cora.y[cora.test_mask]
    majority = np.bincount(labels).max() / len(labels)
    assert losses[-1] < 0.75 * losses[0]  # a dropout-noisy loss, so only a clear drop
    assert metrics["accuracy"] > majority + 0.3, (metrics, majority)
    assert metrics["val_accuracy"] > majority + 0.3
    assert set(metrics) == {"accuracy", "val_accuracy"}
    assert trainer.ledger.totals()["bytes_total"] == 0  # centralized: nothing on the wire


def test_same_seed_same_weights_and_checkpoint_round_trip(cora) -> None:
    a, _ = _trained(cora, 3)
    b, _ = _trained(cora, 3)
    for k in a.params:
        assert torch.equal(a.params[k], b.params[k])
    c, _ = _trained(cora, 1, seed=1)
    c.load_state_dict(a.state_dict())
    assert c.evaluate("test") == a.evaluate("test")


def test_multilabel_graph_is_scored_by_micro_f1(cora) -> None:
    # A multi-label Cora: the three bits of each node's class id (45% of the bits are set).
    bits = ((cora.y[:, None] >> np.arange(3)) & 1).astype(np.int64)
    multi = dataclasses.replace(cora, y=bits, num_classes=3, multilabel=True)
    trainer, losses = _trained(multi, 30, lr=0.05)
    metrics = trainer.evaluate("test")
    assert set(metrics) == {"f1_micro"}
    truth = bits[cora.test_mask]
    all_ones = f1_micro(np.ones_like(truth), truth)  # the best constant prediction
    assert metrics["f1_micro"] > all_ones + 0.1, (metrics, all_ones)
    assert losses[-1] < losses[0]


def test_bad_input_is_a_one_line_config_error(ml100k) -> None:
    cfg = resolve_config("gcn-central", "cora")
    with pytest.raises(ConfigError, match="needs a graph dataset") as err:
        build_gcn_central(cfg, ml100k, CPU)
    assert "\n" not in str(err.value)
    for bad in ({"hidden": 0}, {"lr": 0.0}, {"feature_dropout": 1.0}):
        with pytest.raises(ConfigError):
            resolve_config("gcn-central", "cora", overrides=bad)
