"""GraphSAINT sampler throughput on a synthetic graph the size of Reddit.

    python bench/bench_saint_samplers.py [--scale 1.0] [--seconds 10] [--threads 1] [--device cpu]

The graph has ``232,965 * scale`` nodes and about ``11,606,919 * scale`` undirected edges with a
long-tailed degree distribution (Chung-Lu: both ends of every edge drawn with probability
proportional to a Pareto(1.5) weight, then symmetrised and de-duplicated, so a few hubs hold
thousands of edges and most nodes a handful). Sampler settings are GraphSAINT-style Reddit
budgets scaled by ``--scale`` (node 8000 draws, edge 4000 draws, random walk 2000 roots of length
4, MRW frontier 1000 and budget 8000). For each sampler: subgraphs per second (mean over as many
draws as fit in ``--seconds``), the mean subgraph size, and the process's peak RSS so far.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import torch

from fedrec.data.sampling import (
    CsrGraph,
    EdgeSampler,
    FrontierSampler,
    NodeSampler,
    RandomWalkSampler,
    Sampler,
)

REDDIT_NODES, REDDIT_EDGES = 232_965, 11_606_919


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def long_tailed_graph(num_nodes: int, num_edges: int, seed: int) -> CsrGraph:
    rng = np.random.default_rng(seed)
    weight = rng.pareto(1.5, num_nodes) + 1.0
    cdf = np.cumsum(weight / weight.sum())
    ends = np.searchsorted(cdf, rng.random((2, num_edges)), side="right").clip(max=num_nodes - 1)
    return CsrGraph.from_edge_index(torch.from_numpy(ends), num_nodes)


def saint_options(scale: float) -> dict[str, int]:
    """GraphSAINT-style Reddit budgets times ``scale``, as :class:`SaintSamplerConfig` options:
    node 8000 draws, edge 4000 draws, random walk 2000 roots of length 4, MRW frontier 1000 and
    budget 8000."""
    def b(x: int) -> int:
        return max(1, round(x * scale))

    return {"node_budget": b(8000), "edge_budget": b(4000), "num_roots": b(2000),
            "walk_length": 4, "frontier_size": b(1000)}


def reddit_samplers(graph: CsrGraph, scale: float) -> dict[str, Sampler]:
    """The four samplers with :func:`saint_options`' budgets, by a name saying them."""
    o = saint_options(scale)
    return {
        f"node (budget {o['node_budget']})": NodeSampler(graph, o["node_budget"]),
        f"edge (budget {o['edge_budget']})": EdgeSampler(graph, o["edge_budget"]),
        f"rw (roots {o['num_roots']}, length {o['walk_length']})":
            RandomWalkSampler(graph, o["num_roots"], o["walk_length"]),
        f"mrw (frontier {o['frontier_size']}, budget {o['node_budget']})":
            FrontierSampler(graph, o["frontier_size"], o["node_budget"]),
    }


def throughput(sampler: Sampler, seconds: float, seed: int, device: str = "cpu"
               ) -> tuple[float, float, float]:
    """Subgraphs per second over as many draws as fit in ``seconds`` (at least 3, after one
    warm-up draw), and their mean node and undirected edge counts."""
    gen = torch.Generator(device=device).manual_seed(seed)
    sampler.sample(gen)  # warm-up
    sizes, edges, start = [], [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(sizes) < 3:
        sub = sampler.sample(gen)
        sizes.append(sub.num_nodes)  # a host sync, like any use of the subgraph
        edges.append(sub.num_entries // 2)
    rate = len(sizes) / (time.perf_counter() - start)
    return rate, float(np.mean(sizes)), float(np.mean(edges))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=10.0, help="time per sampler")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="where the graph lives and draws run")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = args.scale
    t0 = time.perf_counter()
    graph = long_tailed_graph(round(REDDIT_NODES * s), round(REDDIT_EDGES * s), args.seed)
    graph = graph.to(args.device)
    deg = graph.degree.double()
    print(f"graph: {graph.num_nodes:,} nodes, {graph.num_edges:,} undirected edges, degree "
          f"mean {deg.mean():.1f} median {deg.median():.0f} max {int(deg.max()):,}, "
          f"isolated {int((graph.degree == 0).sum()):,}; built in {time.perf_counter() - t0:.1f}s;"
          f" peak RSS {peak_rss_mib():.0f} MiB")

    samplers = reddit_samplers(graph, s)
    if args.device.startswith("cuda"):
        print(f"peak GPU memory so far: {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    print("| sampler | subgraphs/s | mean nodes | mean edges | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for name, sampler in samplers.items():
        rate, nodes, edges = throughput(sampler, args.seconds, args.seed, args.device)
        print(f"| {name} | {rate:.1f} | {nodes:,.0f} | {edges:,.0f} | {peak_rss_mib():.0f} |")

if __name__ == "__main__":
    main()
