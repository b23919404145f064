"""Algorithms, one package per method, and the registry the CLI looks names up in.

A method's package (``fedrec.algorithms.<method>``) holds its config, client and server and
exposes the :class:`AlgorithmSpec` it registers; no method imports another (an import-linter
``independence`` contract). What methods share lives in the modules beside them: ``base``,
``mf_common``, ``item_gradient`` (FCF's client step, also FedMF's), ``multiview_common``
(FL-MV-DSSM's and FED-MVMF's multi-view split and device evaluation), ``ncf_common`` (NeuMF
clients on the implicit split), ``gnn_common`` (FedGNN's model options), ``gcn_common``
(the node-classification GCNs' options, GraphSAINT sampler options, trainer base
and evaluation)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedrec.algorithms import (
    central_ranking,
    fcf,
    fed_mvmf,
    fedavg_gcn,
    fedavg_ncf,
    fedgnn,
    fedgrec,
    fedmf,
    feras,
    fl_mv_dssm,
    gcn_central,
    gnn_central,
    pmf,
    ptf_fedrec,
    saint_central,
)
from fedrec.algorithms.base import AlgorithmSpec, FederatedJob, ServerLogic, Trainer
from fedrec.config import RunConfig, build_config, default_config_text
from fedrec.errors import ConfigError

# One line per method package: each exposes the AlgorithmSpec(s) it registers. The order is the
# order ``fedrec algorithms`` lists them in.
ALGORITHMS: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in (
        pmf.SPEC,
        fcf.SPEC,
        fedmf.SPEC,
        ptf_fedrec.SPEC,
        fedavg_ncf.SPEC,
        fedgrec.SPEC,
        fl_mv_dssm.SPEC,
        fed_mvmf.SPEC,
        *central_ranking.SPECS,
        fedgnn.SPEC,
        gnn_central.SPEC,
        fedavg_gcn.SPEC,
        gcn_central.SPEC,
        saint_central.SPEC,
        feras.SPEC,
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
