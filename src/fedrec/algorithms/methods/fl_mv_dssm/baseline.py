"""What FL-MV-DSSM is measured against on the same split: a most-popular ranking (the floor)
and a centralized DSSM per view (:class:`CentralDSSM`)."""

from __future__ import annotations

import numpy as np
import torch

from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.algorithms.methods.fl_mv_dssm.view import init_user_model
from fedrec.algorithms.mf_common import SplitRanking
from fedrec.core.rng import torch_generator
from fedrec.data.multiview import MultiViewData
from fedrec.errors import ConfigError
from fedrec.models import dssm, dssm_stacked


def most_popular_metrics(mv: MultiViewData, topk: int = 10,
                         split: str = "test") -> dict[str, float]:
    """Precision/Recall/NDCG/HitRate@``topk`` on ``split`` of ranking every item a user has not
    trained on by its number of training positives (the same for every user)."""
    task = mv.task
    counts = np.bincount(task.train.items, minlength=task.num_items).astype(np.float32)
    scores = torch.from_numpy(counts)
    ranking = SplitRanking(task, (topk,))
    return ranking(lambda users: scores.expand(len(users), -1), split)


class CentralDSSM:
    """Centralized DSSM on one view (issue item 6's "centralized DSSM per view"): the same towers
    (:mod:`fedrec.models.dssm`, ``cfg.widths``, ``gamma``, ``num_negatives``) trained with every
    training positive of ``mv.task`` in one place. An epoch visits the positives in a seeded
    random order, ``batch`` pairs per step (default: the views' ``client_batch``), each with
    ``num_negatives`` uniform items that user has not trained on, and takes SGD steps at the
    views' ``client_lr``: FL-MV-DSSM's local training with the data pooled. Ranking: the cosine
    of the user and item vectors (the softmax of equation 5 keeps its order); no federation,
    no privacy. The user tower starts from the federated one's public initial model."""

    def __init__(self, cfg: FLMVDSSMConfig, mv: MultiViewData, view: str,
                 batch: int | None = None) -> None:
        if view not in mv.view_names:
            raise ConfigError(f"view must be one of {', '.join(mv.view_names)}, got {view!r}")
        self.cfg, self.mv, self.view = cfg, mv, view
        self.batch = batch or cfg.client_batch
        task = mv.task
        self.x_users = torch.from_numpy(mv.user_views[mv.view_names.index(view)])
        self.items = dssm_stacked.SparseRows.of(mv.item_features)
        self.dense_items = torch.from_numpy(mv.item_features)
        item = dssm.init_tower(mv.item_features.shape[1], cfg.widths,
                               torch_generator(cfg.seed, "fl-mv-dssm-item"))
        self.item = dssm_stacked.stack([item])
        self.user = dssm_stacked.stack([init_user_model(cfg, view, self.x_users.shape[1])])
        self.pairs = torch.from_numpy(np.stack([task.train.users.astype(np.int64),
                                                task.train.items.astype(np.int64)], axis=1))
        self.trained = torch.zeros(task.num_users, task.num_items, dtype=torch.bool)
        self.trained[self.pairs[:, 0], self.pairs[:, 1]] = True
        self.ranking = SplitRanking(task, (cfg.topk,))
        self.epochs = 0

    def _negatives(self, users: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``num_negatives`` uniform items per user, redrawn where the user trained on one."""
        n_items = self.trained.shape[1]
        negs = torch.randint(n_items, (len(users), self.cfg.num_negatives), generator=gen)
        bad = self.trained[users[:, None], negs]
        while bad.any():
            negs[bad] = torch.randint(n_items, (int(bad.sum()),), generator=gen)
            bad = self.trained[users[:, None], negs]
        return negs

    def fit_epoch(self, max_steps: int | None = None) -> float:
        """One epoch (``max_steps``: only its first that many steps, a shortened epoch for a
        quick check); the mean loss of its steps."""
        cfg = self.cfg
        self.epochs += 1
        gen = torch_generator(cfg.seed, "dssm-central", self.view, self.epochs)
        order = self.pairs[torch.randperm(len(self.pairs), generator=gen)]
        losses = []
        for batch in order.split(self.batch)[:max_steps]:
            users = batch[:, 0]
            cands = torch.cat([batch[:, 1:], self._negatives(users, gen)], dim=1)
            item = {k: v.detach().requires_grad_(True) for k, v in self.item.items()}
            user = {k: v.detach().requires_grad_(True) for k, v in self.user.items()}
            y_items = dssm_stacked.item_tower(item, self.items, cands.reshape(1, -1))
            y_user = dssm_stacked.tower(user, self.x_users[users][None])[0]
            loss = dssm.softmax_loss(y_user, y_items.reshape(len(batch), cands.shape[1], -1),
                                     cfg.gamma)
            params = [*item.values(), *user.values()]
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads, strict=True):
                    p -= cfg.client_lr * g
            losses.append(float(loss.detach()))
        return float(np.mean(losses)) if losses else 0.0

    def evaluate(self, split: str = "test") -> dict[str, float]:
        with torch.no_grad():
            y_items = dssm.tower({k: v[0] for k, v in self.item.items()}, self.dense_items)
            user = {k: v[0] for k, v in self.user.items()}

            def scores(users: torch.Tensor) -> torch.Tensor:
                y_user = dssm.tower(user, self.x_users[torch.as_tensor(users).long()])
                return dssm.relevance(y_user, y_items)

            return self.ranking(scores, split)
