"""The methods' index entry of ``gcn-central`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="gcn-central",
    summary="full-batch centralized 2-layer GCN for node classification (no federation)",
    paper="Kipf & Welling, Semi-Supervised Classification with Graph Convolutional Networks, "
    "ICLR 2017",
    dataset_kinds=("graph",),
    federated=False,
)
