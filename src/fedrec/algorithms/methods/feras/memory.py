"""What a Feras run allocates, estimated from its configuration and the graph's sizes
(:attr:`fedrec.algorithms.AlgorithmSpec.memory_estimate`), by part.

With ``N`` hosts, ``V`` nodes, ``F`` attributes, ``C`` classes and ``H`` hidden units
(float32 throughout), what grows with ``N`` is:

* every host's weights ``W = F H + H + H H + H + H C + C`` floats and its Adam moments (two
  more), all copied again into a checkpoint: ``24 W`` bytes a host, and its weights at the AS
  every ``q`` iterations (received and averaged: ``8 W``);
* the AS's embedding table (sequential schedule, shared embeddings): a ``V x H`` float and a
  ``V`` bool per host, kept across rounds and checkpointed (``2 V (4 H + 1)``; ``8 V`` more per
  host of iteration stamps with ``table_expiry``);
* an evaluation (shared embeddings): every host uploads the embeddings of its visible nodes
  (``V`` ids, and ``4 H + 8`` bytes per visible node), the AS spreads each upload over the
  ``V`` nodes (``V (4 H + 1)``) and returns every host its averages (``4 V H``), all held
  together;
* the synchronous schedule: every host's first layer in flight between ``embed`` and
  ``train``: its subgraph's attributes twice (dropout's input and output, kept for the
  gradient) and its activations;
* a host's view: its private nodes' rows only, and a fixed overhead (the public rows are held
  once: :mod:`fedrec.data.host_view`).

Once per run: the host views' rows (the graph's attributes again, public once, private once),
the public topology with the operators built from it, and one host's evaluation on the whole
graph (its attributes dense, normalised, projected). The constants were measured on Cora
(tests/algorithms/test_feras.py checks the estimate against a measured build).
"""

from __future__ import annotations

import math
from typing import Any

from fedrec.algorithms.methods.feras.config import FerasConfig

#: Bytes of Python objects a host adds beyond its arrays' contents (its view's dataclass and
#: array headers, its party, states' dicts and tensor objects, its secrets), measured.
HOST_OVERHEAD = 24 << 10


def subgraph_nodes(cfg: FerasConfig, num_nodes: int) -> int:
    """The most nodes a GraphSAINT subgraph of ``cfg``'s sampler holds."""
    bound = {"node": cfg.node_budget, "edge": 2 * cfg.edge_budget,
             "rw": cfg.num_roots * (cfg.walk_length + 1), "mrw": cfg.node_budget}
    return min(num_nodes, bound.get(cfg.sampler, num_nodes))


def feras_memory(cfg: FerasConfig, sizes: dict[str, Any]) -> dict[str, int]:
    """Bytes by part (module docstring) of a Feras run of ``cfg`` on a graph of ``sizes``
    (:func:`fedrec.data.types.dataset_sizes`)."""
    v, f, c = int(sizes["num_nodes"]), int(sizes["num_features"]), int(sizes["num_classes"])
    e = int(sizes.get("num_edges", 0))
    multilabel = bool(sizes.get("multilabel", False))
    n, h = int(cfg.num_hosts), int(cfg.hidden)
    n_private = round(cfg.private_fraction * v)
    visible = v - n_private + math.ceil(n_private / max(n, 1))  # a host's, at most
    row = 4 * f + 8 * (c if multilabel else 1) + 3 + 8  # attributes, label, masks, id
    weights = f * h + h + h * h + h + h * c + c
    parts = {
        "the host views' rows (public ones once)": v * row,
        "the public topology and its operators": 48 * e + 24 * v,
        "a host's full-graph evaluation (one at a time)": 12 * v * f + 12 * (e + v),
        f"{n} hosts' weights and Adam moments": n * (24 * weights + HOST_OVERHEAD),
    }
    if cfg.shares_weights:
        parts[f"{n} hosts' weights at the aggregation server"] = n * 8 * weights
    if cfg.shares_embeddings:
        if cfg.schedule == "sequential":
            entry = v * (4 * h + 1 + (8 if cfg.table_expiry else 0))
            parts[f"the aggregation server's embedding table of {n} hosts"] = 2 * n * entry
        parts[f"{n} hosts' evaluation embeddings"] = n * (
            8 * v + visible * (4 * h + 8) + v * (4 * h + 1) + 4 * v * h)
    if cfg.schedule == "synchronous":
        sub = subgraph_nodes(cfg, v)
        parts[f"{n} hosts' first layers in flight"] = n * (sub * (8 * f + 12 * h)
                                                           + 8 * weights)
    return parts
