"""The methods' index entry of ``saint-central`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="saint-central",
    summary="centralized GraphSAINT: minibatch GCN on sampled subgraphs, every attribute visible",
    paper="Zeng et al., GraphSAINT: Graph Sampling Based Inductive Learning Method, ICLR 2020 "
    "(Feras's centralized upper bound)",
    dataset_kinds=("graph",),
    federated=False,
)
