"""The centralized ranking baselines' trainer (:mod:`fedrec.algorithms.methods.central_ranking`)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedrec.algorithms.base import CentralizedTrainer
from fedrec.algorithms.methods.central_ranking.config import CentralRankingConfig
from fedrec.algorithms.mf_common import SplitRanking
from fedrec.algorithms.ncf_common import implicit_split
from fedrec.core.rng import derive_seed, torch_generator
from fedrec.data.types import Dataset
from fedrec.models import ncf
from fedrec.models.lightgcn import NGCF, LightGCN, normalized_adjacency
from fedrec.models.mf import bpr_loss, sample_negatives
from fedrec.models.training import minibatch_epoch


class CentralRankingTrainer(CentralizedTrainer):
    """LightGCN, NGCF or NeuMF trained on all training interactions (module doc)."""

    def __init__(self, cfg: CentralRankingConfig, dataset: Dataset, device: torch.device) -> None:
        super().__init__()
        self.cfg, self.device = cfg, device
        self.ds = ds = implicit_split(dataset, cfg)
        n_u, n_i = ds.num_users, ds.num_items
        tr = ds.train
        self.users = torch.from_numpy(tr.users.astype(np.int64)).to(device)
        self.items = torch.from_numpy(tr.items.astype(np.int64)).to(device)
        self.keys = torch.sort(self.users * n_i + self.items).values  # for negative sampling
        self.train_csr = tr.to_csr(n_u, n_i)
        self.test_csr = ds.test.to_csr(n_u, n_i)
        self.ranking = SplitRanking(ds, (cfg.topk,), device=device)
        self.adj: torch.Tensor | None = None
        gen = torch_generator(cfg.seed, "central-init", cfg.model)
        if cfg.model == "neumf":
            shape = ncf.NCFShape(cfg.dim, tuple(cfg.layers))
            self.model: torch.nn.Module = ncf.NeuMF(n_u, n_i, shape, cfg.seed)
        else:
            self.adj = normalized_adjacency(tr.users, tr.items, None, n_u, n_i).to(device)
            if cfg.model == "lightgcn":
                self.model = LightGCN(n_u, n_i, cfg.dim, len(cfg.layers), gen)
            else:
                self.model = NGCF(n_u, n_i, cfg.dim, cfg.layers, cfg.mess_dropout, gen)
        self.model.to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)

    # -- training --------------------------------------------------------------------------
    def _bpr(self, u: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        """Batch-mean BPR loss with the reference implementations' L2 term (module doc)."""
        u_emb, i_emb = self.model(self.adj)
        eu, ei, ej = u_emb[u], i_emb[i], i_emb[j]
        if self.cfg.model == "lightgcn":
            e0, n_u = self.model.embedding, self.ds.num_users
            rows = (e0[u], e0[n_u + i], e0[n_u + j])
        else:
            rows = (eu, ei, ej)
        penalty = sum(r.square().sum() for r in rows)
        return (bpr_loss(eu, ei, ej, 0.0) + 0.5 * self.cfg.reg * penalty) / len(u)

    def _bce(self, u: torch.Tensor, i: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Batch-mean NCF log loss plus L2 on the batch's embedding rows (module doc)."""
        m: ncf.NeuMF = self.model  # type: ignore[assignment]
        bce = F.binary_cross_entropy_with_logits(m(u, i), y, reduction="sum")
        penalty = m.user[u].square().sum() + m.item[i].square().sum()
        return (bce + 0.5 * self.cfg.reg * penalty) / len(u)

    def train_round(self, rnd: int) -> dict[str, float]:
        cfg, n_i = self.cfg, self.ds.num_items
        n, k = len(self.users), cfg.num_negatives
        rep_users = self.users.repeat_interleave(k)
        row = torch.arange(n * k, device=self.device)
        neg = sample_negatives(derive_seed(cfg.seed, rnd, "central-negatives"), rep_users, row,
                               n_i, self.keys)
        if cfg.model == "neumf":
            # Instances (u, item, label): every positive once, its k negatives once each.
            cols = (torch.cat([self.users, rep_users]), torch.cat([self.items, neg]),
                    torch.cat([torch.ones(n), torch.zeros(n * k)]).to(self.device))
            loss_fn = self._bce
        else:
            # Triples (u, i, j): every positive paired with each of its k negatives.
            cols = (rep_users, self.items.repeat_interleave(k), neg)
            loss_fn = self._bpr
        m = len(cols[0])
        order = torch.randperm(m, generator=torch_generator(cfg.seed, rnd, "central-order"))
        self.model.train()
        total = 0.0
        # NGCF's dropout draws from torch's global generator: seed a forked copy per epoch so
        # the epoch is a function of (seed, epoch) alone (exact resume) and the caller's
        # generator is left as it was.
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(derive_seed(cfg.seed, rnd, "central-dropout"))
            steps = minibatch_epoch(order.to(self.device), cfg.batch,
                                    lambda idx: loss_fn(*(c[idx] for c in cols)), self.opt)
        for batch_mean, size in steps:  # one by one, as the batches came
            total += batch_mean * size
        return {"train_loss": total / m}

    # -- evaluation ------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, split: str = "test") -> dict[str, float]:
        """Full-ranking ``Recall@K``, ``NDCG@K``, ... on ``split`` (:class:`SplitRanking`)."""
        self.model.eval()
        if isinstance(self.model, ncf.NeuMF):
            score_fn = self.model.score_all
            # score_all holds ~ users * items * 2 dim floats: keep a batch near 2^19 pairs.
            batch = max(1, (1 << 19) // self.ds.num_items)
        else:
            u_emb, i_emb = self.model(self.adj)

            def score_fn(users: torch.Tensor) -> torch.Tensor:
                return u_emb[users] @ i_emb.T

            batch = 2048
        return self.ranking(score_fn, split, batch_size=batch)

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        # Copies: torch's state dicts share the live tensors, which keep training.
        return {"model": copy.deepcopy(self.model.state_dict()),
                "opt": copy.deepcopy(self.opt.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
