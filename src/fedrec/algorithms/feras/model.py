"""Feras's network (the paper's setting): two GCN layers and a dense output layer.

::

    P  = drop(X) W1
    H1 = ReLU(A P + b1)                 shared here (p = 1, the paper's): the AS averages H1
    H2 = ReLU(A drop(S(H1)) W2 + b2)
    Z  = drop(H2) W3 + b3               logits (softmax / sigmoid cross-entropy)

With ``share_at = projection`` (an option, not the paper's) the AS averages ``P`` instead:
``H1 = ReLU(A S(P) + b1)`` and ``H2`` reads ``H1`` as it is. A host's own ``H1`` of a node
lacks the attributes of the node's neighbours it cannot see, whoever computes it; ``A S(P)``
has every neighbour's projection (from the hosts that see it).

``A`` is GraphSAINT's operator on a sampled subgraph
(:func:`fedrec.models.gcn.subgraph_adjacency`) in training and the full ``A_hat`` in
evaluation; ``S`` is the shared-embedding layer (:func:`shared`). The paper puts a ReLU after
every layer; the dense layer's output here is the logits, since a ReLU before the softmax would
only clip negative scores. Weights are a ``{name: tensor}`` dict, as :mod:`fedrec.models.gcn`'s.
"""

from __future__ import annotations

import torch

from fedrec.models import gcn

Params = dict[str, torch.Tensor]
PARAM_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def init_params(num_features: int, hidden: int, num_classes: int,
                generator: torch.Generator) -> Params:
    """Glorot-uniform weights and zero biases, in :data:`PARAM_NAMES` order."""
    return {"w1": gcn.glorot(num_features, hidden, generator), "b1": torch.zeros(hidden),
            "w2": gcn.glorot(hidden, hidden, generator), "b2": torch.zeros(hidden),
            "w3": gcn.glorot(hidden, num_classes, generator), "b3": torch.zeros(num_classes)}


def project(p: Params, x: torch.Tensor, rate: float = 0.0,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """``P = drop(X) W1``: the first layer's projection of each node's own attributes, before
    the neighbourhood aggregation (what a host shares with ``share_at = projection``)."""
    return gcn.dropout(x, rate, generator) @ p["w1"]


def aggregate(p: Params, adj: torch.Tensor, projection: torch.Tensor) -> torch.Tensor:
    """``H1 = ReLU(A P + b1)``."""
    return torch.relu(adj @ projection + p["b1"])


def first_layer(p: Params, adj: torch.Tensor, x: torch.Tensor, rate: float = 0.0,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """``H1``: the embeddings a host shares (``share_at = layer``, the paper's p = 1)."""
    return aggregate(p, adj, project(p, x, rate, generator))


def shared(own: torch.Tensor, received: torch.Tensor, has: torch.Tensor) -> torch.Tensor:
    """``S``: a node's received average where ``has`` says there is one, else the host's own
    value. The value is the average; the gradient flows through the host's own computation
    (the average counts as ``own`` plus a constant), so a host's weights learn from every
    node of its subgraph, averaged or not."""
    target = torch.where(has[:, None], received, own.detach())
    return own + (target - own.detach())


def rest(p: Params, adj: torch.Tensor, h1: torch.Tensor, rate: float = 0.0,
         generator: torch.Generator | None = None) -> torch.Tensor:
    """The logits ``Z`` from the (shared) first-layer embeddings."""
    h2 = torch.relu(adj @ (gcn.dropout(h1, rate, generator) @ p["w2"]) + p["b2"])
    return gcn.dropout(h2, rate, generator) @ p["w3"] + p["b3"]
