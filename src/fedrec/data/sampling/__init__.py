"""GraphSAINT subgraph samplers in plain torch (Zeng et al., "GraphSAINT: Graph Sampling Based
Inductive Learning Method", ICLR 2020), written here because PyG's need ``torch_sparse``.

* :class:`CsrGraph`, :class:`Subgraph` -- the graph sampled from and an induced subgraph (graph);
* :class:`NodeSampler`, :class:`EdgeSampler` -- i.i.d. node / edge draws, with exact inclusion
  probabilities (independent);
* :class:`RandomWalkSampler`, :class:`FrontierSampler` -- random walks and the
  multi-dimensional random walk (walks);
* :func:`estimate_normalization`, :class:`SaintNormalization` -- loss and aggregator
  normalisation by pre-sampling (normalization).

Every draw comes from a ``torch.Generator`` the caller passes in (a host's own secret), never
from torch's global generator, and is vectorised over nodes (loops run over walk steps or
subgraphs, never over nodes).
"""

from fedrec.data.sampling.graph import CsrGraph, Sampler, Subgraph, induced_subgraph
from fedrec.data.sampling.independent import EdgeSampler, NodeSampler
from fedrec.data.sampling.normalization import SaintNormalization, estimate_normalization
from fedrec.data.sampling.walks import FrontierSampler, RandomWalkSampler

__all__ = [
    "CsrGraph",
    "EdgeSampler",
    "FrontierSampler",
    "NodeSampler",
    "RandomWalkSampler",
    "SaintNormalization",
    "Sampler",
    "Subgraph",
    "estimate_normalization",
    "induced_subgraph",
]
