"""PMF: centralized matrix factorisation (Salakhutdinov & Mnih 2007), the no-federation baseline.

All ratings sit in one place; minibatch Adam on the losses of :mod:`fedrec.models.mf` (MSE for
explicit ratings, BPR for implicit feedback; ``implicit: per-user`` turns ratings into implicit
positives on the ranking methods' split, :func:`fedrec.data.implicit.as_implicit`). One "round"
is one epoch. Nothing is sent, so its ledger stays empty and it has no privacy guarantee.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import AlgorithmSpec, CentralizedTrainer
from fedrec.algorithms.methods.pmf.meta import METHOD
from fedrec.algorithms.mf_common import (
    MFConfig,
    SplitRanking,
    implicit_option,
    rating_unit,
    scale_midpoint,
)
from fedrec.config import check_choice, check_range, option
from fedrec.core.rng import derive_seed, torch_generator
from fedrec.data.implicit import IMPLICIT_CHOICES, as_implicit
from fedrec.data.types import Dataset, InteractionDataset, RatingDataset, check_split
from fedrec.metrics import mae, rmse
from fedrec.models.mf import bpr_loss, init_factors, predict_ratings, rating_loss, sample_negatives
from fedrec.models.training import minibatch_epoch


@dataclass
class PMFConfig(MFConfig):
    """One round is one epoch over the training rows."""

    rounds: int = option(20, "epochs over the training rows")
    eval_every: int = option(5)
    lr: float = option(0.005, "Adam learning rate")
    reg: float = option(0.1, "L2 weight on the factors and biases of each row")
    batch_size: int = option(1024, "training rows per Adam step")
    implicit: str = implicit_option()

    def validate(self) -> None:
        super().validate()
        check_range("batch_size", self.batch_size, 1)
        check_choice("implicit", self.implicit, IMPLICIT_CHOICES)


class PMFTrainer(CentralizedTrainer):
    def __init__(self, cfg: PMFConfig, dataset: Dataset, device: torch.device) -> None:
        super().__init__()
        if not isinstance(dataset, RatingDataset | InteractionDataset):
            raise TypeError("PMF needs a rating or interaction dataset")
        self.cfg = cfg
        self.ds = dataset
        self.device = device
        self.explicit = isinstance(dataset, RatingDataset)
        self.mu = scale_midpoint(dataset) if self.explicit else 0.0
        # Trained in rating units (ratings / unit), so one learning rate fits every scale.
        self.unit = (rating_unit((dataset.rating_min, dataset.rating_max)) if self.explicit
                     else 1.0)
        gen = torch_generator(cfg.seed, "pmf-init")
        self.p = init_factors(dataset.num_users, cfg.dim, gen).to(device).requires_grad_(True)
        self.q = init_factors(dataset.num_items, cfg.dim, gen).to(device).requires_grad_(True)
        self.b_u = torch.zeros(dataset.num_users, device=device, requires_grad=True)
        self.b_i = torch.zeros(dataset.num_items, device=device, requires_grad=True)
        params = [self.p, self.q, self.b_u, self.b_i] if self.explicit else [self.p, self.q]
        self.opt = torch.optim.Adam(params, lr=cfg.lr)
        tr = dataset.train
        self.users = torch.from_numpy(tr.users.astype(np.int64)).to(device)
        self.items = torch.from_numpy(tr.items.astype(np.int64)).to(device)
        self.values = torch.from_numpy(tr.values.astype(np.float32)).to(device) / self.unit
        self.keys = torch.sort(self.users * dataset.num_items + self.items).values
        self.ranking: SplitRanking | None = None  # built at the first ranking evaluation

    def train_round(self, rnd: int) -> dict[str, float]:
        cfg = self.cfg
        n = len(self.users)
        order = torch.randperm(n, generator=torch_generator(cfg.seed, rnd, "pmf-order"))
        order = order.to(self.device)
        if not self.explicit:
            seed = derive_seed(cfg.seed, rnd, "pmf-negatives")
            negatives = sample_negatives(
                seed, self.users, torch.arange(n, device=self.device), self.ds.num_items, self.keys
            )
        sums: list[float] = []  # each batch's summed loss, as the batches came

        def loss_of(idx: torch.Tensor) -> torch.Tensor:
            u, i = self.users[idx], self.items[idx]
            if self.explicit:
                loss = rating_loss(
                    self.p[u], self.b_u[u], self.q[i], self.b_i[i], self.values[idx],
                    self.mu / self.unit, cfg.reg,
                )
            else:
                loss = bpr_loss(self.p[u], self.q[i], self.q[negatives[idx]], cfg.reg)
            sums.append(loss.item())
            return loss / len(idx)

        minibatch_epoch(order, cfg.batch_size, loss_of, self.opt)
        total = 0.0
        for batch_sum in sums:
            total += batch_sum
        return {"train_loss": total / n}

    @torch.no_grad()
    def evaluate(self, split: str = "test") -> dict[str, float]:
        te = getattr(self.ds, check_split(split))
        if self.explicit:
            if not len(te):
                return {}
            u = torch.from_numpy(te.users.astype(np.int64)).to(self.device)
            i = torch.from_numpy(te.items.astype(np.int64)).to(self.device)
            pred = predict_ratings(self.p[u], self.b_u[u], self.q[i], self.b_i[i], self.mu,
                                   self.unit)
            pred = pred.clamp(self.ds.rating_min, self.ds.rating_max).cpu().numpy()
            return {"rmse": rmse(pred, te.values), "mae": mae(pred, te.values)}
        if self.ranking is None:
            self.ranking = SplitRanking(self.ds, (self.cfg.topk,), device=self.device)
        return self.ranking(lambda users: self.p[users] @ self.q.T, split)

    def state_dict(self) -> dict[str, Any]:
        return {
            "params": [t.detach().cpu().clone() for t in (self.p, self.q, self.b_u, self.b_i)],
            "opt": copy.deepcopy(self.opt.state_dict()),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        with torch.no_grad():
            for t, v in zip((self.p, self.q, self.b_u, self.b_i), state["params"], strict=True):
                t.copy_(v)
        self.opt.load_state_dict(state["opt"])


def build_pmf(cfg: PMFConfig, dataset: Dataset, device: torch.device) -> PMFTrainer:
    return PMFTrainer(cfg, as_implicit(dataset, cfg.implicit), device)


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=PMFConfig,
    build=build_pmf,
)
