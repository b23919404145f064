"""Centralized LightGCN / NGCF / NeuMF on PTF-FedRec's split of the real ML-100K.

The learning checks use a few epochs with a larger learning rate and batch than the packaged
defaults (which take minutes); torch runs single-threaded (see ``one_thread_module``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.central_ranking import (
    CentralRankingConfig,
    CentralRankingTrainer,
    NeuMFConfig,
    NGCFConfig,
)
from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig, build_ptf_fedrec_job
from fedrec.config import build_config
from fedrec.errors import ConfigError
from fedrec.federation.checkpoint import load_checkpoint, save_checkpoint
from fedrec.metrics import evaluate_topk
from fedrec.models import ncf

pytestmark = pytest.mark.usefixtures("one_thread_module")

CPU = torch.device("cpu")
MODELS = ("lightgcn", "ngcf", "neumf")
# A few epochs' worth of learning (Recall@20 after 4 epochs: ~0.26 / ~0.27 / ~0.32).
FAST = {
    "lightgcn": {"dim": 32, "layers": [32, 32], "batch": 2048, "lr": 0.01},
    "ngcf": {"dim": 32, "layers": [32, 32], "batch": 2048, "lr": 0.01},
    "neumf": {"batch": 1024, "lr": 0.005},
}
# One cheap epoch, for the exactness checks.
TINY = {
    "lightgcn": {"dim": 16, "layers": [16], "batch": 8192},
    "ngcf": {"dim": 16, "layers": [16, 8], "batch": 8192},
    "neumf": {"dim": 8, "layers": [8], "batch": 8192, "num_negatives": 1},
}


def _trainer(ds, model: str, **over) -> CentralRankingTrainer:
    spec = get_algorithm(model)
    cfg = build_config(spec.config_cls, model, "ml-100k", overrides=over)
    trainer = spec.build(cfg, ds, CPU)
    assert isinstance(trainer, CentralRankingTrainer)
    return trainer


def _params(t: CentralRankingTrainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in t.model.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_registered_with_their_papers_defaults():
    options = {f.name for f in dataclasses.fields(CentralRankingConfig)}
    for model in MODELS:
        spec = get_algorithm(model)
        # One set of options; each algorithm's class holds its own defaults.
        assert issubclass(spec.config_cls, CentralRankingConfig) and spec.build_job is None
        assert {f.name for f in dataclasses.fields(spec.config_cls)} == options
        assert build_config(spec.config_cls, model).model == model
    cfg = build_config(CentralRankingConfig, "lightgcn")
    assert (cfg.dim, len(cfg.layers), cfg.lr, cfg.reg, cfg.num_negatives) == (64, 3, 1e-3, 1e-4, 1)
    cfg = build_config(NeuMFConfig, "neumf")
    assert (cfg.dim, cfg.layers, cfg.lr, cfg.batch, cfg.num_negatives) == (16, (16, 8), 1e-3,
                                                                            256, 4)
    with pytest.raises(ConfigError):
        build_config(NGCFConfig, "ngcf", overrides={"model": "mf"})
    with pytest.raises(ConfigError):
        build_config(NGCFConfig, "ngcf", overrides={"layers": []})
    # An algorithm trains its own model only: results would otherwise be filed under the wrong name.
    cfg = build_config(CentralRankingConfig, "lightgcn", overrides={"model": "neumf"})
    with pytest.raises(ConfigError, match="neumf"):
        get_algorithm("lightgcn").build(cfg, None, CPU)


def test_same_split_as_ptf_fedrec(ml100k):
    ours = _trainer(ml100k, "neumf", split_seed=3).ds
    job = build_ptf_fedrec_job(
        build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k", overrides={"split_seed": 3}),
        ml100k, CPU)

    def pairs(users, items) -> set[tuple[int, int]]:
        return set(zip(np.asarray(users).tolist(), np.asarray(items).tolist(), strict=True))

    theirs_test = set().union(*(pairs(np.full(len(c.test_items), u), c.test_items)
                                for u, c in job.client_data.items()))
    theirs_train = set().union(*(pairs(np.full(len(c.train_items), u), c.train_items)
                                 for u, c in job.client_data.items()))
    theirs_valid = set().union(*(pairs(np.full(len(c.valid_items), u), c.valid_items)
                                 for u, c in job.client_data.items()))
    assert pairs(ours.test.users, ours.test.items) == theirs_test
    assert pairs(ours.train.users, ours.train.items) == theirs_train
    assert pairs(ours.valid.users, ours.valid.items) == theirs_valid
    # 20% of each user's positives to test, then 10% of the rest to validation.
    everything = len(theirs_test) + len(theirs_train) + len(theirs_valid)
    assert 0.19 < len(theirs_test) / everything < 0.21
    assert 0.08 < len(theirs_valid) / (len(theirs_valid) + len(theirs_train)) < 0.11
    other = _trainer(ml100k, "neumf", split_seed=4).ds  # the seed matters
    assert pairs(other.test.users, other.test.items) != theirs_test


@pytest.mark.parametrize("model", MODELS)
def test_beats_popularity_after_a_few_epochs(ml100k, model):
    t = _trainer(ml100k, model, **FAST[model])
    # Most-popular ranking on the same split: items by training count (about 0.17 Recall@20).
    pop = torch.from_numpy(np.bincount(t.ds.train.items, minlength=t.ds.num_items)).float()
    popular = evaluate_topk(lambda users: pop.expand(len(users), -1), t.train_csr, t.test_csr,
                            ks=(20,))
    start = t.evaluate()
    losses = [t.train_round(r)["train_loss"] for r in range(1, 5)]
    final = t.evaluate()
    assert start["Recall@20"] < 0.5 * popular["Recall@20"]  # learning, not the initial state
    assert final["Recall@20"] > popular["Recall@20"] + 0.04, (final, popular)
    assert final["NDCG@20"] > popular["NDCG@20"]
    assert losses[-1] < losses[0]
    assert t.ledger.totals()["bytes_total"] == 0 and t.privacy_report() is None


@pytest.mark.parametrize("model", MODELS)
def test_same_seed_same_model_other_seed_other_model(ml100k, model):
    a, b = (_trainer(ml100k, model, **TINY[model]) for _ in range(2))
    c = _trainer(ml100k, model, seed=1, **TINY[model])
    rng = torch.get_rng_state()
    for t in (a, b, c):
        t.train_round(1)
    assert torch.equal(rng, torch.get_rng_state())  # NGCF's dropout used its own generator
    assert _same(_params(a), _params(b)) and a.evaluate() == b.evaluate()
    assert not _same(_params(a), _params(c))


@pytest.mark.parametrize("model", MODELS)
def test_checkpoint_resumes_exactly(ml100k, model, tmp_path):
    a = _trainer(ml100k, model, **TINY[model])
    a.train_round(1)
    save_checkpoint(tmp_path / "ckpt.pt", a.state_dict())  # through a file, as the runner does
    a.train_round(2)
    b = _trainer(ml100k, model, **TINY[model])
    b.load_state_dict(load_checkpoint(tmp_path / "ckpt.pt"))
    b.train_round(2)  # needs the restored Adam moments too
    assert _same(_params(a), _params(b))
    assert a.evaluate() == b.evaluate()


def test_neumf_is_the_clients_layer_math(ml100k):
    """The centralized NeuMF scores like a federated client whose parameters are its own."""
    t = _trainer(ml100k, "neumf", **TINY["neumf"])
    t.train_round(1)
    m: ncf.NeuMF = t.model  # type: ignore[assignment]
    users = torch.tensor([0, 5, 942])
    with torch.no_grad():
        full = m.score_all(users)
        # Three clients' stacked parameters: copies of the one tower, each user's own row.
        params = {"user": m.user[users],
                  **{k: v[None].repeat(3, *([1] * v.dim())) for k, v in m.tower.items()}}
        rows = m.item[None].repeat(3, 1, 1)
        assert torch.allclose(full, ncf.forward(m.shape, params, rows))
        items = torch.tensor([0, 17, 1681])
        assert torch.allclose(m(users, items), full[torch.arange(3), items])
