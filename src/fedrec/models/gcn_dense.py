"""Two GCN layers and a dense output layer (Feras's network, the paper's setting), written
functionally as :mod:`fedrec.models.gcn`.

::

    P  = drop(X) W1
    H1 = ReLU(A P + b1)
    H2 = ReLU(A drop(H1) W2 + b2)
    Z  = drop(H2) W3 + b3               logits (softmax / sigmoid cross-entropy)

``A`` is ``A_hat`` on the full graph or GraphSAINT's operator on a sampled subgraph
(:func:`fedrec.models.gcn.subgraph_adjacency`). Feras's paper puts a ReLU after every layer;
the dense layer's output here is the logits, since a ReLU before the softmax would only clip
negative scores. The steps are separate functions because Feras's hosts share what lies between
them (:mod:`fedrec.algorithms.methods.feras.model`); :func:`logits` chains them for a model that
shares
nothing (centralized GraphSAINT on the same network). Dropout masks come from the caller's
generator, drawn in the order ``X``, ``H1``, ``H2``.
"""

from __future__ import annotations

import torch

from fedrec.models import gcn

Params = dict[str, torch.Tensor]
PARAM_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def init_params(num_features: int, hidden: int, num_classes: int,
                generator: torch.Generator) -> Params:
    """Glorot-uniform weights and zero biases, in :data:`PARAM_NAMES` order (both GCN layers
    ``hidden`` wide)."""
    return {"w1": gcn.glorot(num_features, hidden, generator), "b1": torch.zeros(hidden),
            "w2": gcn.glorot(hidden, hidden, generator), "b2": torch.zeros(hidden),
            "w3": gcn.glorot(hidden, num_classes, generator), "b3": torch.zeros(num_classes)}


def project(p: Params, x: torch.Tensor, rate: float = 0.0,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """``P = drop(X) W1``: the first layer's projection of each node's own attributes, before
    the neighbourhood aggregation."""
    return gcn.dropout(x, rate, generator) @ p["w1"]


def aggregate(p: Params, adj: torch.Tensor, projection: torch.Tensor) -> torch.Tensor:
    """``H1 = ReLU(A P + b1)``."""
    return torch.relu(adj @ projection + p["b1"])


def first_layer(p: Params, adj: torch.Tensor, x: torch.Tensor, rate: float = 0.0,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """``H1``."""
    return aggregate(p, adj, project(p, x, rate, generator))


def rest(p: Params, adj: torch.Tensor, h1: torch.Tensor, rate: float = 0.0,
         generator: torch.Generator | None = None) -> torch.Tensor:
    """The logits ``Z`` from the first layer's output ``H1``."""
    h2 = torch.relu(adj @ (gcn.dropout(h1, rate, generator) @ p["w2"]) + p["b2"])
    return gcn.dropout(h2, rate, generator) @ p["w3"] + p["b3"]


def logits(p: Params, adj: torch.Tensor, x: torch.Tensor, rate: float = 0.0,
           generator: torch.Generator | None = None) -> torch.Tensor:
    """``Z`` of the module docstring; dropout (``rate``) only with a ``generator``
    (training)."""
    return rest(p, adj, first_layer(p, adj, x, rate, generator), rate, generator)
