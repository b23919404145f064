"""Algorithms: the method packages, the helpers they share, and the registry the CLI looks
names up in.

Every package in :mod:`fedrec.algorithms.methods` is a method: it holds its config, client and
server, describes itself in a torch-free ``meta.py`` (a :class:`MethodInfo`, read by
:func:`method_index` without importing the package: what ``fedrec algorithms`` lists) and
exposes ``SPEC`` (an :class:`AlgorithmSpec` built from that description) or ``SPECS``
(several); the registry below discovers them, so adding a method is adding its package.
Importing this package imports no method and no torch: :data:`ALGORITHMS` and the base
classes are imported on first use. No method imports another (an
import-linter ``independence`` contract over ``fedrec.algorithms.methods.*``). What methods
share lives in the modules beside that folder: ``base``, ``mf_common``, ``item_gradient``
(FCF's client step, also FedMF's), ``multiview_common`` (FL-MV-DSSM's and FED-MVMF's
multi-view split and device evaluation), ``ncf_common`` (NeuMF clients on the implicit split),
``gnn_common`` (FedGNN's model options), ``gcn_common`` (the node-classification GCNs'
options, GraphSAINT sampler options, trainer base and evaluation)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedrec.algorithms.index import MethodInfo, listing_order, method_index, method_packages
from fedrec.errors import ConfigError

if TYPE_CHECKING:
    from fedrec.algorithms.base import AlgorithmSpec, FederatedJob, ServerLogic, Trainer
    from fedrec.config import RunConfig

#: Every registered method's :class:`AlgorithmSpec` by name, in the index's order (federated
#: first, then the centralized baselines, each by name). Built on first use, by importing every
#: method package (and torch); what only lists the methods reads
#: :func:`~fedrec.algorithms.index.method_index` instead, which imports none.
ALGORITHMS: dict[str, AlgorithmSpec]

# Imported on first use: importing this package (for the index) must not import torch.
_BASE_NAMES = frozenset({"AlgorithmSpec", "FederatedJob", "ServerLogic", "Trainer"})


def __getattr__(name: str) -> Any:
    if name == "ALGORITHMS":
        return _registry()
    if name in _BASE_NAMES:
        from fedrec.algorithms import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _discover() -> dict[str, AlgorithmSpec]:
    from fedrec.algorithms.base import AlgorithmSpec

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
    return dict(sorted(found.items(), key=lambda kv: listing_order(kv[0], kv[1].federated)))


def _registry() -> dict[str, AlgorithmSpec]:
    """:data:`ALGORITHMS`, discovered on the first call and kept as the module's attribute
    (so that a test may register an example in it)."""
    registry: dict[str, AlgorithmSpec] | None = globals().get("ALGORITHMS")
    if registry is None:
        registry = globals()["ALGORITHMS"] = _discover()
    return registry


def get_algorithm(name: str) -> AlgorithmSpec:
    registry = _registry()
    if name not in registry:
        raise ConfigError(f"unknown algorithm {name!r}; known: {', '.join(sorted(registry))}")
    return registry[name]


def resolve_config(name: str, dataset: str | None = None, config_file: str | Path | None = None,
                   overrides: Sequence[str] | dict[str, Any] = (),
                   preset: str | None = None) -> RunConfig:
    """The configuration ``fedrec run NAME --dataset DATASET [--preset P]`` resolves, in the
    algorithm's own config class (:func:`fedrec.config.build_config`)."""
    from fedrec.config import build_config

    return build_config(get_algorithm(name).config_cls, name, dataset, config_file, overrides,
                        preset)


def resolve_config_sources(name: str, dataset: str | None = None,
                           config_file: str | Path | None = None,
                           overrides: Sequence[str] | dict[str, Any] = (),
                           preset: str | None = None) -> dict[str, str]:
    """Where each option of :func:`resolve_config`'s configuration (same arguments) that is not
    at its default came from (:func:`fedrec.config.config_sources`)."""
    from fedrec.config import config_sources

    return config_sources(get_algorithm(name).config_cls, name, dataset, config_file, overrides,
                          preset)


def config_show_text(name: str, dataset: str | None = None, preset: str | None = None) -> str:
    """What ``fedrec config show NAME [--dataset DATASET]`` prints
    (:func:`fedrec.config.default_config_text`): a ``--config`` file setting every option, to
    the defaults or, with ``dataset``, to what a run on it resolves."""
    from fedrec.config import default_config_text

    spec = get_algorithm(name)
    return default_config_text(spec.config_cls, name, [f"{name}: {spec.summary}", spec.paper],
                               dataset, preset)


__all__ = ["ALGORITHMS", "AlgorithmSpec", "FederatedJob", "MethodInfo", "ServerLogic", "Trainer",
           "config_show_text", "get_algorithm", "method_index", "method_packages",
           "resolve_config", "resolve_config_sources"]
