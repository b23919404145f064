"""What a fedavg-gcn run allocates, estimated from its configuration and the graph's sizes
(:attr:`fedrec.algorithms.AlgorithmSpec.memory_estimate`), by part.

With ``N`` hosts, ``V`` nodes (``E`` directed edges), ``F`` attributes, ``C`` classes, ``H``
hidden units and a public fraction ``p``, a host holds ``V_h = p V + (1 - p) V / N`` nodes
(at most) and about ``E (V_h / V)^2`` edges of its induced subgraph, in local ids
(``16`` bytes each), its nodes' ids, masks and public flags (``13 V_h``), its private nodes'
rows and a fixed overhead; the public rows are held once, for every host
(:func:`fedrec.data.partition_graph`). Each round every host's reply, its trained weights
``W = F H + H + H C + C`` floats, is held until the average (``8 W`` bytes a host, with the
average's working copies); the hosts train on their subgraphs one at a time (a host's
attributes in local order, normalised, dropped out: ``12 V_h F``; its operator
``12 (E_h + V_h)``). The estimate was measured against runs on Cora (about twice the growth
per host seen there).
"""

from __future__ import annotations

import math
from typing import Any

from fedrec.algorithms.methods.fedavg_gcn.config import FedAvgGCNConfig

#: Bytes of Python objects a host adds beyond its arrays' contents (its partition's dataclass
#: and array headers, its party, its secrets, its messages' dicts), measured.
HOST_OVERHEAD = 16 << 10


def fedavg_gcn_memory(cfg: FedAvgGCNConfig, sizes: dict[str, Any]) -> dict[str, int]:
    """Bytes by part (module docstring) of a fedavg-gcn run of ``cfg`` on a graph of
    ``sizes`` (:func:`fedrec.data.types.dataset_sizes`)."""
    v, f, c = int(sizes["num_nodes"]), int(sizes["num_features"]), int(sizes["num_classes"])
    e = int(sizes.get("num_edges", 0))
    n, h = int(cfg.num_hosts), int(cfg.hidden)
    n_public = round(cfg.public_fraction * v)
    local = n_public + math.ceil((v - n_public) / max(n, 1))
    edges = math.ceil(e * (local / max(v, 1)) ** 2)
    weights = f * h + h + h * c + c
    return {
        "the host partitions' rows (public ones once)": v * (4 * f + 8),
        f"{n} hosts' subgraphs": n * (16 * edges + 13 * local + HOST_OVERHEAD),
        f"{n} hosts' weights in a round": n * 8 * weights,
        "a host's training (one at a time)": 12 * local * f + 12 * (edges + local),
    }
