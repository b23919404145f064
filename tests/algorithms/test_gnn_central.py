"""The centralized counterpart of FedGNN's model, on real ML-100K."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms.methods.gnn_central import GNNCentralConfig, build_gnn_central
from fedrec.config import build_config
from fedrec.data import RatingDataset
from fedrec.errors import ConfigError
from fedrec.models import gnn

CPU = torch.device("cpu")


def _trainer(ds: RatingDataset, **overrides):
    cfg = build_config(GNNCentralConfig, "gnn-central", "ml-100k", overrides=overrides)
    return build_gnn_central(cfg, ds, CPU)


def test_learns_ml100k(ml100k: RatingDataset, one_thread_module) -> None:
    tr = _trainer(ml100k, dim=16, lr=0.005)
    start = tr.evaluate()["rmse"]
    for r in range(1, 6):
        tr.train_round(r)
    end = tr.evaluate()
    # Per-item mean ratings give RMSE ~1.03 on u1: a model that learns beats it in 5 epochs.
    tr_ = ml100k.train
    sums = np.bincount(tr_.items, tr_.values, ml100k.num_items)
    counts = np.bincount(tr_.items, minlength=ml100k.num_items)
    item_mean = np.where(counts > 0, sums / np.maximum(counts, 1), tr_.values.mean())
    baseline = float(np.sqrt(np.mean((item_mean[ml100k.test.items] - ml100k.test.values) ** 2)))
    assert start > 1.05
    assert end["rmse"] < baseline - 0.03, (end, baseline)
    assert tr.ledger.totals()["bytes_total"] == 0 and tr.privacy_report() is None


def test_neighbour_mean_is_exact(ml100k: RatingDataset, one_thread_module) -> None:
    tr = _trainer(ml100k, dim=8)
    a = ml100k.train.to_csr(ml100k.num_users, ml100k.num_items).tocsc()
    rows = torch.tensor([0, 5, 17])
    got = tr._nb_means(rows)
    e = tr.e_user[:, :8].detach()
    for r, u in enumerate(rows.tolist()):
        items = ml100k.train.items[ml100k.train.users == u]
        total, count = torch.zeros(8), 0
        for t in items:
            raters = a[:, t].indices
            others = raters[raters != u]
            total += e[others].sum(0)
            count += len(others)
        torch.testing.assert_close(got[r].detach(), total / count, rtol=1e-4, atol=1e-6)


def test_same_model_function_as_fedgnn(ml100k: RatingDataset, one_thread_module) -> None:
    """Its evaluation is fedrec.models.gnn's prediction, user by user (one model, two
    trainers): recomputing every test prediction with ``predict_test`` gives its RMSE."""
    tr = _trainer(ml100k, dim=8, neighbours=False)
    tr.train_round(1)  # a trained model: biases and weights away from their initial values
    tr_, te = ml100k.train, ml100k.test
    errors = []
    with torch.no_grad():
        for u in np.unique(te.users):
            items = torch.from_numpy(tr_.items[tr_.users == u].astype(np.int64))
            test = torch.from_numpy(te.items[te.users == u].astype(np.int64))
            pred = gnn.predict_test("gat", tr.mu, tr._param_dict(), tr.e_user[u],
                                    tr.e_item[items], torch.ones(len(items), dtype=torch.bool),
                                    torch.zeros(8), tr.e_item[test])
            pred = pred.clamp(ml100k.rating_min, ml100k.rating_max).numpy()
            errors.append(pred - te.values[te.users == u])
    ref = float(np.sqrt(np.mean(np.concatenate(errors) ** 2)))
    assert tr.evaluate()["rmse"] == pytest.approx(ref, rel=1e-5)


def test_checkpoint_resumes_exactly(ml100k: RatingDataset, one_thread_module) -> None:
    a = _trainer(ml100k, dim=8, batch_users=128)
    b = _trainer(ml100k, dim=8, batch_users=128)
    a.train_round(1)
    b.load_state_dict(a.state_dict())
    a.train_round(2)
    b.train_round(2)
    for x, y in zip(a.tensors, b.tensors, strict=True):
        assert torch.equal(x, y)


def test_rejects_bad_values(ml100k: RatingDataset) -> None:
    with pytest.raises(ConfigError, match="feature_dropout"):
        _trainer(ml100k, feature_dropout=1.5)
    with pytest.raises(ConfigError, match="gnn"):
        _trainer(ml100k, gnn="gin")
