"""saint-central: centralized GraphSAINT (Zeng et al., ICLR 2020) with every attribute visible,
the upper bound of Feras's comparison.

The model is :mod:`fedrec.models.gcn`'s two-layer GCN, or with ``network=gcn-dense``
:mod:`fedrec.models.gcn_dense`'s two GCN layers and a dense output layer (Feras's network: its
paper keeps "the hidden dimension the same across all methods", so that is the upper bound with
Feras's ``hidden`` and ``feature_dropout``); training is minibatch, one subgraph per
Adam step, drawn from the *whole* graph (transductive, as Feras's sampler: the labels of the
non-training nodes are never read) by the sampler ``sampler`` names
(:mod:`fedrec.data.sampling`):

* ``node`` -- :class:`NodeSampler` with ``node_budget`` draws;
* ``edge`` -- :class:`EdgeSampler` with ``edge_budget`` draws;
* ``rw`` -- :class:`RandomWalkSampler`, ``num_roots`` walks of ``walk_length`` steps;
* ``mrw`` -- :class:`FrontierSampler` (multi-dimensional random walk), a frontier of
  ``frontier_size`` and ``node_budget`` nodes in all.

Before training, ``presample`` subgraphs drawn from ``(seed, "presample")`` estimate GraphSAINT's
coefficients (:func:`estimate_normalization`): the layers on a subgraph aggregate with
:func:`fedrec.models.gcn.subgraph_adjacency` (``A_hat`` divided by ``alpha_{u,v}``) and the
minibatch loss is ``sum_{v in S, v training} L_v / (n_train p_v)``, unbiased for the mean loss of
the training nodes (GraphSAINT's ``1 / lambda_v = 1 / (|V| p_v)`` rescaled from all nodes to
the training ones, since only those carry a label here). One round is one GraphSAINT epoch:
``subgraphs_per_round`` subgraphs, by default (0) as many as cover the graph's nodes once on
average (``ceil(|V| / mean pre-sampled subgraph size)``). Subgraphs and dropout masks of round
``r`` come from ``(seed, r)``. Evaluation is full-graph (:mod:`fedrec.algorithms.gcn_common`).

Nothing is sent: the ledger stays empty and there is no privacy guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fedrec.algorithms.base import AlgorithmSpec
from fedrec.algorithms.gcn_common import (
    NETWORKS,
    SAINT_SAMPLERS,
    GCNNodeTrainer,
    SaintSamplerConfig,
    make_saint_sampler,
)
from fedrec.algorithms.methods.saint_central.meta import METHOD
from fedrec.config import check_choice, check_range, option
from fedrec.core.rng import torch_generator
from fedrec.data.sampling import CsrGraph, Sampler, estimate_normalization
from fedrec.data.types import Dataset
from fedrec.models import gcn

NAME = METHOD.name
SAMPLERS = SAINT_SAMPLERS


@dataclass
class SaintCentralConfig(SaintSamplerConfig):
    """Budgets sized for Cora (2,708 nodes): subgraphs of roughly 600 to 900 nodes."""

    rounds: int = option(100, "GraphSAINT epochs (subgraphs_per_round Adam steps each)")
    eval_every: int = option(1)
    subgraphs_per_round: int = option(0, "Adam steps per round (0: cover |V| nodes once on "
                                         "average)")
    network: str = option("gcn", "gcn: two GCN layers (Kipf & Welling's); gcn-dense: two GCN "
                                 "layers of hidden units and a dense output layer (Feras's)")

    def validate(self) -> None:
        super().validate()
        check_range("subgraphs_per_round", self.subgraphs_per_round, 0)
        check_choice("network", self.network, tuple(NETWORKS))


def make_sampler(cfg: SaintCentralConfig, graph: CsrGraph) -> Sampler:
    """The sampler ``cfg.sampler`` names (:func:`make_saint_sampler`)."""
    return make_saint_sampler(NAME, cfg, graph)


class SaintCentralTrainer(GCNNodeTrainer):
    def __init__(self, cfg: SaintCentralConfig, dataset: Dataset, device: torch.device) -> None:
        super().__init__(cfg, dataset, device, NAME, cfg.network)
        self.cfg: SaintCentralConfig = cfg
        self.graph = CsrGraph.from_edge_index(self.ds.edge_index, self.ds.num_nodes).to(device)
        self.sampler = make_sampler(cfg, self.graph)
        norm = estimate_normalization(self.sampler, cfg.presample,
                                      torch_generator(cfg.seed, NAME, "presample", device=device))
        self.alpha = norm.alpha
        assert norm.node_count is not None  # estimated, so the counts are there
        self.loss_weight = (1.0 / (len(self.train_nodes) * norm.node_prob)).float()
        self.is_train = torch.zeros(self.ds.num_nodes, dtype=torch.bool, device=device)
        self.is_train[self.train_nodes] = True
        mean_size = float(norm.node_count.sum()) / cfg.presample
        self.steps = cfg.subgraphs_per_round or math.ceil(self.ds.num_nodes / mean_size)

    def train_round(self, rnd: int) -> dict[str, float]:
        gen = self.round_generator(rnd)
        total, labelled = 0.0, 0
        for _ in range(self.steps):
            sub = self.sampler.sample(gen)
            train = torch.nonzero(self.is_train[sub.nodes]).squeeze(1)  # local ids
            adj = gcn.subgraph_adjacency(sub, self.graph.degree, self.alpha)
            z = self.net.logits(self.params, adj, self.x[sub.nodes], self.cfg.feature_dropout, gen)
            nodes = sub.nodes[train]
            losses = gcn.node_losses(z[train], self.y[nodes], self.multilabel)
            loss = (losses * self.loss_weight[nodes]).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += float(losses.detach().sum())
            labelled += len(train)
        # The plain mean loss of the training nodes the round's subgraphs held.
        return {"train_loss": total / max(labelled, 1), "subgraphs": float(self.steps)}


def build_saint_central(cfg: SaintCentralConfig, dataset: Dataset, device: torch.device
                        ) -> SaintCentralTrainer:
    return SaintCentralTrainer(cfg, dataset, device)


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=SaintCentralConfig,
    build=build_saint_central,
)

__all__ = ["SAMPLERS", "SPEC", "SaintCentralConfig", "SaintCentralTrainer",
           "build_saint_central", "make_sampler"]
