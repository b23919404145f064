"""Multi-label node classification (PPI's kind) end to end: a small PPI-like graph written in
the GraphSAINT format (``adj_full.npz``, ``adj_train.npz``, ``role.json``, ``class_map.json``
with 0/1 label lists, ``feats.npy``), loaded as ``ppi``; gcn-central, saint-central and feras
train on it with the sigmoid cross-entropy over labels and report the micro-F1 over all (node,
label) decisions, above what predicting every label for every node scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from fedrec.algorithms import get_algorithm, resolve_config
from fedrec.algorithms.base import evaluate_splits
from fedrec.data import load_dataset
from fedrec.data.types import GraphDataset
from fedrec.federation.secrets import ClientSecrets
from fedrec.metrics.classification import f1_micro

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("single_thread")

NODES, LABELS, NOISE_FEATURES, COMMUNITIES = 300, 6, 10, 5


def write_ppi_like(root: Path, seed: int = 0) -> Path:
    """``root/ppi``: nodes in ``COMMUNITIES`` communities, each with its own set of labels
    (every node's labels are its community's with 5% of them flipped); a node's features are
    its labels blurred by noise, and it links mostly within its community (homophily, as
    PPI's)."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.random((COMMUNITIES, LABELS)) < 0.4).astype(np.int64)
    community = rng.integers(COMMUNITIES, size=NODES)
    y = prototypes[community] ^ (rng.random((NODES, LABELS)) < 0.05)
    signal = y * rng.uniform(0.2, 1.0, y.shape) + rng.uniform(0.0, 0.4, y.shape)
    feats = np.hstack([signal, rng.uniform(0.0, 0.3, (NODES, NOISE_FEATURES))])
    rows, cols = [], []
    for v in range(NODES):
        mates = np.flatnonzero(community == community[v])
        for u in [*rng.choice(mates, size=4), rng.integers(NODES)]:
            if u != v:
                rows.append(v)
                cols.append(int(u))
    adj = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(NODES, NODES))
    adj = ((adj + adj.T) > 0).astype(np.float64).tocsr()  # as GraphSAINT ships it: symmetric
    order = rng.permutation(NODES)
    train, val, test = np.split(order, [int(0.6 * NODES), int(0.8 * NODES)])
    d = root / "ppi"
    d.mkdir(parents=True)
    sp.save_npz(d / "adj_full.npz", adj)
    keep = np.zeros(NODES, bool)
    keep[train] = True
    sp.save_npz(d / "adj_train.npz", sp.csr_matrix(adj.multiply(np.outer(keep, keep))))
    np.save(d / "feats.npy", feats)
    (d / "class_map.json").write_text(json.dumps({str(v): y[v].tolist() for v in range(NODES)}))
    (d / "role.json").write_text(json.dumps({"tr": sorted(train.tolist()),
                                             "va": sorted(val.tolist()),
                                             "te": sorted(test.tolist())}))
    return root


@pytest.fixture(scope="module")
def ppi_like(tmp_path_factory) -> GraphDataset:
    ds = load_dataset("ppi", write_ppi_like(tmp_path_factory.mktemp("saint")))
    assert isinstance(ds, GraphDataset)
    return ds


# Budgets for 300 nodes: subgraphs of roughly 100-150 nodes.
SAINT = {"sampler": "rw", "num_roots": 60, "walk_length": 2, "presample": 30, "lr": 0.05,
         "hidden": 32}
SETTINGS = {
    "gcn-central": {"rounds": 40, "lr": 0.05, "hidden": 32},
    "saint-central": {**SAINT, "rounds": 20},
    "feras": {**SAINT, "rounds": 8, "num_hosts": 2, "private_fraction": 0.5},
}


def test_the_loader_reads_ppi_like_files_as_multilabel(ppi_like) -> None:
    assert ppi_like.multilabel and ppi_like.num_classes == LABELS
    assert ppi_like.y.shape == (NODES, LABELS) and set(np.unique(ppi_like.y)) == {0, 1}
    assert ppi_like.x.shape == (NODES, LABELS + NOISE_FEATURES)
    assert ppi_like.train_mask.sum() == 180 and ppi_like.test_mask.sum() == 60


@pytest.mark.parametrize("algorithm", list(SETTINGS))
def test_multilabel_training_reports_micro_f1_above_all_ones(ppi_like, algorithm: str) -> None:
    spec = get_algorithm(algorithm)
    cfg = resolve_config(algorithm, "ppi", overrides=SETTINGS[algorithm])
    trainer = spec.trainer(cfg, ppi_like, CPU, ClientSecrets(bytes(32)))
    losses = [trainer.train_round(rnd)["train_loss"] for rnd in range(1, cfg.rounds + 1)]
    metrics = evaluate_splits(trainer)
    assert "f1_micro" in metrics and "accuracy" not in metrics, metrics
    truth = ppi_like.y[ppi_like.test_mask]
    all_ones = f1_micro(np.ones_like(truth), truth)  # the best constant micro-F1 here
    assert metrics["f1_micro"] > all_ones + 0.2, (algorithm, metrics, all_ones)
    assert losses[-1] < losses[0], losses  # the mean sigmoid cross-entropy over labels falls
