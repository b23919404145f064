"""The methods' index entry of ``fcf`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fcf",
    summary="federated collaborative filtering: user factors stay on the device",
    paper="Ammad-ud-din et al., Federated Collaborative Filtering, arXiv:1901.09888",
    dataset_kinds=("rating", "interaction"),
    federated=True,
)
