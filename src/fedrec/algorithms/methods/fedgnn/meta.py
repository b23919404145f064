"""The methods' index entry of ``fedgnn`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fedgnn",
    summary="federated GNN: pseudo items, local DP, third-party graph expansion",
    paper="Wu et al., FedGNN: Federated Graph Neural Network for Privacy-Preserving "
    "Recommendation, KDD 2021 (arXiv:2102.04925)",
    dataset_kinds=("rating",),
    federated=True,
)
