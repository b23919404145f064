"""The methods' index entries of ``lightgcn``, ``ngcf`` and ``neumf``
(:mod:`fedrec.algorithms.index`): read without importing this package, so it imports nothing
but the index."""

from fedrec.algorithms.index import MethodInfo

LIGHTGCN = MethodInfo(
    name="lightgcn",
    summary="centralized LightGCN on PTF-FedRec's split (no federation, no privacy)",
    paper="He et al., LightGCN: Simplifying and Powering Graph Convolution Network for "
    "Recommendation, SIGIR 2020",
    dataset_kinds=("rating", "interaction"),
    federated=False,
)
NGCF = MethodInfo(
    name="ngcf",
    summary="centralized NGCF on PTF-FedRec's split (no federation, no privacy)",
    paper="Wang et al., Neural Graph Collaborative Filtering, SIGIR 2019",
    dataset_kinds=("rating", "interaction"),
    federated=False,
)
NEUMF = MethodInfo(
    name="neumf",
    summary="centralized NeuMF on PTF-FedRec's split (no federation, no privacy)",
    paper="He et al., Neural Collaborative Filtering, WWW 2017",
    dataset_kinds=("rating", "interaction"),
    federated=False,
)

METHODS = (LIGHTGCN, NGCF, NEUMF)
