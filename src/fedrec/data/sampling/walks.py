"""GraphSAINT's random-walk and multi-dimensional random-walk (frontier) samplers.

**Random walk** (GraphSAINT-RW). ``num_roots`` roots are drawn uniformly *with replacement*; from
each, a simple random walk of ``walk_length`` steps (each step to a uniformly chosen neighbour).
``S`` is every node visited, roots included; the subgraph is the one induced by ``S``. All
walks advance together, one tensor operation per step.

**Multi-dimensional random walk** (GraphSAINT-MRW, Ribeiro and Towsley's frontier sampling): a
frontier of ``frontier_size`` = m nodes drawn uniformly with replacement; then ``budget - m``
times: pick a frontier node ``u`` with probability ``deg(u) / sum_{w in frontier} deg(w)``,
replace it by a uniform neighbour ``u'``. ``S`` is every node that was ever in the frontier
(at most ``budget`` nodes).

*How it is vectorised, exactly.* The frontier process is the jump chain of m independent
continuous-time random walks in which a walker at ``u`` waits an exponential time of rate
``deg(u)`` before jumping to a uniform neighbour: the next walker to jump among competing
exponential clocks is walker ``i`` with probability ``deg(u_i) / sum_j deg(u_j)``, and by the
memoryless property the others' clocks restart afresh. So the m walkers are simulated
independently, all at once (one tensor operation per jump of every walker), and the first
``budget - m`` jumps in time order are kept: those whose time is at most the
``(budget - m)``-th smallest jump time. Walkers are extended (in chunks) until every walker's
last simulated jump lies beyond that time, so no kept jump is missing. The tests compare the
result with an enumeration of the sequential definition above.

Documented behaviour for a node with no edge: a walk (or walker) standing on it stays there (an
isolated root is a subgraph of one node; an isolated frontier node is never picked, its clock has
rate 0). If every frontier node is isolated, the frontier never moves and ``S`` is the frontier.
A graph with no edge, a walk length or root count of 0, a frontier size of 0 or a budget not
above the frontier size or above the node count is a ConfigError.
"""

from __future__ import annotations

import math

import torch

from fedrec.data.sampling.graph import (
    CsrGraph,
    Subgraph,
    check_count,
    induced_subgraph,
    require_edges,
)


def walk_step(graph: CsrGraph, cur: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One simple-random-walk step from every node of ``cur`` (isolated nodes stay)."""
    deg = graph.degree[cur]
    u = torch.rand(cur.shape, generator=gen, dtype=torch.float64, device=cur.device)
    offset = torch.minimum((u * deg).to(torch.int64), (deg - 1).clamp(min=0))
    pos = (graph.indptr[cur] + offset).clamp(max=max(graph.indices.numel() - 1, 0))
    return torch.where(deg > 0, graph.indices[pos], cur)


class RandomWalkSampler:
    """GraphSAINT's random-walk sampler (module docstring)."""

    def __init__(self, graph: CsrGraph, num_roots: int, walk_length: int) -> None:
        require_edges(graph, "random-walk")
        self.graph = graph
        self.num_roots = check_count("num_roots", num_roots, 1, graph.num_nodes,
                                     "walks per subgraph")
        self.walk_length = check_count("walk_length", walk_length, 1, None,
                                       "steps per walk")

    def sample(self, gen: torch.Generator) -> Subgraph:
        g = self.graph
        cur = torch.randint(g.num_nodes, (self.num_roots,), generator=gen, device=g.device)
        visited = [cur]
        for _ in range(self.walk_length):
            cur = walk_step(g, cur, gen)
            visited.append(cur)
        return induced_subgraph(g, torch.cat(visited))


class FrontierSampler:
    """GraphSAINT's multi-dimensional random-walk sampler (module docstring)."""

    def __init__(self, graph: CsrGraph, frontier_size: int, budget: int) -> None:
        require_edges(graph, "multi-dimensional random-walk")
        self.graph = graph
        self.frontier_size = check_count("frontier_size", frontier_size, 1,
                                         max(graph.num_nodes - 1, 1), "walkers in the frontier")
        self.budget = check_count("budget", budget, self.frontier_size + 1, graph.num_nodes,
                                  "nodes per subgraph, above the frontier size")

    def sample(self, gen: torch.Generator) -> Subgraph:
        g, m = self.graph, self.frontier_size
        jumps = self.budget - m
        cur = torch.randint(g.num_nodes, (m,), generator=gen, device=g.device)
        start = cur
        clock = torch.zeros(m, dtype=torch.float64, device=g.device)
        times: list[torch.Tensor] = []
        positions: list[torch.Tensor] = []
        chunk = max(4, math.ceil(2 * jumps / m))
        while True:
            for _ in range(chunk):
                wait = torch.empty(m, dtype=torch.float64, device=g.device).exponential_(
                    generator=gen)
                clock = clock + wait / g.degree[cur].to(torch.float64)  # rate 0: inf, never
                cur = walk_step(g, cur, gen)
                times.append(clock)
                positions.append(cur)
            all_times = torch.stack(times, 1)
            cutoff = torch.kthvalue(all_times.flatten(), jumps).values
            if bool((all_times[:, -1] >= cutoff).all()):
                break  # every walker was simulated past the cutoff: no kept jump is missing
            chunk *= 2
        kept = (all_times <= cutoff) & torch.isfinite(all_times)
        return induced_subgraph(g, torch.cat([start, torch.stack(positions, 1)[kept]]))
