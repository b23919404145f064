"""FED-MVMF's client (:mod:`fedrec.algorithms.methods.fed_mvmf`): one user's interactions (``X``
row),
side information (``Y`` row) and user factor (``U`` row, in its state); it sends only the
gradients of the global factors and its evaluation metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.methods.fed_mvmf.config import FedMVMFConfig
from fedrec.algorithms.methods.fed_mvmf.model import client_loss_and_gradients, user_factor
from fedrec.algorithms.methods.fed_mvmf.steps import EVALUATE, TRAIN
from fedrec.algorithms.mf_common import requested_split
from fedrec.algorithms.multiview_common import device_ranking_metrics
from fedrec.core.codec import Payload
from fedrec.federation.dp_sum import DPSumClient, dp_on
from fedrec.federation.runtime import PartyContext, PartyLogic
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import SecureSumSteps
from fedrec.federation.steps import step


@dataclass(frozen=True)
class MVMFClientData:
    """One user's private data: its positives of each split and its side information row."""

    train_items: np.ndarray
    valid_items: np.ndarray
    test_items: np.ndarray
    features: np.ndarray  # the user's Y row: every user view, concatenated


def upload_size(num_items: int, user_feature_dim: int, dim: int) -> int:
    """Length of a client's dense upload ``[dL_u/dV, dL_u/dA]`` (row-major)."""
    return (num_items + user_feature_dim) * dim


class MVMFClient(SecureSumSteps, PartyLogic):
    """Every client's code: the closed-form user factor and the gradients of ``V`` and ``A``,
    sent in clear or (``secure_aggregation``) as one dense vector into a secure sum, or (``dp``)
    as that vector clipped (and noised) into the DP aggregate over the ``num_clients`` clients
    that train (``user_feature_dim``: the width of ``Y``, which sizes the vector)."""

    def __init__(self, cfg: FedMVMFConfig, num_items: int, num_clients: int = 0,
                 user_feature_dim: int = 0) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.secure = cfg.sum_client()
        self.dp = (DPSumClient(cfg, num_clients, upload_size(num_items, user_feature_dim,
                                                             cfg.dim))
                   if dp_on(cfg) else None)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        return {"u": torch.zeros(self.cfg.dim)}

    def factors(self, payload: Payload) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The broadcast ``V`` and ``A`` and ``V^T V`` (computed once for the cohort)."""
        v = torch.as_tensor(payload["item_factors"]).double()
        a = torch.as_tensor(payload["user_feature_loadings"]).double()
        return v, a, v.T @ v

    def solve(self, ctx: PartyContext, v: torch.Tensor, a: torch.Tensor,
              gram_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """This client's ``(u, positives, y)``: ``u`` minimises its loss at ``V``, ``A``."""
        cfg = self.cfg
        data: MVMFClientData = ctx.data
        positives = torch.from_numpy(np.asarray(data.train_items, dtype=np.int64))
        y = torch.from_numpy(np.asarray(data.features)).double()
        u = user_factor(v, a, gram_v, positives, y, cfg.alpha, cfg.reg, cfg.user_view_weight)
        return u, positives, y

    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        cfg = self.cfg
        v, a, gram_v = self.factors(payload)
        out: list[Payload] = []
        for c in ctxs:  # each client alone: its factor and gradients depend on its data only
            u, positives, y = self.solve(c, v, a, gram_v)
            loss, grad_v, grad_a = client_loss_and_gradients(
                u, v, a, positives, y, cfg.alpha, cfg.reg, cfg.user_view_weight)
            c.state["u"] = u.float()
            if self.dp is None and not cfg.secure_aggregation:
                out.append({"grad_v": grad_v.float(), "grad_a": grad_a.float(), "loss": loss})
                continue
            # One dense vector into a sum; the loss stays here. A secure sum's step ends with
            # the keys; the DP aggregate's with the clipped (and noised) vector or the keys.
            dense = torch.cat([grad_v.ravel(), grad_a.ravel()]).numpy()
            out.append(self.dp.upload(c, dense, payload) if self.dp is not None
                       else self.secure.advertise(c, dense, payload))
        return out

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """Federated evaluation: each client fits its ``u`` to the current ``V``, ``A`` (as in
        training, nothing sent), scores every item with ``V u`` and reports only its metrics."""
        split = requested_split(payload)
        v, a, gram_v = self.factors(payload)
        out: list[Payload] = []
        for c in ctxs:
            u, _, _ = self.solve(c, v, a, gram_v)
            data: MVMFClientData = c.data
            items = {s: getattr(data, f"{s}_items") for s in ("train", "valid", "test")}
            out.append(device_ranking_metrics(v @ u, items, split, self.num_items,
                                              self.cfg.topk))
        return out
