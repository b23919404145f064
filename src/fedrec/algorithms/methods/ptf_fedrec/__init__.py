"""PTF-FedRec: a parameter transmission-free federated recommender (Yuan et al., ICDE 2024).

No model parameter ever crosses the network: the server's graph model (NGCF or LightGCN) stays on
the server, each client's NeuMF stays on the device, and the parties exchange only
``{"items": int64[n], "scores": float32[n]}`` payloads. One round:

1. ``train`` (server -> selected clients, empty payload): each client trains its NeuMF on its
   positives, its fixed negatives and last round's soft labels
   (:class:`~fedrec.algorithms.ncf_common.NeuMFCohort`), then uploads scores on a subset of its
   trained items chosen and perturbed by ``defense`` (default ``sampling+swapping``), sorted by
   item id (:class:`~fedrec.algorithms.methods.ptf_fedrec.client.PTFClient`).
2. The server keeps every client's latest upload, builds the user-item graph weighted by the
   uploaded scores and trains its hidden model on this round's uploads as soft labels.
3. ``disperse`` (server -> clients): ``alpha`` items per client with the server's scores,
   confident and hard items (``dispersal`` selects the paper's ablations).

Guarantee: with ``upload_dp: gaussian``, user-level (ε, δ)-DP of all of a client's uploads
against the server: each upload is the client model's scores on a uniform random item sample
plus Gaussian noise, composed over its uploads (stated and accounted in
:mod:`~fedrec.algorithms.methods.ptf_fedrec.upload_dp`; it replaces ``defense``, which must be
``none``). Otherwise none formal. Every client draw is a counter-based function of the client's
secret key (never of the public seed, which would let the server replay it). In every case the
privacy report's measured figure is the cross-upload attack's F1
(:class:`~fedrec.attacks.cross_upload.CrossUploadAttack`: the server keeps all of a client's
uploads and discounts the items it dispersed to it), with the single-upload top-guess F1 beside
it. Evaluation ranks the hidden model with the experimenter's instruments
(:func:`ptf_instruments`) and each client's own NeuMF (under ``upload_dp`` its replies go to the
experimenter, never the server).

Malicious clients (:mod:`fedrec.attacks.poisoning`, the ``poisoning`` options): the data
attacks run this client's code on fake profiles; the model attacks upload crafted predictions
(:mod:`~fedrec.algorithms.methods.ptf_fedrec.poisoning`: the targets and popular items at score
1, or inverted scores). The targets' exposure ``ER@K`` is measured where PTF-FedRec recommends,
by each benign client's own NeuMF after the dispersals; ``hidden_ER@K`` is the server's hidden
model's. The server clamps every score to [0, 1] and, with ``score_defense: item_trimmed``,
drops each item's extreme scores of the round before training
(:mod:`~fedrec.algorithms.methods.ptf_fedrec.robust`, which states what that resists and what
not).

Design notes, defaults, costs and where the code follows the authors' code rather than the
paper: ``docs/ptf-fedrec.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.ptf_fedrec.client import PTFClient, swap_top_scores
from fedrec.algorithms.methods.ptf_fedrec.config import DEFENSES, DISPERSALS, PTFFedRecConfig
from fedrec.algorithms.methods.ptf_fedrec.meta import METHOD
from fedrec.algorithms.methods.ptf_fedrec.poisoning import ptf_predictions
from fedrec.algorithms.methods.ptf_fedrec.server import PTFServer
from fedrec.algorithms.mf_common import SplitRanking
from fedrec.algorithms.ncf_common import implicit_split
from fedrec.attacks.cross_upload import CrossUploadAttack
from fedrec.attacks.top_guess import TopGuessAttack
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset
from fedrec.federation.runtime import declare_parties


def ptf_instruments(cfg: PTFFedRecConfig, dataset: Dataset) -> dict[str, Any]:
    """The experimenter's instruments (:attr:`~fedrec.algorithms.base.AlgorithmSpec.instruments`)
    built from the ratings: ``score_oracle`` (a :class:`SplitRanking` of the split, ranking the
    hidden model) and, with ``attack``, the single-upload top-guess ``attack`` and the
    ``cross_attack`` over all of a client's uploads, each client's positives the truth they are
    scored against. None is read by any protocol step."""
    ds = implicit_split(dataset, cfg)
    out: dict[str, Any] = {}
    if cfg.attack:
        clients = partition_by_user(ds)
        positives = {u: c.train_items for u, c in clients.items()}
        ratio = float(cfg.num_negatives) if cfg.attack_k == "ratio" else None
        out["attack"] = TopGuessAttack(positives, assumed_ratio=ratio, truth=cfg.attack_truth)
        out["cross_attack"] = CrossUploadAttack(positives, assumed_ratio=ratio,
                                                truth=cfg.attack_truth)
    out["score_oracle"] = SplitRanking(ds, (cfg.topk,))
    return out


def build_ptf_fedrec_job(cfg: PTFFedRecConfig, dataset: Dataset,
                         device: torch.device) -> FederatedJob:
    """The job; on a metadata-only dataset (a ServerApp's, which holds no ratings) the server
    has no experimenter's instruments (see :func:`ptf_instruments`)."""
    ds = implicit_split(dataset, cfg)
    server = PTFServer(cfg, ds.num_users, ds.num_items)
    if not dataset.meta.get("metadata_only"):
        server.attach_instruments(ptf_instruments(cfg, dataset))
    return FederatedJob(server, parties=declare_parties(partition_by_user(ds),
                                                        PTFClient(cfg, ds.num_items)))


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=PTFFedRecConfig,
    build_job=build_ptf_fedrec_job,
    instruments=ptf_instruments,
    poisoning=ptf_predictions,
    contract=Contract(
        settings={"local_epochs": 1, "server_epochs": 1},
        boundary_variants=({"upload_dp": "gaussian", "defense": "none", "upload_noise": 1.0},),
        boundary_tolerance=1e-5,
        boundary_tolerance_reason="the simulator trains a cohort's local models in one stack "
        "padded to its widest client: another client's data changes the padding, and float32 "
        "reductions round differently (observed 6e-8)",
        flower_tolerance=1e-6,
        flower_tolerance_reason="a SuperNode trains its share of the cohort in one stack padded "
        "to that share's widest client, the simulator the whole cohort's: float32 reductions "
        "round differently (observed 4e-8 relative on the server loss)",
    ),
)

__all__ = ["DEFENSES", "DISPERSALS", "SPEC", "PTFClient", "PTFFedRecConfig", "PTFServer",
           "build_ptf_fedrec_job", "ptf_instruments", "swap_top_scores"]
