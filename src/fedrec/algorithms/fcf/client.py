"""FCF's client (:mod:`fedrec.algorithms.fcf`): the local step of
:mod:`fedrec.algorithms.item_gradient`, its upload plain or through secure aggregation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.fcf.config import FCFConfig
from fedrec.algorithms.item_gradient import LocalMF
from fedrec.algorithms.mf_common import requested_split
from fedrec.core.codec import Payload
from fedrec.data.types import Dataset
from fedrec.federation.aggregation import sum_rows
from fedrec.federation.runtime import PartyContext, PartyLogic
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import SECAGG_STEPS, SecureSumClient


class FCFClient(PartyLogic):
    """A device: its user factor (state) and its own rows (data)."""

    def __init__(self, cfg: FCFConfig, dataset: Dataset) -> None:
        self.cfg = cfg
        self.local = LocalMF(dataset)  # the local step and the client-side evaluation
        self.explicit = self.local.explicit
        self.num_items = self.local.num_items
        self.secure = SecureSumClient(cfg.secagg_threshold, cfg.secagg_clip, cfg.secagg_bits)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        return self.local.init_state(self.cfg, secret)

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Payload:
        return self.handle_cohort(step, [ctx], [payload])[0]

    def item_parameters(
        self, payload: Payload, ctx: PartyContext
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The broadcast item factors and (explicit ratings only) item biases, on ``ctx``'s
        device."""
        q = torch.as_tensor(payload["item_factors"], device=ctx.device)
        b_i = torch.as_tensor(payload["item_bias"], device=ctx.device) if self.explicit else None
        return q, b_i

    def handle_cohort(
        self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload]
    ) -> list[Payload]:
        if step in SECAGG_STEPS:
            return [self.secure.handle(step, c, p) for c, p in zip(ctxs, payloads, strict=True)]
        if any(p is not payloads[0] for p in payloads):
            raise ValueError("FCF expects the same broadcast for the whole cohort")
        # Decoded once per cohort: every client received the same broadcast.
        q, b_i = self.item_parameters(payloads[0], ctxs[0])
        if step == "train":
            out = self.local.train(self.cfg, ctxs, q, b_i)
            if self.cfg.secure_aggregation:
                return [self.secure.advertise(c, self.dense_upload(o), payloads[0])
                        for c, o in zip(ctxs, out, strict=True)]
            return out
        if step == "evaluate":
            return self.local.evaluate(self.cfg, ctxs, q, b_i, requested_split(payloads[0]))
        raise ValueError(f"FCF clients have no step {step!r}")

    def dense_upload(self, msg: Payload) -> np.ndarray:
        """A client's sparse upload as one dense float64 vector over all items: the item-factor
        gradient (``num_items x dim``, row-major) then, for explicit ratings, the item-bias
        gradient. Its length is the same for every client."""
        items = msg["items"].cpu()
        names = ("grad_q", "grad_b") if self.explicit else ("grad_q",)
        return np.concatenate([
            sum_rows(items, msg[name].detach().cpu().double(), self.num_items).numpy().ravel()
            for name in names])
