"""The methods' index entry of ``ptf-fedrec`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="ptf-fedrec",
    summary="parameter transmission-free: only (item, score) pairs cross the network",
    paper="Yuan et al., Hide Your Model: A Parameter Transmission-free Federated "
    "Recommender System, ICDE 2024",
    dataset_kinds=("rating", "interaction"),
    federated=True,
)
