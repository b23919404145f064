"""Algorithms: the method packages, the helpers they share, and the registry the CLI looks
names up in.

Every package in :mod:`fedrec.algorithms.methods` is a method: it holds its config, client and
server and exposes ``SPEC`` (an :class:`AlgorithmSpec`) or ``SPECS`` (several); the registry
below discovers them, so adding a method is adding its package. No method imports another (an
import-linter ``independence`` contract over ``fedrec.algorithms.methods.*``). What methods
share lives in the modules beside that folder: ``base``, ``mf_common``, ``item_gradient``
(FCF's client step, also FedMF's), ``multiview_common`` (FL-MV-DSSM's and FED-MVMF's
multi-view split and device evaluation), ``ncf_common`` (NeuMF clients on the implicit split),
``gnn_common`` (FedGNN's model options), ``gcn_common`` (the node-classification GCNs'
options, GraphSAINT sampler options, trainer base and evaluation)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedrec.algorithms import methods
from fedrec.algorithms.base import AlgorithmSpec, FederatedJob, ServerLogic, Trainer
from fedrec.config import RunConfig, build_config, config_sources, default_config_text
from fedrec.errors import ConfigError


def method_packages() -> list[str]:
    """The method packages' module names (``fedrec.algorithms.methods.<package>``), sorted."""
    return sorted(f"{methods.__name__}.{m.name}" for m in pkgutil.iter_modules(methods.__path__)
                  if m.ispkg)


def _discover() -> dict[str, AlgorithmSpec]:
    found: dict[str, AlgorithmSpec] = {}
    for module_name in method_packages():
        module = importlib.import_module(module_name)
        specs = getattr(module, "SPECS", None) or (getattr(module, "SPEC", None),)
        for spec in specs:
            if not isinstance(spec, AlgorithmSpec):
                raise TypeError(f"{module_name} is a method package: it must expose SPEC "
                                "(an AlgorithmSpec) or SPECS")
            if spec.name in found:
                raise TypeError(f"two methods are named {spec.name!r}")
            found[spec.name] = spec
    # Listed federated first, then the centralized baselines, each by name.
    return dict(sorted(found.items(), key=lambda kv: (not kv[1].federated, kv[0])))


#: Every registered method by name (discovered from :mod:`fedrec.algorithms.methods`).
ALGORITHMS: dict[str, AlgorithmSpec] = _discover()


def get_algorithm(name: str) -> AlgorithmSpec:
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}")
    return ALGORITHMS[name]


def resolve_config(name: str, dataset: str | None = None, config_file: str | Path | None = None,
                   overrides: Sequence[str] | dict[str, Any] = (),
                   preset: str | None = None) -> RunConfig:
    """The configuration ``fedrec run NAME --dataset DATASET [--preset P]`` resolves, in the
    algorithm's own config class (:func:`fedrec.config.build_config`)."""
    return build_config(get_algorithm(name).config_cls, name, dataset, config_file, overrides,
                        preset)


def resolve_config_sources(name: str, dataset: str | None = None,
                           config_file: str | Path | None = None,
                           overrides: Sequence[str] | dict[str, Any] = (),
                           preset: str | None = None) -> dict[str, str]:
    """Where each option of :func:`resolve_config`'s configuration (same arguments) that is not
    at its default came from (:func:`fedrec.config.config_sources`)."""
    return config_sources(get_algorithm(name).config_cls, name, dataset, config_file, overrides,
                          preset)


def config_show_text(name: str, dataset: str | None = None, preset: str | None = None) -> str:
    """What ``fedrec config show NAME [--dataset DATASET]`` prints
    (:func:`fedrec.config.default_config_text`): a ``--config`` file setting every option, to
    the defaults or, with ``dataset``, to what a run on it resolves."""
    spec = get_algorithm(name)
    return default_config_text(spec.config_cls, name, [f"{name}: {spec.summary}", spec.paper],
                               dataset, preset)


__all__ = ["ALGORITHMS", "AlgorithmSpec", "FederatedJob", "ServerLogic", "Trainer",
           "config_show_text", "get_algorithm", "method_packages", "resolve_config",
           "resolve_config_sources"]
