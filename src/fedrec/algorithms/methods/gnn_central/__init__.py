"""The FedGNN model trained centrally: the "same GNN, no federation, no privacy" baseline.

Wu et al. (KDD 2021) compare FedGNN with centralized GNN recommenders; this trainer gives the
distance between FedGNN and the very model it federates. Every user's local subgraph is the one
of :mod:`fedrec.models.gnn` (user node, rated items, neighbour users through a mean aggregator),
but all ratings sit in one place, so:

* neighbours need no expansion protocol: the neighbour mean of user ``u`` is exact and uses every
  co-rater of every item ``u`` rated (no cap ``N``), and it is differentiable (the "trainable
  neighbours" variant)::

      nb_mean_u = (sum_{t in I(u)} sum_{v in U(t), v != u} e_v) / (sum_{t in I(u)} (|U(t)| - 1))
                = (A A^T E - deg_u e_u)_u / ((A deg_I)_u - deg_u)

  with ``A`` the user x item 0/1 matrix of training ratings (two sparse products per batch);
* the loss is the mean error over a minibatch of users' ratings, minimised with Adam over the user
  table, the item table and the GNN weights; per-user losses come from the same
  :func:`fedrec.models.gnn.client_loss` mapped over the batch with ``torch.func.vmap``.

One round is one epoch over the users. Nothing is sent: the ledger stays empty and there is no
privacy guarantee. Evaluation scores each user's items of the evaluated split (validation or
test) as FedGNN's clients do.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch.func import vmap

from fedrec.algorithms.base import AlgorithmSpec, CentralizedTrainer
from fedrec.algorithms.gnn_common import GNNModelConfig
from fedrec.algorithms.methods.gnn_central.meta import METHOD
from fedrec.algorithms.mf_common import rating_unit, scale_midpoint
from fedrec.config import check_range, option
from fedrec.core.rng import torch_generator
from fedrec.data.partition import ClientData, partition_by_user
from fedrec.data.types import Dataset, RatingDataset
from fedrec.federation.runtime import cohort_chunks
from fedrec.metrics import mae, rmse
from fedrec.models import gnn
from fedrec.models.gnn import pad_subgraphs, pad_tests
from fedrec.models.training import minibatch_epoch


@dataclass
class GNNCentralConfig(GNNModelConfig):
    """One round is one epoch."""

    rounds: int = option(40, "epochs")
    eval_every: int = option(5)
    # 40 epochs on ML-100K: RMSE 0.930 (0: 0.939; l2 0.05: 0.941; no neighbours: 0.939).
    feature_dropout: float = option(0.2)
    lr: float = option(0.001, "Adam learning rate")
    batch_users: int = option(32, "users per step (their whole local subgraphs)")
    l2: float = option(0.0, "weight decay on the embeddings used in a step")
    bias: bool = option(True, "user and item rating biases")
    neighbours: bool = option(True, "exact neighbour mean over all co-raters (differentiable)")

    def validate(self) -> None:
        super().validate()
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("batch_users", self.batch_users, 1)
        check_range("l2", self.l2, 0.0)


def _sparse(m: sp.csr_matrix) -> torch.Tensor:
    m = m.tocsr().astype(np.float32)
    return torch.sparse_csr_tensor(torch.from_numpy(m.indptr.astype(np.int64)),
                                   torch.from_numpy(m.indices.astype(np.int64)),
                                   torch.from_numpy(m.data), m.shape,
                                   check_invariants=True)


class GNNCentralTrainer(CentralizedTrainer):
    def __init__(self, cfg: GNNCentralConfig, dataset: Dataset, device: torch.device) -> None:
        super().__init__()
        if not isinstance(dataset, RatingDataset):
            raise TypeError("the centralized GNN needs an explicit rating dataset")
        self.cfg = cfg
        self.ds = dataset
        self.mu = scale_midpoint(dataset)
        self.users: list[ClientData] = list(partition_by_user(dataset).values())
        width = cfg.dim + (1 if cfg.bias else 0)
        gen = torch_generator(cfg.seed, "gnn-central-init")
        self.e_user = torch.randn(dataset.num_users, width, generator=gen) * cfg.init_std
        self.e_item = torch.randn(dataset.num_items, width, generator=gen) * cfg.init_std
        if cfg.bias:
            self.e_user[:, -1] = 0.0
            self.e_item[:, -1] = 0.0
        self.params = gnn.init_params(cfg.gnn, cfg.dim, torch_generator(cfg.seed, "gnn-init"))
        self.tensors = [self.e_user, self.e_item, *self.params.values()]
        for t in self.tensors:
            t.requires_grad_(True)
        self.opt = torch.optim.Adam(self.tensors, lr=cfg.lr)
        a = dataset.train.to_csr(dataset.num_users, dataset.num_items)
        a.data[:] = 1.0
        self.a, self.a_t = _sparse(a), _sparse(a.T.tocsr())
        deg_u = np.asarray(a.sum(1)).ravel()
        deg_i = np.asarray(a.sum(0)).ravel()
        self.deg_u = torch.from_numpy(deg_u.astype(np.float32))
        self.nb_count = torch.from_numpy((a @ deg_i - deg_u).astype(np.float32)).clamp(min=1)
        self.unit = rating_unit((dataset.rating_min, dataset.rating_max))  # as FedGNN's
        self.f = gnn.loss_fn(cfg.gnn, cfg.loss, "sum", self.mu / self.unit)

    def _param_dict(self) -> gnn.Params:
        return dict(zip(self.params, self.tensors[2:], strict=True))

    def _nb_means(self, rows: torch.Tensor) -> torch.Tensor:
        if not self.cfg.neighbours:
            return torch.zeros(len(rows), self.cfg.dim)
        e = self.e_user[:, : self.cfg.dim]
        total = (self.a @ (self.a_t @ e))[rows] - self.deg_u[rows, None] * e[rows]
        return total / self.nb_count[rows, None]

    def train_round(self, rnd: int) -> dict[str, float]:
        cfg = self.cfg
        gen = torch_generator(cfg.seed, rnd, "gnn-central")
        order = torch.randperm(len(self.users), generator=gen)
        # Each batch's summed per-user loss and rating count, as the batches came.
        sums: list[tuple[float, int]] = []

        def loss_of(idx: torch.Tensor) -> torch.Tensor:
            batch = [self.users[i] for i in idx.tolist()]
            rows = torch.tensor([d.user for d in batch])
            t = pad_subgraphs(batch, self.e_user[rows], [None] * len(batch), self.e_item,
                              cfg.dim)
            e_u, e_items = t["e_u"], t["e_items"]
            if cfg.feature_dropout > 0:
                rate = cfg.feature_dropout
                e_items = e_items * gnn.dropout_keep(tuple(e_items.shape), rate, cfg.dim, gen)
                e_u = e_u * gnn.dropout_keep(tuple(e_u.shape), rate, cfg.dim, gen)
            per_user = vmap(self.f, in_dims=(None, 0, 0, 0, 0, 0))(
                self._param_dict(), e_u, e_items, self._nb_means(rows), t["mask"],
                t["ratings"] / self.unit)
            n = int(t["mask"].sum())
            loss = per_user.sum() / n
            if cfg.l2 > 0:
                loss = loss + cfg.l2 * (e_u.square().sum() + e_items.square().sum()) / n
            sums.append((float(per_user.detach().sum()), n))
            return loss

        minibatch_epoch(order, cfg.batch_users, loss_of, self.opt)
        losses, count = 0.0, 0
        for batch_sum, n in sums:
            losses += batch_sum
            count += n
        return {"train_loss": losses / max(count, 1)}

    @torch.no_grad()
    def evaluate(self, split: str = "test") -> dict[str, float]:
        cfg = self.cfg
        lo, hi = self.ds.rating_min, self.ds.rating_max
        preds, truth = [], []
        sizes = np.array([d.num_train + len(d.rows(split)[0]) for d in self.users])
        for idx in cohort_chunks(sizes, cfg.chunk_slots):
            batch = [self.users[i] for i in idx]
            rows = torch.tensor([d.user for d in batch])
            t = pad_subgraphs(batch, self.e_user[rows], [None] * len(batch), self.e_item,
                              cfg.dim)
            test, vals, tmask = pad_tests(batch, split)
            pred = self.unit * gnn.cohort_predict(
                cfg.gnn, self.mu / self.unit, self._param_dict(), t["e_u"], t["e_items"],
                t["mask"], self._nb_means(rows), self.e_item[test])
            preds.append(pred.clamp(lo, hi)[tmask].numpy())
            truth.append(vals[tmask].numpy())
        p, y = np.concatenate(preds), np.concatenate(truth)
        if not len(y):
            return {}
        return {"rmse": rmse(p, y), "mae": mae(p, y)}

    def state_dict(self) -> dict[str, Any]:
        return {"tensors": [t.detach().clone() for t in self.tensors],
                "opt": copy.deepcopy(self.opt.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        with torch.no_grad():
            for t, v in zip(self.tensors, state["tensors"], strict=True):
                t.copy_(v)
        self.opt.load_state_dict(state["opt"])


def build_gnn_central(cfg: GNNCentralConfig, dataset: Dataset, device: torch.device
                      ) -> GNNCentralTrainer:
    return GNNCentralTrainer(cfg, dataset, device)


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=GNNCentralConfig,
    build=build_gnn_central,
)
