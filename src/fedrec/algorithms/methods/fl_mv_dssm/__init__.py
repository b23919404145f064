"""FL-MV-DSSM: federated multi-view DSSM (Huang et al., arXiv 2008.10808, FTL-IJCAI 2020), with
its variants SEMI-FL-MV-DSSM (``aggregate_user_sub_model: false``) and FL-DSSM (one view in
``views``).

Parties. A user is a *device* (a client, id = user id) that runs ``N`` *views* (apps; parties
of role ``"view"``, ids ``"view/<device>/<name>"``). View ``i`` holds its own user feature row
``U_i`` and its user sub-model ``W_Ui`` (SEMI-FL-MV-DSSM: in its state), plus the device's
training positives ``y`` (Algorithm 1 gives every view ``(U_i, I, y)``); every view knows the
public item features ``I``. The device holds its positives of every split and nothing of any
view: whatever passes from a view to its device is a runtime message (metered, shown to
observers). A view is declared co-located with its device (``Party(..., host=device)``): a
Flower deployment runs it on its device's SuperNode, on that node's data, its messages to the
device sealed through the server's relay (:mod:`fedrec.engines.flower.node`); the server there
is built from metadata and the nodes' public facts (:func:`build_job_from_metadata`).
Data: :func:`fedrec.data.multiview.build_multiview` (view ``demographics``: 23
dims; ``svd``: 30-dim SVD factors of a held-aside slice; items: 3,169 title trigrams + 19
genres). Towers (:mod:`fedrec.models.dssm`): Dense 64, 32, 16, cosine relevance, softmax with
temperature ``gamma`` over the positive and ``num_negatives`` random unclicked items.

A round (Algorithm 1):

1. ``view_train`` (server -> each view of the ``clients_per_round`` sampled devices): the global
   item sub-model and (FL-MV-DSSM) that view's global user sub-model. The view copies them,
   runs ``local_epochs`` of SGD (``client_lr``, ``client_batch`` positives per step, fresh
   negatives per step from its own secret) and sends its device the changes of the item
   sub-model and (FL-MV-DSSM) of its user sub-model; SEMI keeps its trained user sub-model.
2. ``local_aggregate`` (server -> device): ``local_secure_aggregate``
   (:func:`~fedrec.algorithms.methods.fl_mv_dssm.device.local_secure_aggregate`, equation 7): a
   uniform sample ``B`` of ``view_sample_size`` views, each item change clipped to L2 ``clip``,
   their sum plus ``N(0, noise_multiplier^2 clip^2)`` drawn once by the device, divided by
   ``|B|``; then each view's user change beside it; the device returns that vector into
   ``remote_secure_aggregate``: Bonawitz et al.'s secure sum across the sampled devices
   (:mod:`fedrec.federation.secure_sum`; ``secure_aggregation: false``: a plain sum of the same
   fixed-point encodings, the same model).
3. The server divides the sum by the number of devices in it and takes one Adam step
   (``server_lr``) on each global vector with the negated mean change as the gradient.

Evaluation (Algorithm 2, federated): ``view_predict`` (server -> every view): each view scores
every item, ``P(item | U_i)`` = softmax over all items of ``gamma`` times cosine, adds its own
``N(0, (predict_noise sqrt 2)^2)`` and sends the vector to its device; ``evaluate`` (server ->
device): the device sums its views' vectors, ranks every item it has not trained on and returns
only its Precision/Recall/NDCG@``topk`` and AUC (test items against every other unknown item).

Cold start (``cold_start``: :func:`fedrec.data.multiview.cold_start`). A new user's device
holds its views' features and no interaction: it is evaluated, never sampled for training. A
new item exists only from the catalogue's listing of new items (public), so training draws
no negative from the new items: drawn as negatives while never a positive, the item tower
would learn their features as what nobody wants (measured before this rule: CS-Items AUC
0.24, i.e. new items ranked below the known ones; ``docs/fl-mv-dssm.md``).

Guarantee. Against another view of the same device (or anyone who reads a device's local
aggregate): each view's item change enters the aggregate as a Gaussian mechanism of
sensitivity ``clip`` and noise multiplier ``noise_multiplier`` (add/remove one view's
contribution), composed over the rounds its device took part in (PLD/RDP,
:mod:`fedrec.privacy.accounting`; no amplification by the view sampling is claimed); its
prediction vectors are Gaussian mechanisms of sensitivity sqrt 2 (``predict_noise`` 0: no
guarantee for them). Against the server: it sees only sums over the cohort (secure
aggregation). Not covered: the device itself (the local framework, which the paper trusts: it
sees each view's clipped change before the noise and each view's user change), and the user
sub-model changes, which carry no noise. Choices where the paper is cut: ``docs/fl-mv-dssm.md``.

``dp: distributed | central`` (:mod:`fedrec.federation.dp_sum`, beyond the paper): the
cross-device sum becomes the one DP aggregate, whose unit is the device with all its views.
A device's upload (the local aggregate, the paper's noise included, then its views' user
changes) is one vector clipped in L2 to ``dp_clip``; cohorts are Poisson samples of the devices
that train; the server takes its Adam step on the noised sum divided by the public expected
cohort size. Distributed: Skellam noise from the devices inside the secure sum (its masking is
``dp_masking``, and ``secure_aggregation`` must say the same), user-level DP against the server;
central: the server's Gaussian, DP against the released model only (``secure_aggregation:
false``). Evaluation replies go to the experimenter. The aggregate's noise multiplier is
``dp_noise_multiplier``; the paper's view-level Gaussian (``noise_multiplier``, ``clip``) is an
independent setting and keeps its own figure (``view_level`` in the privacy report).
"""

