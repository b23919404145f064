"""The methods' index entry of ``fedgrec`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fedgrec",
    summary="federated LightGCN: latent embeddings as the graph's proxy, updated lazily through "
            "secure sums",
    paper="Luo et al., FedGRec: Federated Graph Recommender System with Lazy Update of Latent "
          "Embeddings, FL-NeurIPS 2022 (arXiv:2210.13686)",
    dataset_kinds=("rating", "interaction"),
    federated=True,
)
