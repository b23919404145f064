"""FedGNN: federated GNN recommendation with pseudo items, local DP and graph expansion.

Wu et al., "FedGNN: Federated Graph Neural Network for Privacy-Preserving Recommendation",
KDD 2021 (arXiv:2102.04925). Model: :mod:`fedrec.models.gnn`.

Parties: the recommendation server (:class:`FedGNNServer`, holds the GNN weights and the item
embedding table), the clients (:class:`FedGNNClient`, one per user: its ratings, its user
embedding, its neighbour embeddings) and the third-party matcher (:class:`FedGNNThirdParty`,
service ``"third_party"``).

One round (Algorithm 1):

1. ``train`` (server -> |S| sampled clients): the GNN weights and the item embedding table.
2. Each client computes, on its local subgraph, the gradients of its loss w.r.t. the GNN
   weights, its user embedding and the embeddings of its rated items (``local_steps - 1``
   extra steps on the user embedding first). It updates its user embedding locally
   (SGD, ``lr_user``, on the mean loss whatever ``loss_reduction`` is). It samples
   ``M = pseudo_items`` items it has not rated (capped at the number available) and draws
   their gradients from a Gaussian with the mean and covariance of its real item gradients
   (``g_p = mean + Z (G - mean) / sqrt(K - 1)``, ``Z ~ N(0, 1)`` ``(M, K)``, which has
   exactly the sample covariance, also when it is singular). The unified
   gradient (GNN weights, real and pseudo item rows) is clipped in L-infinity to ``clip`` and
   perturbed with ``Laplace(0, laplace)`` per coordinate (Eq. 1); the item ids and rows are
   shuffled together, so the message does not say which rows are real.
3. The server sums the item rows per id and the GNN gradients, divides by ``|S|`` (FedAvg) and
   takes an SGD step (``lr``).

Three more mechanisms, each optional: graph expansion (Algorithm 2: the third party matches
encrypted item ids and returns neighbour embeddings), item privacy by a secure sum instead of
pseudo items (``item_privacy="secure_sum"``, beyond the paper), and the pseudo-item set across
rounds (``pseudo_set``).

Guarantee (:meth:`FedGNNServer.privacy_report` states it): each upload is one Laplace mechanism
over its clipped coordinates, composed over the most-participating client's uploads; the
uploaded item ids have no formal guarantee (with ``measure_leakage`` the rated-items attack's F1
is reported). With ``secure_sum`` the server learns each round's cohort sum only.

``dp: distributed | central`` (:mod:`fedrec.federation.dp_sum`, beyond the paper) replaces all
three of the paper's mechanisms: a client's round vector ``[GNN-weight gradient, item gradients
dense over all items]`` is clipped in L2 to ``dp_clip`` and reaches the server only inside the
cohort's noised sum, so no item id, upload length or loss is sent and pseudo items and LDP have
nothing left to hide; the graph expansion (user embeddings and item tokens to the third party
in clear) is not run. The cohort is a Poisson sample and the server divides the sum by the
expected cohort size (``item_avg`` is not used). User-level DP against the server
(distributed), against the released model (central).

Malicious clients (:mod:`fedrec.attacks.poisoning`, the ``poisoning`` options): the data
attacks run this client code on fake profiles; the model attacks upload crafted item-embedding
rows (:mod:`~fedrec.algorithms.methods.fedgnn.poisoning`); the evaluation reports the targets'
exposure, ranked by each client's predicted ratings of every item. In clear uploads the server
may aggregate by a ``defense`` (:mod:`~fedrec.algorithms.methods.fedgnn.defense`); the secure
sum and the DP aggregate take none.

Design notes, measurements, settings and what is not done: ``docs/fedgnn.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fedgnn.client import FedGNNClient
from fedrec.algorithms.methods.fedgnn.config import (
    ITEM_PRIVACY,
    PSEUDO_SETS,
    RING_TAILS,
    FedGNNConfig,
    ldp_mechanism,
    ring_bound,
)
from fedrec.algorithms.methods.fedgnn.meta import METHOD
from fedrec.algorithms.methods.fedgnn.poisoning import fedgnn_item_table
from fedrec.algorithms.methods.fedgnn.server import FedGNNServer
from fedrec.algorithms.methods.fedgnn.third_party import FedGNNThirdParty
from fedrec.algorithms.mf_common import scale_midpoint
from fedrec.attacks.rated_items import RatedItemsAttack
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset, RatingDataset
from fedrec.federation.message import THIRD_PARTY
from fedrec.federation.runtime import declare_parties


def fedgnn_instruments(cfg: FedGNNConfig, dataset: Dataset) -> dict[str, Any]:
    """The experimenter's instruments (:attr:`~fedrec.algorithms.base.AlgorithmSpec.instruments`):
    with ``measure_leakage``, the rated-items ``attack`` on the server's inbox, given each
    client's training items only to score its guesses (it estimates ``k`` from the public
    ``pseudo_items``). Read by no protocol step."""
    if not cfg.measure_leakage:
        return {}
    positives = {u: c.train_items for u, c in partition_by_user(dataset).items()}
    return {"attack": RatedItemsAttack(positives, pseudo_items=cfg.pseudo_items, seed=cfg.seed)}


def build_fedgnn_job(cfg: FedGNNConfig, dataset: Dataset, device: torch.device) -> FederatedJob:
    """The job; on a metadata-only dataset (a ServerApp's) no experimenter's instruments."""
    if not isinstance(dataset, RatingDataset):
        raise TypeError("FedGNN needs an explicit rating dataset")
    clients = partition_by_user(dataset)
    server = FedGNNServer(cfg, dataset.num_items, len(clients))
    if not dataset.meta.get("metadata_only"):
        server.attach_instruments(fedgnn_instruments(cfg, dataset))
    client = FedGNNClient(cfg, dataset.num_items, scale_midpoint(dataset),
                          (dataset.rating_min, dataset.rating_max), server.params,
                          len(clients))
    return FederatedJob(server, parties=declare_parties(
        clients, client, {THIRD_PARTY: (FedGNNThirdParty(cfg.neighbours), None)}))


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FedGNNConfig,
    build_job=build_fedgnn_job,
    instruments=fedgnn_instruments,
    poisoning=fedgnn_item_table,
    contract=Contract(
        settings={"dim": 8, "clients_per_round": 16, "pseudo_items": 50, "neighbours": 4,
                  "expand_after": 0},
        dp_settings={"dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 40},
        boundary_tolerance=1e-5,
        boundary_tolerance_reason="the simulator computes a cohort in padded chunks of clients "
        "sorted by item count; another client's data moves clients between chunks, and a "
        "batched matmul then rounds their float32 GNN-weight gradients differently (~6e-8)",
        flower_tolerance=1e-6,
        flower_tolerance_reason="a SuperNode pads its own chunks of clients, not the "
        "simulator's: float32 sums round differently (observed ~5e-8 relative)",
    ),
)

__all__ = ["ITEM_PRIVACY", "PSEUDO_SETS", "RING_TAILS", "SPEC", "FedGNNClient", "FedGNNConfig",
           "FedGNNServer", "FedGNNThirdParty", "build_fedgnn_job",
           "fedgnn_instruments", "ldp_mechanism", "ring_bound"]
