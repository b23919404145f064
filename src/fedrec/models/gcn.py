"""A two-layer GCN for node classification (Kipf & Welling, ICLR 2017), written functionally.

::

    A_hat = D^-1/2 (A + I) D^-1/2            (self loops added; D counts them)
    H     = ReLU(A_hat drop(X) W1 + b1)
    Z     = A_hat drop(H) W2 + b2            (logits; softmax cross-entropy on labelled nodes)

Minibatch training on a GraphSAINT subgraph (:mod:`fedrec.data.sampling`) uses the same layers
with :func:`subgraph_adjacency` in place of ``A_hat``: the entries of ``A_hat`` between the
subgraph's nodes (full-graph degrees), each divided by GraphSAINT's aggregator coefficient
``alpha_{u,v}``, which makes a sampled node's aggregation unbiased for its full-graph one.

The weights are a plain ``{name: tensor}`` dict (what FedAvg averages and a message carries);
``A_hat`` is one sparse CSR matrix multiplied with dense features: on the graphs here that is
several times faster than message passing with scatter ops. Dropout masks come from the caller's
generator, so that a party's draws are keyed by its own secret.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from fedrec.data.sampling import Subgraph

Params = dict[str, torch.Tensor]
PARAM_NAMES = ("w1", "b1", "w2", "b2")


def normalized_adjacency(edge_index: np.ndarray, num_nodes: int) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2`` of the graph with ``edge_index`` (``(2, E)``, both directions
    of an undirected edge; a repeated edge counts once) as a float32 sparse CSR tensor."""
    loops = np.arange(num_nodes, dtype=np.int64)
    rows = np.concatenate([np.asarray(edge_index[0], np.int64), loops])
    cols = np.concatenate([np.asarray(edge_index[1], np.int64), loops])
    a = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                      shape=(num_nodes, num_nodes))
    a.data[:] = 1.0  # duplicates were summed
    inv_sqrt = 1.0 / np.sqrt(np.asarray(a.sum(axis=1), dtype=np.float64).ravel())
    norm = (sp.diags(inv_sqrt) @ a @ sp.diags(inv_sqrt)).tocsr().astype(np.float32)
    norm.sort_indices()
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the matmul is what we use
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            torch.from_numpy(norm.indptr.astype(np.int64)),
            torch.from_numpy(norm.indices.astype(np.int64)), torch.from_numpy(norm.data),
            size=(num_nodes, num_nodes), check_invariants=False)


def row_normalized(x: np.ndarray) -> torch.Tensor:
    """Features scaled to sum 1 per node (rows of zeros stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    sums = x.sum(axis=1, keepdims=True)
    return torch.from_numpy(np.divide(x, sums, out=np.zeros_like(x), where=sums != 0))


def glorot(rows: int, cols: int, generator: torch.Generator) -> torch.Tensor:
    """A Glorot-uniform ``(rows, cols)`` weight matrix."""
    bound = math.sqrt(6.0 / (rows + cols))
    return (torch.rand(rows, cols, generator=generator) * 2 - 1) * bound


def init_params(num_features: int, hidden: int, num_classes: int,
                generator: torch.Generator) -> Params:
    """Glorot-uniform weights and zero biases."""
    return {"w1": glorot(num_features, hidden, generator), "b1": torch.zeros(hidden),
            "w2": glorot(hidden, num_classes, generator), "b2": torch.zeros(num_classes)}


def dropout(x: torch.Tensor, rate: float, generator: torch.Generator | None) -> torch.Tensor:
    """Inverted dropout with masks from ``generator``; none without one (evaluation)."""
    if rate <= 0 or generator is None:
        return x
    keep = torch.rand(x.shape, generator=generator, device=x.device) >= rate
    return x * keep / (1.0 - rate)


def logits(p: Params, adj: torch.Tensor, x: torch.Tensor, rate: float = 0.0,
           generator: torch.Generator | None = None) -> torch.Tensor:
    """``Z`` of the module docstring; dropout (``rate``) only with a ``generator``
    (training)."""
    h = torch.relu(adj @ (dropout(x, rate, generator) @ p["w1"]) + p["b1"])
    return adj @ (dropout(h, rate, generator) @ p["w2"]) + p["b2"]


def subgraph_adjacency(sub: Subgraph, degree: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """The GraphSAINT operator of subgraph ``sub`` (module docstring) as a float32 sparse CSR
    tensor in its local ids: entry ``(v, u)`` is ``1 / sqrt((deg_v + 1)(deg_u + 1)) /
    alpha[k]`` for the subgraph's entry ``k`` (its parent CSR position ``sub.edge_ids[k]``), the
    diagonal ``1 / (deg_v + 1)`` (a node always aggregates itself: ``alpha_{v,v} = 1``).
    ``degree`` is the full graph's (no self loops), ``alpha`` indexed by its CSR positions."""
    n = sub.num_nodes
    dev = sub.nodes.device
    inv_sqrt = (degree[sub.nodes].to(torch.float64) + 1.0).rsqrt()
    rows = torch.repeat_interleave(torch.arange(n, device=dev), torch.diff(sub.indptr))
    values = inv_sqrt[rows] * inv_sqrt[sub.indices] / alpha[sub.edge_ids].to(torch.float64)
    loops = torch.arange(n, device=dev)
    index = torch.stack([torch.cat([rows, loops]), torch.cat([sub.indices, loops])])
    data = torch.cat([values, inv_sqrt.square()]).float()
    coo = torch.sparse_coo_tensor(index, data, (n, n), check_invariants=False)
    with warnings.catch_warnings():  # "sparse CSR support is in beta", as above
        warnings.simplefilter("ignore", UserWarning)
        return coo.coalesce().to_sparse_csr()


def node_losses(z: torch.Tensor, y: torch.Tensor, multilabel: bool) -> torch.Tensor:
    """Each node's loss from its logits ``z``: softmax cross-entropy against class ids ``y``,
    or for multi-label 0/1 ``y`` the binary cross-entropy averaged over the labels (so the
    mean over nodes is GraphSAINT's mean over all (node, label) entries)."""
    if multilabel:
        return F.binary_cross_entropy_with_logits(z, y.float(), reduction="none").mean(dim=1)
    return F.cross_entropy(z, y, reduction="none")


def predict(z: torch.Tensor, multilabel: bool) -> torch.Tensor:
    """Class ids (the arg-max), or for multi-label the 0/1 labels with a positive logit."""
    return (z > 0).to(torch.int64) if multilabel else z.argmax(dim=1)
