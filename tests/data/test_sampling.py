"""GraphSAINT samplers against their exact probabilities on small graphs.

The exact distribution of the sampled node set is enumerated here from each sampler's sequential
definition (every random choice, with its probability), independently of the library's code;
empirical frequencies over seeded draws must lie within 4.5 binomial standard deviations.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pytest
import scipy.stats
import torch

from fedrec.data.sampling import (
    CsrGraph,
    EdgeSampler,
    FrontierSampler,
    NodeSampler,
    RandomWalkSampler,
    SaintNormalization,
    estimate_normalization,
    induced_subgraph,
)
from fedrec.errors import ConfigError

Dist = dict[frozenset[int], float]


def path(n: int = 5) -> tuple[int, list[tuple[int, int]]]:
    return n, [(i, i + 1) for i in range(n - 1)]


def star(leaves: int = 4) -> tuple[int, list[tuple[int, int]]]:
    return leaves + 1, [(0, i) for i in range(1, leaves + 1)]


def small_random() -> tuple[int, list[tuple[int, int]]]:
    """Seven nodes, node 6 isolated, uneven degrees."""
    rng = np.random.default_rng(3)
    pairs = [p for p in itertools.combinations(range(6), 2) if rng.random() < 0.5]
    return 7, pairs


GRAPHS = {"path": path(), "star": star(), "random": small_random()}


def csr(spec: tuple[int, list[tuple[int, int]]]) -> CsrGraph:
    n, pairs = spec
    return CsrGraph.from_edge_index(np.array(pairs, dtype=np.int64).T.reshape(2, -1), n)


def neighbours(spec: tuple[int, list[tuple[int, int]]]) -> list[list[int]]:
    n, pairs = spec
    nb: list[list[int]] = [[] for _ in range(n)]
    for u, v in pairs:
        nb[u].append(v)
        nb[v].append(u)
    return nb


def union_of_draws(single: Dist, times: int) -> Dist:
    """Distribution of the union of ``times`` independent draws of a set."""
    out: Dist = {frozenset(): 1.0}
    for _ in range(times):
        nxt: Dist = defaultdict(float)
        for s, p in out.items():
            for t, q in single.items():
                nxt[s | t] += p * q
        out = nxt
    return dict(out)


def enum_node(spec, budget: int) -> Dist:
    nb = neighbours(spec)
    w = [sum(1 / len(nb[u]) ** 2 for u in nb[v]) for v in range(spec[0])]
    return union_of_draws({frozenset([v]): w[v] / sum(w) for v in range(spec[0]) if w[v]}, budget)


def enum_edge(spec, budget: int) -> Dist:
    nb = neighbours(spec)
    w = {(u, v): 1 / len(nb[u]) + 1 / len(nb[v]) for u, v in spec[1]}
    total = sum(w.values())
    return union_of_draws({frozenset(e): x / total for e, x in w.items()}, budget)


def enum_walk(spec, roots: int, length: int) -> Dist:
    nb = neighbours(spec)
    single: Dist = defaultdict(float)

    def walk(cur: int, seen: frozenset[int], left: int, p: float) -> None:
        if left == 0:
            single[seen] += p
            return
        nxt = nb[cur] or [cur]
        for v in nxt:
            walk(v, seen | {v}, left - 1, p / len(nxt))

    for r in range(spec[0]):
        walk(r, frozenset([r]), length, 1 / spec[0])
    return union_of_draws(dict(single), roots)


def enum_frontier(spec, m: int, budget: int) -> Dist:
    """The sequential definition: pick a frontier slot with probability proportional to its
    degree, replace it by a uniform neighbour, ``budget - m`` times."""
    n = spec[0]
    nb = neighbours(spec)
    out: Dist = defaultdict(float)

    def step(front: tuple[int, ...], seen: frozenset[int], left: int, p: float) -> None:
        total = sum(len(nb[u]) for u in front)
        if left == 0 or total == 0:
            out[seen] += p
            return
        for i, u in enumerate(front):
            for v in nb[u]:
                q = p * len(nb[u]) / total / len(nb[u])  # slot u, then neighbour v
                step((*front[:i], v, *front[i + 1:]), seen | {v}, left - 1, q)

    for front in itertools.product(range(n), repeat=m):
        step(front, frozenset(front), budget - m, 1 / n**m)
    return dict(out)


def exact_probabilities(graph: CsrGraph, dist: Dist) -> tuple[torch.Tensor, torch.Tensor]:
    """``(P(v in S), P(u and v in S) per CSR position)`` of an enumerated distribution."""
    node = torch.zeros(graph.num_nodes, dtype=torch.float64)
    rows, cols = graph.rows().tolist(), graph.indices.tolist()
    entry = torch.zeros(len(cols), dtype=torch.float64)
    for s, p in dist.items():
        for v in s:
            node[v] += p
        for k, (u, v) in enumerate(zip(rows, cols, strict=True)):
            if u in s and v in s:
                entry[k] += p
    return node, entry


SAMPLERS: dict[str, tuple[Callable, Callable]] = {
    "node": (lambda g: NodeSampler(g, budget=3), lambda s: enum_node(s, 3)),
    "edge": (lambda g: EdgeSampler(g, budget=2), lambda s: enum_edge(s, 2)),
    "rw": (lambda g: RandomWalkSampler(g, num_roots=2, walk_length=2),
           lambda s: enum_walk(s, 2, 2)),
    "mrw": (lambda g: FrontierSampler(g, frontier_size=2, budget=4),
            lambda s: enum_frontier(s, 2, 4)),
}
DRAWS = 3000


class Recording:
    """A sampler that remembers the node set of every subgraph it hands out."""

    def __init__(self, sampler) -> None:
        self.inner, self.graph, self.sets = sampler, sampler.graph, []

    def sample(self, gen: torch.Generator):
        sub = self.inner.sample(gen)
        self.sets.append(frozenset(sub.nodes.tolist()))
        return sub


def chi_square_p_value(observed: list[frozenset[int]], dist: Dist) -> float:
    """Goodness of fit of the sampled sets to ``dist`` (bins expecting fewer than 5 merged)."""
    assert set(observed) <= {s for s, p in dist.items() if p > 0}, "a set outside the support"
    counts = defaultdict(int)
    for s in observed:
        counts[s] += 1
    big = [s for s, p in dist.items() if p * len(observed) >= 5]
    obs = [counts[s] for s in big]
    exp = [dist[s] * len(observed) for s in big]
    obs.append(len(observed) - sum(obs))
    exp.append(len(observed) - sum(exp))
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    return float(scipy.stats.chisquare(obs, exp).pvalue)


def within_binomial(freq: torch.Tensor, prob: torch.Tensor, trials: torch.Tensor | int) -> None:
    prob = prob.clamp(0.0, 1.0)
    freq = freq.double()
    std = torch.sqrt(prob * (1 - prob) / trials)
    err = (freq - prob).abs()
    assert bool((err <= 4.5 * std + 1e-12).all()), (
        f"max error {float(err.max()):.4f} at {int(torch.argmax(err / (std + 1e-12)))}, "
        f"freq {freq.tolist()}, exact {prob.tolist()}")


@pytest.mark.parametrize("graph_name", list(GRAPHS))
@pytest.mark.parametrize("kind", list(SAMPLERS))
def test_inclusion_frequencies_and_normalisation_match_enumeration(
        kind: str, graph_name: str) -> None:
    spec = GRAPHS[graph_name]
    graph = csr(spec)
    make, enumerate_ = SAMPLERS[kind]
    sampler = make(graph)
    dist = enumerate_(spec)
    assert sum(dist.values()) == pytest.approx(1.0, abs=1e-12)
    node_p, entry_p = exact_probabilities(graph, dist)
    if hasattr(sampler, "inclusion_probabilities"):  # the closed form the sampler claims
        claimed_node, claimed_entry = sampler.inclusion_probabilities()
        assert torch.allclose(claimed_node, node_p, atol=1e-12)
        assert torch.allclose(claimed_entry, entry_p, atol=1e-12)
    gen = torch.Generator().manual_seed(11)
    recorder = Recording(sampler)
    norm = estimate_normalization(recorder, DRAWS, gen)
    assert chi_square_p_value(recorder.sets, dist) > 1e-3  # the whole distribution of S
    within_binomial(norm.node_count / DRAWS, node_p, DRAWS)
    within_binomial(norm.entry_count / DRAWS, entry_p, DRAWS)
    # alpha_{u,v} = p_uv / p_v: given C_v, C_uv is binomial(C_v, alpha)
    exact = SaintNormalization.exact(graph, node_p, entry_p)
    rows = graph.rows()
    within_binomial(norm.alpha, exact.alpha, norm.node_count[rows].clamp(min=1))
    seen = norm.node_count > 0
    assert torch.allclose(norm.loss_norm[seen],
                          DRAWS / (graph.num_nodes * norm.node_count[seen].double()))


def test_subgraph_is_the_induced_one() -> None:
    spec = GRAPHS["random"]
    g = csr(spec)
    sub = induced_subgraph(g, torch.tensor([4, 0, 2, 0, 5]))
    assert sub.nodes.tolist() == [0, 2, 4, 5]
    chosen = set(sub.nodes.tolist())
    want = sorted((u, v) for u, v in spec[1] + [(b, a) for a, b in spec[1]]
                  if u in chosen and v in chosen)
    glob = sub.nodes[sub.edge_index()]
    assert sorted(map(tuple, glob.T.tolist())) == want
    # edge_ids point at the same entries of the parent CSR
    assert torch.equal(g.indices[sub.edge_ids], glob[1])
    assert torch.equal(g.rows()[sub.edge_ids], glob[0])


def test_frontier_stays_within_budget_and_draws_are_reproducible() -> None:
    g = csr(small_random())
    sampler = FrontierSampler(g, frontier_size=2, budget=4)
    before = torch.get_rng_state()
    a = [sampler.sample(torch.Generator().manual_seed(5)).nodes for _ in range(3)]
    assert all(torch.equal(a[0], x) for x in a)
    assert torch.equal(before, torch.get_rng_state())  # the global generator is never used
    gen = torch.Generator().manual_seed(6)
    assert all(sampler.sample(gen).num_nodes <= 4 for _ in range(200))


def test_isolated_nodes_documented_behaviour() -> None:
    g = csr(small_random())  # node 6 has no edge
    gen = torch.Generator().manual_seed(0)
    assert int(estimate_normalization(NodeSampler(g, 7), 300, gen).node_count[6]) == 0
    assert int(estimate_normalization(EdgeSampler(g, 3), 300, gen).node_count[6]) == 0
    walks = RandomWalkSampler(g, num_roots=1, walk_length=3)
    alone = [s for s in (walks.sample(gen) for _ in range(300)) if 6 in s.nodes.tolist()]
    assert alone and all(s.nodes.tolist() == [6] and s.num_entries == 0 for s in alone)
    # every frontier node isolated: the frontier never moves
    lonely = CsrGraph.from_edge_index(np.array([[0], [1]]), 6)
    fs = FrontierSampler(lonely, frontier_size=1, budget=3)
    subs = [fs.sample(gen) for _ in range(100)]
    assert any(s.nodes.tolist() == [4] for s in subs)
    assert all(s.nodes.tolist() in ([0, 1], [2], [3], [4], [5]) for s in subs)
    # a never-sampled node gets a finite loss weight, its entries alpha = 1
    norm = estimate_normalization(NodeSampler(g, 2), 50, gen)
    assert float(norm.loss_norm[6]) == pytest.approx(50 / 7)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda g: RandomWalkSampler(g, 2, 0), "walk_length must be an integer at least 1"),
        (lambda g: RandomWalkSampler(g, 0, 2), "num_roots must be an integer in"),
        (lambda g: NodeSampler(g, 0), r"budget must be an integer in \[1, 5\]"),
        (lambda g: NodeSampler(g, 6), r"budget must be an integer in \[1, 5\]"),
        (lambda g: NodeSampler(g, 2.5), "budget must be an integer"),
        (lambda g: EdgeSampler(g, 5), r"budget must be an integer in \[1, 4\]"),
        (lambda g: FrontierSampler(g, 0, 3), "frontier_size must be"),
        (lambda g: FrontierSampler(g, 3, 3), r"budget must be an integer in \[4, 5\]"),
        (lambda g: FrontierSampler(g, 2, 6), r"budget must be an integer in \[3, 5\]"),
        (lambda g: estimate_normalization(NodeSampler(g, 2), 0, torch.Generator()),
         "num_subgraphs must be"),
    ],
)
def test_bad_sampler_settings(build: Callable, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        build(csr(path()))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("make", [lambda g: NodeSampler(g, 1), lambda g: EdgeSampler(g, 1),
                                  lambda g: RandomWalkSampler(g, 1, 1),
                                  lambda g: FrontierSampler(g, 1, 2)])
def test_graph_without_edges_is_refused(make: Callable) -> None:
    empty = CsrGraph.from_edge_index(np.empty((2, 0), dtype=np.int64), 4)
    with pytest.raises(ConfigError, match="needs a graph with at least one edge") as err:
        make(empty)
    assert "\n" not in str(err.value)


def test_bad_edge_index() -> None:
    with pytest.raises(ConfigError, match=r"outside 0\.\.2"):
        CsrGraph.from_edge_index(np.array([[0, 3], [1, 1]]), 3)
    with pytest.raises(ConfigError, match=r"shape \(2, E\)"):
        CsrGraph.from_edge_index(np.zeros((3, 2), dtype=np.int64), 3)


def test_csr_is_symmetric_simple() -> None:
    g = CsrGraph.from_edge_index(np.array([[0, 1, 1, 2, 2], [1, 0, 2, 2, 1]]), 4)
    assert g.indptr.tolist() == [0, 1, 3, 4, 4] and g.indices.tolist() == [1, 0, 2, 1]
    assert g.degree.tolist() == [1, 2, 1, 0] and g.num_edges == 2