from __future__ import annotations

import numpy as np
import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.algorithms.methods.fl_mv_dssm.device import (
    DeviceData,
    DeviceLogic,
    local_secure_aggregate,
)
from fedrec.algorithms.methods.fl_mv_dssm.meta import METHOD
from fedrec.algorithms.methods.fl_mv_dssm.server import FLMVDSSMServer, training_accountant
from fedrec.algorithms.methods.fl_mv_dssm.view import VIEW, ViewData, ViewLogic, view_id
from fedrec.algorithms.multiview_common import (
    deployment_facts,
    items_by_user,
    multiview_of,
    reuse_multiviews,
)
from fedrec.data.multiview import MultiViewData, new_items
from fedrec.data.types import Dataset, is_metadata_only
from fedrec.errors import ConfigError
from fedrec.federation.message import CLIENT
from fedrec.federation.runtime import Party


def build_job_from_multiview(cfg: FLMVDSSMConfig, mv: MultiViewData) -> FederatedJob:
    """The parties of :mod:`fedrec.algorithms.methods.fl_mv_dssm` on ``mv``: one device per user
    with
    training positives, each with one party per view in ``cfg.views``."""
    task = mv.task
    index = {name: k for k, name in enumerate(mv.view_names)}
    dims = {name: mv.view_dims[index[name]] for name in cfg.views}
    for name in cfg.views:
        feats = mv.user_views[index[name]]
        if feats.shape[0] != task.num_users or not np.isfinite(feats).all():
            raise ConfigError(f"view {name}: features must be one finite row per user, got "
                              f"shape {feats.shape}")
    parts = {s: items_by_user(getattr(task, s), task.num_users)
             for s in ("train", "valid", "test")}
    # Devices: users with training positives; a cold-start run adds the held-out users (view
    # features, no interactions), who are evaluated but never sampled for training.
    devices = [u for u in range(task.num_users) if len(parts["train"][u])]
    server = FLMVDSSMServer(cfg, mv.item_features.shape[1], dims, len(devices))
    device_logic = DeviceLogic(cfg, server.upload_size, task.num_items, len(devices))
    view_logic = ViewLogic(cfg, mv.item_features, dims, new_items(mv))
    if cfg.cold_start != "none":
        server.trainable = list(devices)
        devices = [u for u in range(task.num_users)
                   if any(len(parts[s][u]) for s in ("train", "valid", "test"))]
    parties = [Party(u, CLIENT, device_logic, DeviceData(parts["train"][u], parts["valid"][u],
                                                         parts["test"][u])) for u in devices]
    # A view is an app on its device: co-located with it (a deployment runs it there).
    parties += [Party(view_id(u, name), VIEW, view_logic,
                      ViewData(mv.user_views[index[name]][u].copy(), parts["train"][u]), host=u)
                for u in devices for name in cfg.views]
    facts = {"item_dim": int(mv.item_features.shape[1]), "view_dims": dims}
    return FederatedJob(server=server, parties=parties, public_facts=facts)


def build_job_from_metadata(cfg: FLMVDSSMConfig, dataset: Dataset) -> FederatedJob:
    """The server's job on a deployment (a metadata-only ``dataset``): the server from the public
    facts a device's node reported (the width of the public catalogue's item features, each
    view's width) and the devices, one per client the nodes host, without data. The views hold
    data of their devices only: they are not declared here (their nodes build them). On the
    probe (no facts) the widths are placeholders: it is asked only for the job's roles."""
    facts = deployment_facts("fl-mv-dssm", cfg, dataset)
    dims = {name: int(facts.get("view_dims", {}).get(name, 1)) for name in cfg.views}
    devices = sorted({int(u) for u in dataset.train.users})
    server = FLMVDSSMServer(cfg, int(facts.get("item_dim", 1)), dims, len(devices))
    logic = DeviceLogic(cfg, server.upload_size, dataset.num_items, len(devices))
    return FederatedJob(server=server, parties=[Party(u, CLIENT, logic) for u in devices])


def build_fl_mv_dssm_job(cfg: FLMVDSSMConfig, dataset: Dataset,
                         device: torch.device) -> FederatedJob:
    if is_metadata_only(dataset):
        return build_job_from_metadata(cfg, dataset)
    return build_job_from_multiview(cfg, multiview_of(cfg, dataset))


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FLMVDSSMConfig,
    build_job=build_fl_mv_dssm_job,
    contract=Contract(
        settings={"widths": (8, 4), "clients_per_round": 8, "eval_devices": 12,
                  "local_epochs": 1, "client_batch": 50, "secagg_clip": 8.0},
        dp_settings={"dp": "distributed", "dp_noise_multiplier": 1.0, "clients_per_round": 20},
        boundary_tolerance=1e-5,
        boundary_tolerance_reason="the simulator trains a cohort's views in one stack ordered "
        "by batch count and padded to the longest batch: another view's positives change the "
        "order and the padding, and float32 reductions round differently (observed 6e-8 on "
        "item changes of up to 1.1, DP settings, round 2)",
        flower_tolerance=1e-6,
        flower_tolerance_reason="a SuperNode trains its share of the cohort's views in one "
        "stack padded to that share's widest batch, the simulator the whole cohort's: float32 "
        "reductions round differently (observed ~1e-9 relative)",
    ),
)

__all__ = ["SPEC", "DeviceLogic", "FLMVDSSMConfig", "FLMVDSSMServer", "ViewLogic",
           "build_fl_mv_dssm_job", "build_job_from_multiview",
           "local_secure_aggregate", "multiview_of", "reuse_multiviews", "training_accountant"]
