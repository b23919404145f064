"""The graph a GraphSAINT sampler draws from, and the subgraph it returns.

:class:`CsrGraph` is an undirected simple graph in compressed sparse row form (torch ``int64``):
row ``v`` lists the neighbours of ``v`` sorted, every undirected edge ``{u, v}`` is stored twice
(as ``(u, v)`` and ``(v, u)``), self loops and duplicates are dropped. A *CSR position* (an index
into ``indices``) names one directed entry; the normalisation coefficients of
:mod:`fedrec.data.sampling.normalization` are indexed by it.

:class:`Subgraph` is the subgraph *induced* by a sampled node set ``V_s`` (every edge of the graph
between two nodes of ``V_s``, as GraphSAINT builds its minibatches), in local ids, with the CSR
position of each of its entries in the parent graph (``edge_ids``) so that per-edge coefficients
can be gathered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from fedrec.errors import ConfigError


@dataclass(frozen=True, eq=False)
class CsrGraph:
    """An undirected simple graph: ``indptr`` ``(n+1,)``, ``indices`` ``(nnz,)`` (sorted within a
    row), ``degree`` ``(n,)``; ``nnz = 2 * num_edges``."""

    indptr: torch.Tensor
    indices: torch.Tensor
    degree: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.degree.numel())

    @property
    def num_edges(self) -> int:
        """Undirected edges (half the stored entries)."""
        return int(self.indices.numel()) // 2

    @property
    def device(self) -> torch.device:
        return self.indices.device

    def rows(self) -> torch.Tensor:
        """The row (source node) of every CSR position."""
        return torch.repeat_interleave(
            torch.arange(self.num_nodes, device=self.device), self.degree)

    @classmethod
    def from_edge_index(cls, edge_index: np.ndarray | torch.Tensor, num_nodes: int) -> CsrGraph:
        """Build from a ``(2, E)`` edge list in any orientation: it is symmetrised, self loops
        and duplicates are dropped. Nodes without an edge are allowed (degree 0)."""
        ei = torch.as_tensor(np.asarray(edge_index) if not isinstance(edge_index, torch.Tensor)
                             else edge_index).to(torch.int64)
        if ei.ndim != 2 or ei.shape[0] != 2:
            raise ConfigError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
        if num_nodes < 1:
            raise ConfigError(f"a graph needs at least one node, got num_nodes={num_nodes}")
        if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= num_nodes):
            raise ConfigError(f"edge_index holds node ids outside 0..{num_nodes - 1}")
        src = torch.cat([ei[0], ei[1]])
        dst = torch.cat([ei[1], ei[0]])
        keep = src != dst
        key = torch.unique(src[keep] * num_nodes + dst[keep])  # sorted: by row, then column
        rows, cols = key // num_nodes, key % num_nodes
        degree = torch.bincount(rows, minlength=num_nodes)
        indptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
        indptr[1:] = torch.cumsum(degree, 0)
        return cls(indptr=indptr, indices=cols, degree=degree)


@dataclass(frozen=True, eq=False)
class Subgraph:
    """The subgraph induced by ``nodes`` (global ids, sorted, unique).

    ``indptr``/``indices`` are its CSR in local ids (``0..len(nodes)-1``); ``edge_ids[k]`` is the
    parent graph's CSR position of local entry ``k``."""

    nodes: torch.Tensor
    indptr: torch.Tensor
    indices: torch.Tensor
    edge_ids: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.numel())

    @property
    def num_entries(self) -> int:
        """Stored directed entries (twice the undirected edges)."""
        return int(self.indices.numel())

    def edge_index(self) -> torch.Tensor:
        """``(2, nnz)`` COO in local ids: row ``0`` the aggregating node, row ``1`` its
        neighbour."""
        rows = torch.repeat_interleave(
            torch.arange(self.num_nodes, device=self.nodes.device), torch.diff(self.indptr))
        return torch.stack([rows, self.indices])


def induced_subgraph(graph: CsrGraph, nodes: torch.Tensor) -> Subgraph:
    """The subgraph of ``graph`` induced by ``nodes`` (any order, duplicates allowed).

    Vectorised: the rows of the sampled nodes are gathered in one ``repeat_interleave`` and the
    entries whose neighbour is outside the set are dropped; the cost is the sum of the sampled
    nodes' degrees."""
    nodes = torch.unique(nodes)  # sorted, so local ids keep the global order
    n, dev = graph.num_nodes, graph.device
    local = torch.full((n,), -1, dtype=torch.int64, device=dev)
    local[nodes] = torch.arange(nodes.numel(), device=dev)
    counts = graph.degree[nodes]
    starts = graph.indptr[nodes]
    total = int(counts.sum())
    # position of every entry of the gathered rows: its row's start plus its offset in the row
    row_of = torch.repeat_interleave(torch.arange(nodes.numel(), device=dev), counts,
                                     output_size=total)
    first = torch.cumsum(counts, 0) - counts
    pos = starts[row_of] + torch.arange(total, device=dev) - first[row_of]
    nbr_local = local[graph.indices[pos]]
    keep = nbr_local >= 0
    sub_rows = row_of[keep]
    indptr = torch.zeros(nodes.numel() + 1, dtype=torch.int64, device=dev)
    indptr[1:] = torch.cumsum(torch.bincount(sub_rows, minlength=nodes.numel()), 0)
    return Subgraph(nodes=nodes, indptr=indptr, indices=nbr_local[keep], edge_ids=pos[keep])


def categorical(weights: torch.Tensor, count: int, gen: torch.Generator) -> torch.Tensor:
    """``count`` i.i.d. draws of indices with probability ``weights / weights.sum()``.

    Inverse CDF in float64 (``searchsorted`` on the cumulative weights): no limit on the number
    of categories (``torch.multinomial`` stops at 2^24) and zero-weight categories are never
    drawn."""
    cdf = torch.cumsum(weights.to(torch.float64), 0)
    u = torch.rand(count, generator=gen, dtype=torch.float64, device=weights.device) * cdf[-1]
    idx = torch.searchsorted(cdf, u, right=True)
    return idx.clamp_(max=weights.numel() - 1)


def check_count(name: str, value: int, low: int, high: int | None, what: str) -> int:
    """``value`` as an int if ``low <= value <= high`` (``high=None``: no upper bound), else a
    one-line ConfigError."""
    ok = (isinstance(value, int | np.integer) and not isinstance(value, bool)
          and low <= int(value) and (high is None or int(value) <= high))
    if not ok:
        span = f"at least {low}" if high is None else f"in [{low}, {high}]"
        raise ConfigError(f"{name} must be an integer {span} ({what}), got {value!r}")
    return int(value)


def require_edges(graph: CsrGraph, sampler: str) -> None:
    if graph.num_edges == 0:
        raise ConfigError(f"the {sampler} sampler needs a graph with at least one edge; "
                          f"this one has {graph.num_nodes} nodes and no edge")


class Sampler(Protocol):
    """What every GraphSAINT sampler offers: its graph and one draw of a subgraph from a
    generator the caller owns (a host's secret; never the global torch RNG)."""

    graph: CsrGraph

    def sample(self, gen: torch.Generator) -> Subgraph: ...
