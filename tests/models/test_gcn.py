"""The GCN's GraphSAINT operator: on the whole graph with alpha = 1 it is A_hat; otherwise each
neighbour entry is A_hat's divided by its aggregator coefficient."""

from __future__ import annotations

import numpy as np
import torch

from fedrec.data.sampling import CsrGraph, induced_subgraph
from fedrec.models import gcn

# A path 0-1-2-3 and a triangle 2-3-4 (node 4 has degree 2, node 2 degree 3).
EDGES = np.array([[0, 1, 2, 2, 3], [1, 2, 3, 4, 4]])


def test_whole_graph_with_unit_alpha_is_a_hat() -> None:
    graph = CsrGraph.from_edge_index(EDGES, 5)
    sub = induced_subgraph(graph, torch.arange(5))
    op = gcn.subgraph_adjacency(sub, graph.degree, torch.ones(graph.indices.numel()))
    both = np.concatenate([EDGES, EDGES[::-1]], axis=1)
    expected = gcn.normalized_adjacency(both, 5).to_dense()
    assert torch.allclose(op.to_dense(), expected, atol=1e-7)


def test_a_subgraph_divides_neighbour_entries_by_alpha_and_keeps_full_degrees() -> None:
    graph = CsrGraph.from_edge_index(EDGES, 5)
    alpha = torch.linspace(0.2, 1.0, graph.indices.numel(), dtype=torch.float64)
    sub = induced_subgraph(graph, torch.tensor([2, 3, 4]))
    op = gcn.subgraph_adjacency(sub, graph.degree, alpha).to_dense()
    deg = graph.degree.to(torch.float64) + 1.0
    for k, (v, u) in enumerate(sub.edge_index().T.tolist()):
        gv, gu = int(sub.nodes[v]), int(sub.nodes[u])
        want = 1.0 / float(torch.sqrt(deg[gv] * deg[gu])) / float(alpha[sub.edge_ids[k]])
        assert abs(float(op[v, u]) - want) < 1e-6
    assert torch.allclose(op.diagonal().double(), 1.0 / deg[sub.nodes], atol=1e-7)
    assert int((op != 0).sum()) == sub.num_entries + sub.num_nodes
