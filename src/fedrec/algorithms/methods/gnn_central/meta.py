"""The methods' index entry of ``gnn-central`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="gnn-central",
    summary="FedGNN's model trained centrally (no federation, no privacy)",
    paper="Wu et al., KDD 2021 (the centralized counterpart of FedGNN's model)",
    dataset_kinds=("rating",),
    federated=False,
)
