"""What the node-classification GCNs share (gcn-central, saint-central, feras): the model
options of :mod:`fedrec.models.gcn`, GraphSAINT's sampler options and the sampler they name
(:class:`SaintSamplerConfig`, :func:`make_saint_sampler`), and a trainer base that holds the
graph, the weights and their Adam optimiser, and evaluates the full graph.

Evaluation: the full-graph logits without dropout, on the nodes of the split's mask; a
single-label graph reports ``accuracy`` (equal to micro-F1 there), a multi-label one ``f1_micro``
over all (node, label) decisions (:func:`fedrec.metrics.classification.f1_micro`). The runner
selects the round on the validation metric (``fedrec.rounds.SELECT_ON``).

Weight decay, as in Kipf & Welling's code, is an L2 penalty on the first layer's weight matrix
only (``decay_all_layers`` extends it to every weight and bias); Adam's coupled ``weight_decay``
is exactly the gradient of ``weight_decay / 2 * ||W1||^2``, their loss term.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import CentralizedTrainer
from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.rng import torch_generator
from fedrec.data.sampling import (
    CsrGraph,
    EdgeSampler,
    FrontierSampler,
    NodeSampler,
    RandomWalkSampler,
    Sampler,
)
from fedrec.data.types import Dataset, GraphDataset, check_split
from fedrec.errors import ConfigError
from fedrec.metrics.classification import f1_micro
from fedrec.models import gcn, gcn_dense


@dataclass
class GCNNodeConfig(RunConfig):
    """Kipf & Welling's settings for Cora by default."""

    hidden: int = option(16, "hidden units of the GCN's first layer")
    feature_dropout: float = option(0.5, "dropout rate on each GCN layer's input (training)")
    lr: float = option(0.01, "Adam learning rate")
    weight_decay: float = option(5e-4, "L2 weight on the first layer's weights (Adam's)")
    decay_all_layers: bool = option(False, "apply weight_decay to every weight and bias")

    def validate(self) -> None:
        super().validate()
        check_range("hidden", self.hidden, 1)
        check_range("feature_dropout", self.feature_dropout, 0.0, 0.99)
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("weight_decay", self.weight_decay, 0.0)


SAINT_SAMPLERS = ("node", "edge", "rw", "mrw")
#: The networks a centralized trainer can fit, by name: modules with ``init_params(num_features,
#: hidden, num_classes, generator)`` and ``logits(params, adj, x, rate, generator)``.
NETWORKS: dict[str, Any] = {"gcn": gcn, "gcn-dense": gcn_dense}


@dataclass
class SaintSamplerConfig(GCNNodeConfig):
    """GraphSAINT's sampler options; budgets sized for Cora (2,708 nodes): subgraphs of roughly
    600 to 900 nodes."""

    sampler: str = option("rw", "subgraph sampler: node, edge, rw (random walk) or mrw "
                                "(multi-dimensional random walk)")
    node_budget: int = option(1000, "node draws (node sampler); nodes in all (mrw)")
    edge_budget: int = option(400, "edge draws (edge sampler)")
    num_roots: int = option(300, "walk roots (rw)")
    walk_length: int = option(2, "steps per walk (rw)")
    frontier_size: int = option(200, "frontier nodes (mrw)")
    presample: int = option(200, "subgraphs pre-sampled to estimate the normalisation")

    def validate(self) -> None:
        super().validate()
        check_choice("sampler", self.sampler, SAINT_SAMPLERS)
        check_range("presample", self.presample, 1)


def make_saint_sampler(method: str, cfg: SaintSamplerConfig, graph: CsrGraph) -> Sampler:
    """The sampler ``cfg.sampler`` names, with its budgets; a budget the graph cannot meet is
    the sampler's one-line ConfigError, prefixed with the method and the sampler's name."""
    try:
        if cfg.sampler == "node":
            return NodeSampler(graph, cfg.node_budget)
        if cfg.sampler == "edge":
            return EdgeSampler(graph, cfg.edge_budget)
        if cfg.sampler == "rw":
            return RandomWalkSampler(graph, cfg.num_roots, cfg.walk_length)
        return FrontierSampler(graph, cfg.frontier_size, cfg.node_budget)
    except ConfigError as err:
        raise ConfigError(f"{method} sampler={cfg.sampler}: {err}") from err


def require_graph(dataset: Dataset, method: str) -> GraphDataset:
    if not isinstance(dataset, GraphDataset):
        raise ConfigError(f"{method} needs a graph dataset (node classification); "
                          f"{dataset.name} is a {dataset.KIND} dataset")
    if not dataset.train_mask.any():
        raise ConfigError(f"{method}: {dataset.name} has no training node")
    return dataset


class GCNNodeTrainer(CentralizedTrainer):
    """The graph on ``device`` (row-normalised features, ``A_hat``, labels), the weights of
    the network ``network`` names (:data:`NETWORKS`) initialised from ``(seed, method,
    "init")`` and their optimiser; subclasses train."""

    def __init__(self, cfg: GCNNodeConfig, dataset: Dataset, device: torch.device,
                 method: str, network: str = "gcn") -> None:
        super().__init__()
        ds = require_graph(dataset, method)
        self.cfg = cfg
        self.ds = ds
        self.method = method
        self.device = device
        self.net = NETWORKS[network]
        self.multilabel = bool(ds.multilabel)
        self.x = gcn.row_normalized(ds.x).to(device)
        self.adj = gcn.normalized_adjacency(ds.edge_index, ds.num_nodes).to(device)
        self.y = torch.from_numpy(np.asarray(ds.y, dtype=np.int64)).to(device)
        self.train_nodes = torch.from_numpy(np.flatnonzero(ds.train_mask)).to(device)
        params = self.net.init_params(ds.num_features, cfg.hidden, ds.num_classes,
                                 torch_generator(cfg.seed, method, "init"))
        self.params = {k: v.to(device).requires_grad_(True) for k, v in params.items()}
        decayed = list(self.params) if cfg.decay_all_layers else ["w1"]
        self.opt = torch.optim.Adam(
            [{"params": [self.params[k] for k in decayed], "weight_decay": cfg.weight_decay},
             {"params": [v for k, v in self.params.items() if k not in decayed],
              "weight_decay": 0.0}], lr=cfg.lr)

    def round_generator(self, rnd: int) -> torch.Generator:
        """The draws of round ``rnd`` (dropout masks, subgraphs), from the public seed."""
        return torch_generator(self.cfg.seed, rnd, self.method, device=self.device)

    @torch.no_grad()
    def evaluate(self, split: str = "test") -> dict[str, float]:
        mask = self.ds.val_mask if check_split(split) == "valid" else self.ds.test_mask
        nodes = np.flatnonzero(mask)
        if not len(nodes):
            return {}
        z = self.net.logits(self.params, self.adj, self.x)
        pred = gcn.predict(z, self.multilabel).cpu().numpy()[nodes]
        truth = np.asarray(self.ds.y)[nodes]
        name = "f1_micro" if self.multilabel else "accuracy"  # equal on single-label nodes
        return {name: f1_micro(pred, truth)}

    def state_dict(self) -> dict[str, Any]:
        return {"params": {k: v.detach().cpu().clone() for k, v in self.params.items()},
                "opt": copy.deepcopy(self.opt.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        with torch.no_grad():
            for k, v in self.params.items():
                v.copy_(state["params"][k])
        self.opt.load_state_dict(state["opt"])
