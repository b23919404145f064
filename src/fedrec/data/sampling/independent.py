"""GraphSAINT's node and edge samplers: i.i.d. draws, so their inclusion probabilities are exact
closed forms (:meth:`inclusion_probabilities`), which the tests check against enumeration.

Notation: ``A`` the adjacency, ``deg(v)`` the degree, ``Ã = D^{-1} A`` the normalised adjacency
that GraphSAINT's variance analysis uses (Zeng et al., ICLR 2020, section 3.4), ``S`` the sampled
node set; the returned subgraph is the one *induced* by ``S``.

**Node sampler.** ``budget`` nodes are drawn i.i.d. *with replacement* from

    P(v) = ||Ã_{:,v}||^2 / sum_w ||Ã_{:,w}||^2,   ||Ã_{:,v}||^2 = sum_{u in N(v)} 1 / deg(u)^2,

and ``S`` is the set of distinct draws (so ``|S| <= budget``). Then

    P(v in S) = 1 - (1 - p_v)^b,
    P(u in S and v in S) = 1 - (1 - p_u)^b - (1 - p_v)^b + (1 - p_u - p_v)^b.

**Edge sampler.** ``budget`` undirected edges are drawn i.i.d. with replacement from

    P(u, v) ∝ 1 / deg(u) + 1 / deg(v),

and ``S`` is the set of their endpoints. With ``q_v`` the total probability of the edges at
``v``: ``P(v in S) = 1 - (1 - q_v)^b`` and, for an edge ``{u, v}`` of probability ``p_uv``,
``P(u in S and v in S) = 1 - (1 - q_u)^b - (1 - q_v)^b + (1 - q_u - q_v + p_uv)^b``.

Documented behaviour: a node with no edge has zero weight under both samplers, so it is never
sampled (GraphSAINT trains it never; give it an edge or a self-contained loss elsewhere). A graph
with no edge at all, a budget of 0 or a budget above the node count (node sampler) or the edge
count (edge sampler) is a ConfigError.
"""

from __future__ import annotations

import torch

from fedrec.data.sampling.graph import (
    CsrGraph,
    Subgraph,
    categorical,
    check_count,
    cumulative,
    induced_subgraph,
    require_edges,
)


def _power_of_complement(p: torch.Tensor, b: int) -> torch.Tensor:
    """``(1 - p)^b`` computed as ``exp(b log1p(-p))`` (accurate for tiny ``p``)."""
    return torch.exp(b * torch.log1p(-p.clamp(max=1.0)))


def _pair_inclusion(not_u: torch.Tensor, not_v: torch.Tensor,
                    not_either: torch.Tensor) -> torch.Tensor:
    """``P(u in S and v in S)`` by inclusion-exclusion from the probabilities of missing."""
    return (1.0 - not_u - not_v + not_either).clamp(min=0.0)


class NodeSampler:
    """GraphSAINT's node sampler (module docstring); ``budget`` draws per subgraph."""

    def __init__(self, graph: CsrGraph, budget: int) -> None:
        require_edges(graph, "node")
        self.graph = graph
        self.budget = check_count("budget", budget, 1, graph.num_nodes, "node draws per subgraph")
        inv_sq = graph.degree.to(torch.float64).reciprocal().square()
        weight = torch.zeros(graph.num_nodes, dtype=torch.float64, device=graph.device)
        weight.index_add_(0, graph.rows(), inv_sq[graph.indices])
        self.node_weight = weight
        self.node_prob = weight / weight.sum()
        self._cdf = cumulative(weight)

    def sample(self, gen: torch.Generator) -> Subgraph:
        return induced_subgraph(self.graph, categorical(self._cdf, self.budget, gen))

    def inclusion_probabilities(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(P(v in S) per node, P(both ends in S) per CSR position)``, exact."""
        b, p = self.budget, self.node_prob
        miss = _power_of_complement(p, b)
        rows, cols = self.graph.rows(), self.graph.indices
        miss_both = _power_of_complement(p[rows] + p[cols], b)
        return 1.0 - miss, _pair_inclusion(miss[rows], miss[cols], miss_both)


class EdgeSampler:
    """GraphSAINT's edge sampler (module docstring); ``budget`` edge draws per subgraph."""

    def __init__(self, graph: CsrGraph, budget: int) -> None:
        require_edges(graph, "edge")
        self.graph = graph
        self.budget = check_count("budget", budget, 1, graph.num_edges, "edge draws per subgraph")
        rows, cols = graph.rows(), graph.indices
        upper = rows < cols  # one CSR position per undirected edge
        self.edge_src, self.edge_dst = rows[upper], cols[upper]
        inv = graph.degree.to(torch.float64).reciprocal()
        weight = inv[self.edge_src] + inv[self.edge_dst]
        self.edge_weight = weight
        self.edge_prob = weight / weight.sum()
        self._cdf = cumulative(weight)

    def sample(self, gen: torch.Generator) -> Subgraph:
        picked = categorical(self._cdf, self.budget, gen)
        return induced_subgraph(
            self.graph, torch.cat([self.edge_src[picked], self.edge_dst[picked]]))

    def inclusion_probabilities(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(P(v in S) per node, P(both ends in S) per CSR position)``, exact."""
        g, b = self.graph, self.budget
        touch = torch.zeros(g.num_nodes, dtype=torch.float64, device=g.device)
        touch.index_add_(0, self.edge_src, self.edge_prob)
        touch.index_add_(0, self.edge_dst, self.edge_prob)
        miss = _power_of_complement(touch, b)
        rows, cols = g.rows(), g.indices
        inv = g.degree.to(torch.float64).reciprocal()
        entry_prob = (inv[rows] + inv[cols]) / self.edge_weight.sum()
        miss_both = _power_of_complement(touch[rows] + touch[cols] - entry_prob, b)
        return 1.0 - miss, _pair_inclusion(miss[rows], miss[cols], miss_both)
