"""FED-MVMF: federated multi-view matrix factorisation (Flanagan et al., "Federated Multi-view
Matrix Factorization for Personalized Recommendations", arXiv 2004.04256, ECML-PKDD 2020), the
extension of FCF (Ammad-ud-din et al., arXiv 1901.09888) with side-information views.

Three matrices share factors: the implicit user-item matrix ``X ~ U V^T``, the users' side
information ``Y ~ U A^T`` and the items' side information ``Z ~ V B^T``. Objective
(:mod:`fedrec.algorithms.methods.fed_mvmf.model`)::

    J = sum_{u,j} c_uj (x_uj - u_u.v_j)^2 + w_Y ||Y - U A^T||^2 + w_Z ||Z - V B^T||^2
        + lambda (||U||^2 + ||V||^2 + ||A||^2 + ||B||^2),

``x_uj`` 1 for a training positive and 0 otherwise, over *every* (user, item) pair, with FCF's
implicit-feedback confidence ``c_uj = 1 + alpha x_uj``.

Parties. Client ``u`` (one per user with training positives) holds its ``X`` row (its positives
of each split), its ``Y`` row (both FL-MV-DSSM user views: 23 demographic dims and the 30 SVD
factors of the held-aside slice, concatenated) and its ``U`` row (state). The server holds
``V``, ``A``, ``B`` and the public ``Z`` (FL-MV-DSSM's item features: title trigrams and genre
bits). Data and split: FL-MV-DSSM's (:func:`fedrec.algorithms.multiview_common.multiview_split`,
the random 80/20 of all positives by default), so its rows compare with FL-MV-DSSM's.

A round:

1. ``train`` (server -> ``clients_per_round`` sampled clients): ``V`` and ``A``. Each client
   sets its ``u`` to the minimiser of its part of ``J`` (FCF's closed-form ALS step, with the
   ``Y`` term added: ``(V^T C_u V + w_Y A^T A + lambda I) u = V^T C_u x_u + w_Y A^T y_u``),
   then sends the gradients of its part with respect to ``V`` (every item's row) and ``A``.
2. The server scales the cohort's summed gradients by ``clients / cohort`` (an estimate of the
   sum over all clients), adds the gradients of its own part (the ``Z`` term and the
   regularisers of ``V``, ``A``, ``B``) and takes one Adam step (``lr``) on ``V``, ``A``, ``B``.

Evaluation (federated, as FL-MV-DSSM's): ``evaluate`` sends ``V``, ``A``; each client fits its
``u`` as in training, ranks every item it has not trained on by ``V u`` and returns only its
Precision/Recall/NDCG@``topk`` and AUC.

Cold start (``cold_start: users | items | users-items``, FL-MV-DSSM's CS-Users, CS-Items and
CS-Users-Items re-split of the same data): a new user's client holds its ``Y`` row and no
training positive; it is never sampled for training (the gradient estimate scales by the
clients that train) and at evaluation fits ``u`` from ``Y`` alone, since with no positive the
ALS step is ``(V^T V + w_Y A^T A + lambda I) u = w_Y A^T y``. A new item has no interaction, so
training only ever pushes its ``V`` row towards scoring 0 for everyone; the evaluation scores it
with the factor its side information gives, ``(w_Z B^T B + lambda I)^-1 w_Z B^T z_j``
(:func:`~fedrec.algorithms.methods.fed_mvmf.model.item_factors_from_features`), as multi-view MF
predicts a cold item. Which items are new is public (the catalogue publishes its new items:
the scenario's held-out items), so the server applies it; nothing about a client is needed.

Deployment (Flower). The ServerApp builds the server from public metadata
(:func:`build_job_from_metadata`): ``V``, ``A``, ``B`` from the public seed and ``Z`` and the
width of ``Y`` from the public facts the client nodes report
(:mod:`~fedrec.algorithms.methods.fed_mvmf.facts`); every ``X`` and ``Y`` row is built on its
client's node. Cold start is not deployable yet (the server would need the warm clients).

Where this implementation chose. Only the paper's abstract and introduction were at hand, not
its method section, so its exact weights and update schedule are not taken from its text: the
confidence ``1 + alpha`` and ALS user step are FCF's; the two side-information terms carry
weights ``w_Y`` (``user_view_weight``) and ``w_Z`` (``item_view_weight``), 1 by default; the
server updates all of ``V``, ``A``, ``B`` with one Adam step per round on the whole-objective
gradient (FCF's Adam on ``V``, extended), not with closed-form steps on ``B``. ``w_Y = w_Z = 0``
is FCF itself on this split. The uploads are dense (every item's row), so their shape reveals
nothing; their values do (:meth:`FedMVMFServer.privacy_report`). ``secure_aggregation: true``
sends each client's ``[dL_u/dV, dL_u/dA]`` as one vector into fedrec's secure sum
(:class:`~fedrec.federation.secure_sum.SecureSumOptions`: Bonawitz et al. or SecAgg+,
coordinates clipped to ``secagg_clip`` = 100, which the gradients stay far below, and
fixed-point encoded), so the server learns only the cohort's sum; the clients' losses then
stay on the clients. Off by default (the measured runs send in clear).

``dp: distributed | central`` (:mod:`fedrec.federation.dp_sum`, beyond the paper): a client's
round vector is the same ``[dL_u/dV, dL_u/dA]``, clipped in L2 to ``dp_clip``; cohorts are
Poisson samples of the clients that train; the server's estimate of ``sum_u dL_u`` is the noised
sum divided by the public expected cohort size, times the number of clients that train.
Distributed: Skellam noise from the clients inside the secure sum, user-level DP against the
server (``secure_aggregation`` stays false: the DP aggregate masks itself). Evaluation replies
go to the experimenter; no loss is sent. Design notes and measured runs:
``docs/fl-mv-dssm.md``.
"""

