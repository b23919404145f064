"""A fedavg-gcn host: trains the shared GCN on its own nodes, scores it on its own held-out nodes.

A host's data is its :class:`~fedrec.data.HostPartition` (its private nodes, the public ones and
the edges among them); what it sends is the trained weights, its number of labelled training
nodes (the FedAvg weight) and its last loss, or, when asked to evaluate, its accuracy on its own
nodes of the split and their number. Dropout masks are drawn from the host's own secret.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fedrec.algorithms.methods.fedavg_gcn.config import FedAvgGCNConfig
from fedrec.algorithms.methods.fedavg_gcn.steps import EVALUATE, TRAIN
from fedrec.core.codec import Payload
from fedrec.data import HostPartition
from fedrec.data.types import check_split
from fedrec.federation.runtime import PartyContext, PartyLogic
from fedrec.federation.steps import step
from fedrec.metrics.classification import f1_micro
from fedrec.models import gcn


def host_id(index: int) -> str:
    """The party id of host ``index`` (a client that is not a user)."""
    return f"host-{index}"


def weights_of(payload: Payload) -> gcn.Params:
    return {k: torch.as_tensor(payload[k]).float() for k in gcn.PARAM_NAMES}


class GCNHost(PartyLogic):
    def __init__(self, cfg: FedAvgGCNConfig) -> None:
        self.cfg = cfg

    @staticmethod
    def _graph(part: HostPartition) -> tuple[torch.Tensor, torch.Tensor]:
        return gcn.normalized_adjacency(part.edge_index, part.num_nodes), gcn.row_normalized(
            part.x)

    @step(TRAIN, broadcast=True)
    def train(self, ctx: PartyContext, payload: Payload) -> Payload:
        part: HostPartition = ctx.data
        params = {k: v.clone().requires_grad_() for k, v in weights_of(payload).items()}
        train = torch.from_numpy(np.flatnonzero(part.train_mask))
        if len(train) == 0:  # nothing to learn from: the weights back, with FedAvg weight 0
            return {**{k: v.detach() for k, v in params.items()}, "n": 0, "loss": 0.0}
        adj, x = self._graph(part)
        labels = torch.from_numpy(np.array(part.y, dtype=np.int64))[train]
        opt = torch.optim.Adam(params.values(), lr=self.cfg.lr,
                               weight_decay=self.cfg.weight_decay)
        gen = ctx.generator()
        loss = torch.zeros(())
        for _ in range(self.cfg.local_epochs):
            opt.zero_grad()
            z = gcn.logits(params, adj, x, self.cfg.feature_dropout, gen)
            loss = F.cross_entropy(z[train], labels)
            loss.backward()
            opt.step()
        return {**{k: v.detach() for k, v in params.items()}, "n": len(train),
                "loss": float(loss.detach())}

    @step(EVALUATE, broadcast=True)
    def evaluate(self, ctx: PartyContext, payload: Payload) -> Payload:
        part: HostPartition = ctx.data
        split = check_split(str(payload["split"]))
        nodes = np.flatnonzero(part.val_mask if split == "valid" else part.test_mask)
        if len(nodes) == 0:
            return {"accuracy": 0.0, "count": 0}
        adj, x = self._graph(part)
        with torch.no_grad():
            pred = gcn.logits(weights_of(payload), adj, x).argmax(dim=1).numpy()[nodes]
        # Single-label: micro F1 is the accuracy.
        return {"accuracy": f1_micro(pred, np.asarray(part.y)[nodes]), "count": len(nodes)}
