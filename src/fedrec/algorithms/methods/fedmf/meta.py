"""The methods' index entry of ``fedmf`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fedmf",
    summary="FCF with Paillier-encrypted item updates: the server only adds ciphertexts",
    paper="Chai et al., Secure Federated Matrix Factorization, IEEE Intelligent Systems "
    "2020 (arXiv:1906.05108)",
    dataset_kinds=("rating",),
    federated=True,
)
