"""The methods' index entry of ``pmf`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="pmf",
    summary="centralized matrix factorisation (no federation, no privacy)",
    paper="Salakhutdinov & Mnih, Probabilistic Matrix Factorization, NIPS 2007",
    dataset_kinds=("rating", "interaction"),
    federated=False,
)
