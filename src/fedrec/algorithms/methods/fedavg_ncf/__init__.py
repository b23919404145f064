"""FedAvg over NeuMF: the parameter-transmission baseline of PTF-FedRec (Yuan et al., ICDE 2024).

Same client model (NeuMF, :mod:`fedrec.models.ncf`), same data and split
(:func:`~fedrec.algorithms.ncf_common.implicit_split`) and same local training as
:mod:`fedrec.algorithms.methods.ptf_fedrec` (:class:`~fedrec.algorithms.ncf_common.NeuMFCohort`:
positives label 1, ``num_negatives`` fixed negatives per positive label 0, BCE batch mean,
``local_epochs`` epochs of Adam ``client_lr``, batch ``client_batch``, lazy item-row updates),
but the parties exchange model parameters with FedAvg (McMahan et al., AISTATS 2017):

1. ``train`` (server -> selected clients): the global NeuMF parameters except user embeddings,
   i.e. ``item_emb`` ``[I, 2d]`` (GMF half then MLP half), the MLP tower ``w{k}``/``b{k}`` and
   the prediction layer ``out_w``/``out_b``.
2. Each client loads them next to its own user embedding (GMF and MLP halves; it never leaves the
   device), trains locally, and uploads every server-owned parameter, trained, plus ``n``, its
   number of training rows (positives + negatives).
3. The server replaces the global model by the ``n``-weighted mean of the uploads.

Evaluation (``evaluate``): the global parameters are broadcast to every client, which ranks all
items it has not trained on with its own user embedding and reports only its metrics
(``Recall@K``, ``NDCG@K``, ...).

Cost: every message carries the full server-owned model, ``(2 d I + MLP + output)`` float32 values
plus a small header (ML-100K, defaults: ~216 KB per client per round in each direction).
"""

from __future__ import annotations

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fedavg_ncf.client import FedAvgNCFClient
from fedrec.algorithms.methods.fedavg_ncf.config import FedAvgNCFConfig, server_param_names
from fedrec.algorithms.methods.fedavg_ncf.meta import METHOD
from fedrec.algorithms.methods.fedavg_ncf.server import FedAvgNCFServer
from fedrec.algorithms.ncf_common import implicit_split
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset
from fedrec.federation.aggregation import fedavg
from fedrec.federation.runtime import declare_parties


def build_fedavg_ncf_job(cfg: FedAvgNCFConfig, dataset: Dataset,
                         device: torch.device) -> FederatedJob:
    ds = implicit_split(dataset, cfg)
    return FederatedJob(FedAvgNCFServer(cfg, ds.num_items),
                        parties=declare_parties(partition_by_user(ds),
                                                FedAvgNCFClient(cfg, ds.num_items)))


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FedAvgNCFConfig,
    build_job=build_fedavg_ncf_job,
    contract=Contract(settings={"local_epochs": 1}),
)

__all__ = ["SPEC", "FedAvgNCFClient", "FedAvgNCFConfig", "FedAvgNCFServer", "build_fedavg_ncf_job",
           "fedavg", "server_param_names"]
