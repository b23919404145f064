"""The methods' index entry of ``fed-mvmf`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fed-mvmf",
    summary="federated multi-view matrix factorisation: FCF plus user and item side "
            "information with shared factors",
    paper="Flanagan et al., Federated Multi-view Matrix Factorization for Personalized "
          "Recommendations, arXiv:2004.04256 (2020)",
    dataset_kinds=("rating",),
    federated=True,
)
