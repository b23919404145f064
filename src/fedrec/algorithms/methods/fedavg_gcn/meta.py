"""The methods' index entry of ``fedavg-gcn`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fedavg-gcn",
    summary="FedAvg of a 2-layer GCN over hosts holding node subsets of a graph",
    paper="McMahan et al., AISTATS 2017 over Kipf & Welling's GCN, ICLR 2017 (the weight-"
    "sharing baseline of Feras)",
    dataset_kinds=("graph",),
    federated=True,
)
