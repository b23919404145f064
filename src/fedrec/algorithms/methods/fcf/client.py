"""FCF's client (:mod:`fedrec.algorithms.methods.fcf`): the local step of
:mod:`fedrec.algorithms.item_gradient`, its upload plain or through secure aggregation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.item_gradient import LocalMF
from fedrec.algorithms.methods.fcf.config import FCFConfig
from fedrec.algorithms.methods.fcf.steps import EVALUATE, TRAIN
from fedrec.core.codec import Payload
from fedrec.data.types import Dataset
from fedrec.federation.aggregation import sum_rows
from fedrec.federation.dp_sum import DPSumClient, dp_on
from fedrec.federation.runtime import PartyContext, PartyLogic
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import SecureSumSteps
from fedrec.federation.steps import step


def upload_size(num_items: int, dim: int, explicit: bool) -> int:
    """Length of :meth:`FCFClient.dense_upload`: item factors, then item biases (explicit)."""
    return num_items * (dim + (1 if explicit else 0))


class FCFClient(SecureSumSteps, PartyLogic):
    """A device: its user factor (state) and its own rows (data)."""

    def __init__(self, cfg: FCFConfig, dataset: Dataset) -> None:
        self.cfg = cfg
        self.local = LocalMF(dataset)  # the local step and the client-side evaluation
        self.explicit = self.local.explicit
        self.num_items = self.local.num_items
        self.secure = cfg.sum_client()
        self.dp = (DPSumClient(cfg, dataset.num_users,
                               upload_size(self.num_items, cfg.dim, self.explicit))
                   if dp_on(cfg) else None)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        return self.local.init_state(self.cfg, secret)

    def item_parameters(
        self, payload: Payload, ctx: PartyContext
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The broadcast item factors and (explicit ratings only) item biases, on ``ctx``'s
        device."""
        q = torch.as_tensor(payload["item_factors"], device=ctx.device)
        b_i = torch.as_tensor(payload["item_bias"], device=ctx.device) if self.explicit else None
        return q, b_i

    # Both steps are broadcasts: the item parameters are decoded once for the whole cohort.
    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        q, b_i = self.item_parameters(payload, ctxs[0])
        return self.send(ctxs, self.local.train(self.cfg, ctxs, q, b_i), payload)

    def send(self, ctxs: Sequence[PartyContext], uploads: Sequence[Payload], payload: Payload,
             clip: bool = True) -> list[Payload]:
        """The messages that carry the plaintext ``uploads`` (``{"items", "grad_q"[,
        "grad_b"]}``) in this run's mode: as they are, or dense into the DP aggregate or the
        secure sum (``clip`` False: the DP aggregate's clip skipped, as a malicious client
        may)."""
        if self.dp is not None:  # one clipped (and noised) vector per client
            return [self.dp.upload(c, self.dense_upload(o), payload, clip=clip)
                    for c, o in zip(ctxs, uploads, strict=True)]
        if self.cfg.secure_aggregation:  # the step ends with the keys, not the upload
            return [self.secure.advertise(c, self.dense_upload(o), payload)
                    for c, o in zip(ctxs, uploads, strict=True)]
        return list(uploads)

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        q, b_i = self.item_parameters(payload, ctxs[0])
        return self.local.evaluate(self.cfg, ctxs, q, b_i, payload)

    def dense_upload(self, msg: Payload) -> np.ndarray:
        """A client's sparse upload as one dense float64 vector over all items: the item-factor
        gradient (``num_items x dim``, row-major) then, for explicit ratings, the item-bias
        gradient. Its length is the same for every client."""
        items = msg["items"].cpu()
        names = ("grad_q", "grad_b") if self.explicit else ("grad_q",)
        return np.concatenate([
            sum_rows(items, msg[name].detach().cpu().double(), self.num_items).numpy().ravel()
            for name in names])
