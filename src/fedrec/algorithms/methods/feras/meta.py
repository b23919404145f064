"""The methods' index entry of ``feras`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="feras",
    summary="federated GCN over hosts that share node embeddings (after layer 1) and weights "
            "through an aggregation server",
    paper="Feras: Federated Graph-based Networks with Shared Embedding (GraphSAINT sampler)",
    dataset_kinds=("graph",),
    federated=True,
)
