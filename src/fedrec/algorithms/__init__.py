"""Algorithms, one module per method, and the registry the CLI looks names up in."""

from __future__ import annotations

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob, ServerLogic, Trainer
from fedrec.algorithms.fcf import FCFConfig, build_fcf, build_fcf_job
from fedrec.algorithms.fedavg_ncf import FedAvgNCFConfig, build_fedavg_ncf, build_fedavg_ncf_job
from fedrec.algorithms.fedgnn import FedGNNConfig, build_fedgnn, build_fedgnn_job
from fedrec.algorithms.pmf import PMFConfig, build_pmf
from fedrec.algorithms.ptf_fedrec import PTFFedRecConfig, build_ptf_fedrec, build_ptf_fedrec_job
from fedrec.errors import ConfigError

ALGORITHMS: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in (
        AlgorithmSpec(
            name="pmf",
            summary="centralized matrix factorisation (no federation, no privacy)",
            paper="Salakhutdinov & Mnih, Probabilistic Matrix Factorization, NIPS 2007",
            config_cls=PMFConfig,
            dataset_kinds=("rating", "interaction"),
            build=build_pmf,
        ),
        AlgorithmSpec(
            name="fcf",
            summary="federated collaborative filtering: user factors stay on the device",
            paper="Ammad-ud-din et al., Federated Collaborative Filtering, arXiv:1901.09888",
            config_cls=FCFConfig,
            dataset_kinds=("rating", "interaction"),
            build=build_fcf,
            build_job=build_fcf_job,
        ),
        AlgorithmSpec(
            name="ptf-fedrec",
            summary="parameter transmission-free: only (item, score) pairs cross the network",
            paper="Yuan et al., Hide Your Model: A Parameter Transmission-free Federated "
            "Recommender System, ICDE 2024",
            config_cls=PTFFedRecConfig,
            dataset_kinds=("rating", "interaction"),
            build=build_ptf_fedrec,
            build_job=build_ptf_fedrec_job,
        ),
        AlgorithmSpec(
            name="fedavg-ncf",
            summary="FedAvg over NeuMF: PTF-FedRec's parameter-transmission baseline",
            paper="McMahan et al., Communication-Efficient Learning of Deep Networks from "
            "Decentralized Data, AISTATS 2017 (baseline of Yuan et al., ICDE 2024)",
            config_cls=FedAvgNCFConfig,
            dataset_kinds=("rating", "interaction"),
            build=build_fedavg_ncf,
            build_job=build_fedavg_ncf_job,
        ),
        AlgorithmSpec(
            name="fedgnn",
            summary="federated GNN: pseudo items, local DP, third-party graph expansion",
            paper="Wu et al., FedGNN: Federated Graph Neural Network for Privacy-Preserving "
            "Recommendation, KDD 2021 (arXiv:2102.04925)",
            config_cls=FedGNNConfig,
            dataset_kinds=("rating",),
            build=build_fedgnn,
            build_job=build_fedgnn_job,
        ),
    )
}


def get_algorithm(name: str) -> AlgorithmSpec:
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}")
    return ALGORITHMS[name]


__all__ = ["ALGORITHMS", "AlgorithmSpec", "FederatedJob", "ServerLogic", "Trainer", "get_algorithm"]