from __future__ import annotations

import numpy as np
import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fed_mvmf.client import MVMFClient, MVMFClientData
from fedrec.algorithms.methods.fed_mvmf.config import FedMVMFConfig
from fedrec.algorithms.methods.fed_mvmf.facts import job_facts, server_inputs
from fedrec.algorithms.methods.fed_mvmf.meta import METHOD
from fedrec.algorithms.methods.fed_mvmf.server import FedMVMFServer
from fedrec.algorithms.multiview_common import deployment_facts, items_by_user, multiview_of
from fedrec.data.multiview import MultiViewData, new_items
from fedrec.data.types import Dataset, is_metadata_only
from fedrec.errors import ConfigError
from fedrec.federation.message import CLIENT
from fedrec.federation.runtime import Party


def build_job_from_multiview(cfg: FedMVMFConfig, mv: MultiViewData) -> FederatedJob:
    """One client per user with training positives, holding its rows of ``X`` and ``Y``."""
    task = mv.task
    y = np.concatenate(mv.user_views, axis=1).astype(np.float32)
    if y.shape[0] != task.num_users or not np.isfinite(y).all():
        raise ConfigError(f"user side information must be one finite row per user, got shape "
                          f"{y.shape}")
    if mv.item_features.shape[0] != task.num_items or not np.isfinite(mv.item_features).all():
        raise ConfigError(f"item side information must be one finite row per item, got shape "
                          f"{mv.item_features.shape}")
    parts = {s: items_by_user(getattr(task, s), task.num_users)
             for s in ("train", "valid", "test")}
    trainable = [u for u in range(task.num_users) if len(parts["train"][u])]
    logic = MVMFClient(cfg, task.num_items, len(trainable), y.shape[1])
    clients, server_args = trainable, {}
    if cfg.cold_start != "none":  # new users' clients are evaluated, never trained
        clients = [u for u in range(task.num_users)
                   if any(len(parts[s][u]) for s in ("train", "valid", "test"))]
        server_args = {"trainable": trainable,
                       "new_items": new_items(mv)}
    parties = [Party(u, CLIENT, logic,
                     MVMFClientData(parts["train"][u], parts["valid"][u], parts["test"][u],
                                    y[u].copy()))
               for u in clients]
    return FederatedJob(server=FedMVMFServer(cfg, mv.item_features, y.shape[1], **server_args,
                                             num_clients=len(trainable)),
                        parties=parties, public_facts=job_facts(mv.item_features, y.shape[1]))


def build_job_from_metadata(cfg: FedMVMFConfig, dataset: Dataset) -> FederatedJob:
    """The server's job on a deployment (a metadata-only ``dataset``): the server from the
    public facts a client's node reported (the catalogue's item features ``Z`` and the width of
    ``Y``: :mod:`~fedrec.algorithms.methods.fed_mvmf.facts`) and the clients, one per client
    the nodes host, without data (each node builds its own clients' rows)."""
    z, user_feature_dim = server_inputs(deployment_facts("fed-mvmf", cfg, dataset),
                                        dataset.num_items)
    clients = [int(u) for u in dataset.user_ids()]  # the nodes' clients, in the simulator's order
    logic = MVMFClient(cfg, dataset.num_items, len(clients), user_feature_dim)
    return FederatedJob(server=FedMVMFServer(cfg, z, user_feature_dim,
                                             num_clients=len(clients)),
                        parties=[Party(u, CLIENT, logic) for u in clients])


def build_fed_mvmf_job(cfg: FedMVMFConfig, dataset: Dataset,
                       device: torch.device) -> FederatedJob:
    if is_metadata_only(dataset):
        return build_job_from_metadata(cfg, dataset)
    return build_job_from_multiview(cfg, multiview_of(cfg, dataset))


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FedMVMFConfig,
    build_job=build_fed_mvmf_job,
    contract=Contract(
        settings={"dim": 8, "clients_per_round": 16},
        dp_settings={"dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 20},
    ),
)

__all__ = ["SPEC", "FedMVMFConfig", "FedMVMFServer", "MVMFClient", "MVMFClientData",
           "build_fed_mvmf_job", "build_job_from_metadata", "build_job_from_multiview",
           "multiview_of"]
