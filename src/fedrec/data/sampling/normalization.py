"""GraphSAINT's loss and aggregator normalisation, estimated by pre-sampling.

With ``S`` the node set of a sampled subgraph, ``p_v = P(v in S)`` and ``p_uv = P(u in S and
v in S)`` (Zeng et al., ICLR 2020, section 3.2 and Theorem 3.2):

* **aggregator normalisation** ``alpha_{u,v} = p_uv / p_v``: the layer at ``v`` aggregates
  ``Ã_{v,u} / alpha_{u,v} * x_u`` over the neighbours ``u`` of ``v`` *in the subgraph*, which is
  unbiased for ``sum_u Ã_{v,u} x_u`` given that ``v`` was sampled;
* **loss normalisation** ``lambda_v = |V| p_v``: the minibatch loss ``sum_{v in S} L_v /
  lambda_v`` is unbiased for the full-graph mean loss ``(1 / |V|) sum_v L_v``.

Both are estimated from ``N`` pre-sampled subgraphs by the counts ``C_v`` (subgraphs that hold
``v``) and ``C_{u,v}`` (subgraphs that hold the edge): ``p_v ≈ C_v / N`` and
``alpha_{u,v} ≈ C_{u,v} / C_v``. Given ``C_v``, ``C_{u,v}`` is binomial with ``C_v`` trials, so
the estimate of ``alpha`` has standard deviation ``sqrt(alpha (1 - alpha) / C_v)``.

Coefficients are indexed by the graph's CSR position (:class:`~fedrec.data.sampling.graph.
CsrGraph`): position ``k`` in row ``v`` with neighbour ``u`` holds ``alpha_{u,v}`` (the
denominator is the count of the *aggregating* node, the row). Gather a subgraph's coefficients
with ``alpha[sub.edge_ids]`` and ``loss_norm[sub.nodes]``.

Documented behaviour for what the pre-sampling never saw: a node with ``C_v = 0`` is treated as
seen once (``p_v = 1 / N``, a finite loss weight at most ``N / |V|``), an entry with
``C_{u,v} = 0`` gets ``alpha = 1`` (plain aggregation, no correction); choose ``N`` large enough
that this is rare (GraphSAINT pre-samples until about 50 subgraphs per node on average).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedrec.data.sampling.graph import CsrGraph, Sampler, check_count


@dataclass(frozen=True, eq=False)
class SaintNormalization:
    """``node_prob`` ``(n,)`` (``p_v``), ``alpha`` ``(nnz,)`` per CSR position, and the counts
    they were estimated from (``None`` for exact coefficients)."""

    node_prob: torch.Tensor
    alpha: torch.Tensor
    node_count: torch.Tensor | None = None
    entry_count: torch.Tensor | None = None
    num_subgraphs: int | None = None

    @property
    def loss_norm(self) -> torch.Tensor:
        """``1 / lambda_v = 1 / (|V| p_v)``: the weight of node ``v``'s loss in a minibatch."""
        return 1.0 / (self.node_prob.numel() * self.node_prob)

    @classmethod
    def from_counts(cls, graph: CsrGraph, node_count: torch.Tensor, entry_count: torch.Tensor,
                    num_subgraphs: int) -> SaintNormalization:
        """Estimates from the pre-sampling counts (module docstring, unseen nodes/entries
        included)."""
        seen = node_count.clamp(min=1).to(torch.float64)
        alpha = entry_count.to(torch.float64) / seen[graph.rows()]
        alpha = torch.where(entry_count > 0, alpha, torch.ones_like(alpha))
        return cls(node_prob=seen / num_subgraphs, alpha=alpha, node_count=node_count,
                   entry_count=entry_count, num_subgraphs=num_subgraphs)

    @classmethod
    def exact(cls, graph: CsrGraph, node_prob: torch.Tensor,
              entry_prob: torch.Tensor) -> SaintNormalization:
        """The exact coefficients of known inclusion probabilities (for instance a sampler's
        ``inclusion_probabilities()``); entries of a node that is never sampled get ``alpha = 1``
        like unseen ones."""
        p_row = node_prob.to(torch.float64)[graph.rows()]
        safe = torch.where(p_row > 0, p_row, torch.ones_like(p_row))
        alpha = torch.where(p_row > 0, entry_prob.to(torch.float64) / safe,
                            torch.ones_like(p_row))
        return cls(node_prob=node_prob.to(torch.float64), alpha=alpha)


def estimate_normalization(sampler: Sampler, num_subgraphs: int,
                           gen: torch.Generator) -> SaintNormalization:
    """Pre-sample ``num_subgraphs`` subgraphs from ``sampler`` with ``gen`` and estimate the
    coefficients from their counts (module docstring). Memory is two integer counters (one per
    node, one per CSR position), whatever ``num_subgraphs``."""
    num_subgraphs = check_count("num_subgraphs", num_subgraphs, 1, None,
                                "pre-sampled subgraphs")
    g = sampler.graph
    node_count = torch.zeros(g.num_nodes, dtype=torch.int64, device=g.device)
    entry_count = torch.zeros(g.indices.numel(), dtype=torch.int64, device=g.device)
    for _ in range(num_subgraphs):
        sub = sampler.sample(gen)
        node_count[sub.nodes] += 1  # nodes and edge_ids are unique within one subgraph
        entry_count[sub.edge_ids] += 1
    return SaintNormalization.from_counts(g, node_count, entry_count, num_subgraphs)
