"""Feras's network: :mod:`fedrec.models.gcn_dense` (two GCN layers and a dense output layer,
the paper's setting) with the shared-embedding layer ``S`` between its first and second layers.

::

    P  = drop(X) W1
    H1 = ReLU(A P + b1)                 shared here (p = 1, the paper's): the AS averages H1
    H2 = ReLU(A drop(S(H1)) W2 + b2)
    Z  = drop(H2) W3 + b3               logits

With ``share_at = projection`` (an option, not the paper's) the AS averages ``P`` instead:
``H1 = ReLU(A S(P) + b1)`` and ``H2`` reads ``H1`` as it is. A host's own ``H1`` of a node
lacks the attributes of the node's neighbours it cannot see, whoever computes it; ``A S(P)``
has every neighbour's projection (from the hosts that see it).

``A`` is GraphSAINT's operator on a sampled subgraph in training and the full ``A_hat`` in
evaluation; ``S`` is :func:`shared`.
"""

from __future__ import annotations

import torch

from fedrec.models.gcn_dense import (
    PARAM_NAMES,
    Params,
    aggregate,
    first_layer,
    init_params,
    project,
    rest,
)


def shared(own: torch.Tensor, received: torch.Tensor, has: torch.Tensor) -> torch.Tensor:
    """``S``: a node's received average where ``has`` says there is one, else the host's own
    value. The value is the average; the gradient flows through the host's own computation
    (the average counts as ``own`` plus a constant), so a host's weights learn from every
    node of its subgraph, averaged or not."""
    target = torch.where(has[:, None], received, own.detach())
    return own + (target - own.detach())


__all__ = ["PARAM_NAMES", "Params", "aggregate", "first_layer", "init_params", "project",
           "rest", "shared"]
