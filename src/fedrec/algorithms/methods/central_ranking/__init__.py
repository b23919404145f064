"""Centralized ranking baselines on PTF-FedRec's splits: LightGCN, NGCF and NeuMF.

The accuracy ceiling that PTF-FedRec (:mod:`fedrec.algorithms.methods.ptf_fedrec`) is compared
with: the
same models (:mod:`fedrec.models.lightgcn`, :mod:`fedrec.models.ncf`) trained with every
interaction in one place, on the *same* split (:class:`~fedrec.algorithms.ncf_common.
ImplicitSplitConfig`, :func:`~fedrec.algorithms.ncf_common.implicit_split`: equal ``split``,
``test_fraction`` and ``split_seed`` give equal train and test sets) and with the same full-ranking
evaluation (:func:`fedrec.metrics.evaluate_topk`, the user's known items excluded: see
:class:`~fedrec.algorithms.mf_common.SplitRanking`). One
"round" is one epoch; Adam, minibatches of ``batch`` training instances in a random order.

* ``lightgcn`` (He et al., SIGIR 2020) and ``ngcf`` (Wang et al., SIGIR 2019): propagation over
  the normalised training graph ``D^-1/2 A D^-1/2`` (recomputed in every batch, as in their
  reference code), BPR (Rendle et al. 2009) with ``num_negatives`` uniform negatives ``j`` per
  training pair ``(u, i)``, drawn afresh every epoch::

      L = 1/B sum_{(u,i,j)} [ -ln sigmoid(e_u . e_i - e_u . e_j)
                              + reg/2 (|r_u|^2 + |r_i|^2 + |r_j|^2) ]

  where ``e`` are the final representations and the penalised rows ``r`` are, following each
  reference implementation, the layer-0 embeddings for LightGCN and the final (concatenated)
  representations for NGCF. NGCF's message dropout uses a generator seeded by (seed, epoch).
* ``neumf`` (He et al., WWW 2017): :class:`fedrec.models.ncf.NeuMF` (no GMF/MLP pre-training),
  binary cross-entropy on every positive (label 1) and ``num_negatives`` uniform negatives per
  positive (label 0), redrawn every epoch (NCF's ``get_train_instances``), batch mean::

      L = 1/B sum_{(u,i,y)} [ BCE(sigmoid(f(u, i)), y) + reg/2 (|p_u|^2 + |q_i|^2) ]

Negatives are keyed by (seed, epoch, user, row) (:func:`fedrec.models.mf.sample_negatives`), so a
run, and a run resumed from a checkpoint, is reproducible. Nothing is sent: the ledger stays empty
and there is no privacy guarantee.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from fedrec.algorithms.base import AlgorithmSpec
from fedrec.algorithms.methods.central_ranking.config import (
    MODELS,
    CentralRankingConfig,
    NeuMFConfig,
    NGCFConfig,
)
from fedrec.algorithms.methods.central_ranking.meta import LIGHTGCN, NEUMF, NGCF
from fedrec.algorithms.methods.central_ranking.trainer import CentralRankingTrainer
from fedrec.data.types import Dataset
from fedrec.errors import ConfigError


def build_central_ranking(cfg: CentralRankingConfig, dataset: Dataset,
                          device: torch.device) -> CentralRankingTrainer:
    return CentralRankingTrainer(cfg, dataset, device)


def central_ranking_builder(
    model: str,
) -> Callable[[CentralRankingConfig, Dataset, torch.device], CentralRankingTrainer]:
    """The registry's ``build`` for algorithm ``model``: refuses a config naming another model
    (``fedrec run lightgcn --set model=neumf`` would otherwise record the wrong algorithm)."""

    def build(cfg: CentralRankingConfig, dataset: Dataset,
              device: torch.device) -> CentralRankingTrainer:
        if cfg.model != model:
            raise ConfigError(f"algorithm {model} trains model {model}, got model: {cfg.model}; "
                              f"run algorithm {cfg.model} instead")
        return build_central_ranking(cfg, dataset, device)

    return build


SPECS = (
    AlgorithmSpec.of(
        LIGHTGCN,
        config_cls=CentralRankingConfig,
        build=central_ranking_builder(LIGHTGCN.name),
    ),
    AlgorithmSpec.of(
        NGCF,
        config_cls=NGCFConfig,
        build=central_ranking_builder(NGCF.name),
    ),
    AlgorithmSpec.of(
        NEUMF,
        config_cls=NeuMFConfig,
        build=central_ranking_builder(NEUMF.name),
    ),
)

__all__ = ["MODELS", "SPECS", "CentralRankingConfig", "CentralRankingTrainer", "NGCFConfig",
           "NeuMFConfig", "build_central_ranking", "central_ranking_builder"]
