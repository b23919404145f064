"""Algorithms, one module per method, and the registry the CLI looks names up in."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob, ServerLogic, Trainer
from fedrec.algorithms.central_ranking import (
    CentralRankingConfig,
    NeuMFConfig,
    NGCFConfig,
    central_ranking_builder,
)
from fedrec.algorithms.fcf import FCFConfig, build_fcf, build_fcf_job
from fedrec.algorithms.fedavg_gcn import SPEC as FEDAVG_GCN
from fedrec.algorithms.fedavg_ncf import FedAvgNCFConfig, build_fedavg_ncf, build_fedavg_ncf_job
from fedrec.algorithms.fedgnn import (
    FedGNNConfig,
    build_fedgnn,
    build_fedgnn_job,
    fedgnn_instruments,
)
from fedrec.algorithms.fedmf import FedMFConfig, build_fedmf, build_fedmf_job
from fedrec.algorithms.gnn_central import GNNCentralConfig, build_gnn_central
from fedrec.algorithms.pmf import PMFConfig, build_pmf
from fedrec.algorithms.ptf_fedrec import (
    PTFFedRecConfig,
    build_ptf_fedrec,
    build_ptf_fedrec_job,
    ptf_instruments,
)
from fedrec.config import RunConfig, build_config, default_config_text
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
            name="fedmf",
            summary="FCF with Paillier-encrypted item updates: the server only adds ciphertexts",
            paper="Chai et al., Secure Federated Matrix Factorization, IEEE Intelligent Systems "
            "2020 (arXiv:1906.05108)",
            config_cls=FedMFConfig,
            dataset_kinds=("rating",),
            build=build_fedmf,
            build_job=build_fedmf_job,
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
            instruments=ptf_instruments,
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
            name="lightgcn",
            summary="centralized LightGCN on PTF-FedRec's split (no federation, no privacy)",
            paper="He et al., LightGCN: Simplifying and Powering Graph Convolution Network for "
            "Recommendation, SIGIR 2020",
            config_cls=CentralRankingConfig,
            dataset_kinds=("rating", "interaction"),
            build=central_ranking_builder("lightgcn"),
        ),
        AlgorithmSpec(
            name="ngcf",
            summary="centralized NGCF on PTF-FedRec's split (no federation, no privacy)",
            paper="Wang et al., Neural Graph Collaborative Filtering, SIGIR 2019",
            config_cls=NGCFConfig,
            dataset_kinds=("rating", "interaction"),
            build=central_ranking_builder("ngcf"),
        ),
        AlgorithmSpec(
            name="neumf",
            summary="centralized NeuMF on PTF-FedRec's split (no federation, no privacy)",
            paper="He et al., Neural Collaborative Filtering, WWW 2017",
            config_cls=NeuMFConfig,
            dataset_kinds=("rating", "interaction"),
            build=central_ranking_builder("neumf"),
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
            instruments=fedgnn_instruments,
        ),
        AlgorithmSpec(
            name="gnn-central",
            summary="FedGNN's model trained centrally (no federation, no privacy)",
            paper="Wu et al., KDD 2021 (the centralized counterpart of FedGNN's model)",
            config_cls=GNNCentralConfig,
            dataset_kinds=("rating",),
            build=build_gnn_central,
        ),
        FEDAVG_GCN,
    )
}


def get_algorithm(name: str) -> AlgorithmSpec:
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}")
    return ALGORITHMS[name]


def resolve_config(name: str, dataset: str | None = None, config_file: str | Path | None = None,
                   overrides: Sequence[str] | dict[str, Any] = ()) -> RunConfig:
    """The configuration ``fedrec run NAME --dataset DATASET`` resolves, in the algorithm's own
    config class (:func:`fedrec.config.build_config`)."""
    return build_config(get_algorithm(name).config_cls, name, dataset, config_file, overrides)


def config_show_text(name: str) -> str:
    """What ``fedrec config show NAME`` prints (:func:`fedrec.config.default_config_text`)."""
    spec = get_algorithm(name)
    return default_config_text(spec.config_cls, name, [f"{name}: {spec.summary}", spec.paper])


__all__ = ["ALGORITHMS", "AlgorithmSpec", "FederatedJob", "ServerLogic", "Trainer",
           "config_show_text", "get_algorithm", "resolve_config"]
