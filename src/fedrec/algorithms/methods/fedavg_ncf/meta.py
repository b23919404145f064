"""The methods' index entry of ``fedavg-ncf`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fedavg-ncf",
    summary="FedAvg over NeuMF: PTF-FedRec's parameter-transmission baseline",
    paper="McMahan et al., Communication-Efficient Learning of Deep Networks from "
    "Decentralized Data, AISTATS 2017 (baseline of Yuan et al., ICDE 2024)",
    dataset_kinds=("rating", "interaction"),
    federated=True,
)
