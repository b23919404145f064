"""gcn-central: full-batch centralized two-layer GCN (Kipf & Welling, ICLR 2017), Feras's
"full-batch centralized GCN" baseline.

The model is :mod:`fedrec.models.gcn` (the one fedavg-gcn federates) on the whole graph: every
feature, edge and training label in one place. One round is one epoch, that is one Adam step on
the mean loss of the training nodes (softmax cross-entropy; binary cross-entropy averaged over
the labels of a multi-label graph), with fresh dropout masks from ``(seed, round)``. Evaluation
and weight decay as :mod:`fedrec.algorithms.gcn_common` describes; Kipf & Welling's early
stopping on the validation loss is replaced by the runner's choice of the round with the best
validation accuracy (evaluated every round by default).

Nothing is sent: the ledger stays empty and there is no privacy guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedrec.algorithms.base import AlgorithmSpec
from fedrec.algorithms.gcn_common import GCNNodeConfig, GCNNodeTrainer
from fedrec.algorithms.methods.gcn_central.meta import METHOD
from fedrec.config import option
from fedrec.data.types import Dataset
from fedrec.models import gcn

NAME = METHOD.name


@dataclass
class GCNCentralConfig(GCNNodeConfig):
    """One round is one full-batch epoch."""

    rounds: int = option(200, "full-batch epochs")
    eval_every: int = option(1)


class GCNCentralTrainer(GCNNodeTrainer):
    def __init__(self, cfg: GCNCentralConfig, dataset: Dataset, device: torch.device) -> None:
        super().__init__(cfg, dataset, device, NAME)

    def train_round(self, rnd: int) -> dict[str, float]:
        z = gcn.logits(self.params, self.adj, self.x, self.cfg.feature_dropout,
                       self.round_generator(rnd))
        nodes = self.train_nodes
        loss = gcn.node_losses(z[nodes], self.y[nodes], self.multilabel).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return {"train_loss": float(loss.detach())}


def build_gcn_central(cfg: GCNCentralConfig, dataset: Dataset, device: torch.device
                      ) -> GCNCentralTrainer:
    return GCNCentralTrainer(cfg, dataset, device)


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=GCNCentralConfig,
    build=build_gcn_central,
)

__all__ = ["SPEC", "GCNCentralConfig", "GCNCentralTrainer", "build_gcn_central"]
