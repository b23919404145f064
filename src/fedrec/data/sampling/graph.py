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
    row), ``degree`` ``(n,)``; ``nnz = 2 * num_edges``.

    For induced subgraphs it also keeps a *degree orientation*: every undirected edge once, in the
    row of its endpoint of lower ``(degree, id)``; ``oriented_indptr`` ``(n+1,)`` delimits those
    rows and ``oriented_pos`` / ``oriented_mirror`` ``(num_edges,)`` are the CSR positions of the
    edge in either direction. A hub's oriented row is short, so gathering the rows of a sampled
    set costs far less than the sum of its degrees on long-tailed graphs."""

    indptr: torch.Tensor
    indices: torch.Tensor
    degree: torch.Tensor
    entry_rows: torch.Tensor
    oriented_indptr: torch.Tensor
    oriented_pos: torch.Tensor
    oriented_mirror: torch.Tensor

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

    def to(self, device: str | torch.device) -> CsrGraph:
        """The same graph on ``device`` (draw from it with a generator on that device)."""
        return CsrGraph(*(getattr(self, f).to(device) for f in (
            "indptr", "indices", "degree", "entry_rows", "oriented_indptr", "oriented_pos",
            "oriented_mirror")))

    def rows(self) -> torch.Tensor:
        """The row (source node) of every CSR position."""
        return self.entry_rows

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
        # lower (degree, id) first: the edge lives in that endpoint's oriented row
        rank_row = degree[rows] * num_nodes + rows
        rank_col = degree[cols] * num_nodes + cols
        low = torch.nonzero(rank_row < rank_col).squeeze(1)  # increasing, so rows stay grouped
        mirror = torch.searchsorted(key, cols[low] * num_nodes + rows[low])
        oriented_indptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
        oriented_indptr[1:] = torch.cumsum(torch.bincount(rows[low], minlength=num_nodes), 0)
        return cls(indptr=indptr, indices=cols, degree=degree, entry_rows=rows,
                   oriented_indptr=oriented_indptr, oriented_pos=low, oriented_mirror=mirror)


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

    Vectorised: the *oriented* rows of the sampled nodes (:class:`CsrGraph`) are gathered in one
    ``repeat_interleave``, the edges whose other end is outside the set dropped, and both
    directions of the kept ones sorted by CSR position (which is the (row, column) order); the
    cost is the sum of the sampled nodes' oriented degrees, not of their degrees."""
    nodes = torch.unique(nodes)  # sorted, so local ids keep the global order
    n, dev = graph.num_nodes, graph.device
    local = torch.full((n,), -1, dtype=torch.int64, device=dev)
    local[nodes] = torch.arange(nodes.numel(), device=dev)
    starts = graph.oriented_indptr[nodes]
    counts = graph.oriented_indptr[nodes + 1] - starts
    ends = torch.cumsum(counts, 0)
    total = int(ends[-1]) if nodes.numel() else 0
    # oriented slot of every gathered entry: gathered index + (row start - offset of the row)
    slot = torch.repeat_interleave(starts - (ends - counts), counts, output_size=total)
    slot += torch.arange(total, device=dev)
    pos = graph.oriented_pos[slot]
    kept = torch.nonzero(local[graph.indices[pos]] >= 0).squeeze(1)
    edge_ids = torch.sort(torch.cat([pos[kept], graph.oriented_mirror[slot[kept]]])).values
    sub_rows = local[graph.entry_rows[edge_ids]]
    indptr = torch.zeros(nodes.numel() + 1, dtype=torch.int64, device=dev)
    indptr[1:] = torch.cumsum(torch.bincount(sub_rows, minlength=nodes.numel()), 0)
    return Subgraph(nodes=nodes, indptr=indptr, indices=local[graph.indices[edge_ids]],
                    edge_ids=edge_ids)


def cumulative(weights: torch.Tensor) -> torch.Tensor:
    """The float64 cumulative weights :func:`categorical` draws from (computed once per
    sampler)."""
    return torch.cumsum(weights.to(torch.float64), 0)


def categorical(cdf: torch.Tensor, count: int, gen: torch.Generator) -> torch.Tensor:
    """``count`` i.i.d. draws of index ``i`` with probability ``w_i / sum(w)``, from
    ``cdf = cumulative(w)``.

    Inverse CDF (``searchsorted``): no limit on the number of categories (``torch.multinomial``
    stops at 2^24) and zero-weight categories are never drawn."""
    u = torch.rand(count, generator=gen, dtype=torch.float64, device=cdf.device) * cdf[-1]
    return torch.searchsorted(cdf, u, right=True).clamp_(max=cdf.numel() - 1)


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
