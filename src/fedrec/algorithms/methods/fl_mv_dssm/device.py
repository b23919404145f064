"""A device of FL-MV-DSSM (:mod:`fedrec.algorithms.methods.fl_mv_dssm`): the local framework that
aggregates its views' messages. It holds the device's interactions (for evaluation) and no
view's features or model; what it knows of a view is what that view sent it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.algorithms.methods.fl_mv_dssm.steps import (
    EVALUATE,
    LOCAL_AGGREGATE,
    VIEW_PREDICT,
    VIEW_TRAIN,
)
from fedrec.algorithms.methods.fl_mv_dssm.view import view_id
from fedrec.algorithms.mf_common import requested_split
from fedrec.algorithms.multiview_common import device_ranking_metrics
from fedrec.core.codec import Payload
from fedrec.errors import ProtocolError
from fedrec.federation.dp_sum import DPSumClient, dp_on
from fedrec.federation.message import Message
from fedrec.federation.runtime import PartyContext, PartyLogic
from fedrec.federation.secure_sum import (
    REQUEST_KEY,
    SecureSumSteps,
)
from fedrec.federation.steps import step
from fedrec.privacy.clipping import clip_l2


@dataclass(frozen=True)
class DeviceData:
    """The device's positives of each split (``train``, ``valid``, ``test``)."""

    train_items: np.ndarray
    valid_items: np.ndarray
    test_items: np.ndarray


def local_secure_aggregate(updates: Sequence[torch.Tensor], sample_size: int, clip: float,
                           noise_multiplier: float, generator: torch.Generator) -> torch.Tensor:
    """Equation 7: ``(sum_{i in B} clip(g_i) + N(0, sigma^2 C^2)) / |B|`` over a uniform sample
    ``B`` of ``sample_size`` of the views' item updates, each clipped to L2 norm ``clip``.

    The noise is drawn here, by the device, once for the sum. What the sum protects against is
    a view (or whoever sees this result) that knows its own update and subtracts it: what is
    left of any other view ``j`` is ``clip(g_j)`` plus the whole noise, a Gaussian mechanism of
    sensitivity ``C`` (one view's clipped update in or out) with multiplier ``sigma``. Noise
    drawn per view by the views themselves would let a malicious view cancel its own; noise per
    view drawn here would give every other view the same protection at ``|B|`` times the
    variance. ``noise_multiplier`` 0 adds nothing (no guarantee)."""
    order = torch.randperm(len(updates), generator=generator)[:sample_size]
    total = torch.zeros_like(updates[0], dtype=torch.float64)
    for i in sorted(order.tolist()):
        total += clip_l2(updates[i].double(), clip)
    if noise_multiplier > 0:
        noise = torch.randn(total.shape, generator=generator, dtype=torch.float64)
        total += noise_multiplier * clip * noise
    return total / sample_size


class DeviceLogic(SecureSumSteps, PartyLogic):
    """Every device's code: the local secure aggregate and its upload (a secure or plain sum
    across devices, or under ``dp`` the DP aggregate's: the whole vector clipped to
    ``dp_clip``, one per device and round, over ``num_devices`` devices that train), and the
    federated evaluation of Algorithm 2's ranking."""

    def __init__(self, cfg: FLMVDSSMConfig, upload_size: int, num_items: int,
                 num_devices: int = 0) -> None:
        self.cfg = cfg
        self.upload_size = upload_size
        self.num_items = num_items
        self.secure = cfg.sum_client()
        self.dp = DPSumClient(cfg, num_devices, upload_size) if dp_on(cfg) else None

    def _from_views(self, ctx: PartyContext, step_name: str) -> dict[str, Payload]:
        """The messages this device's views sent it in ``step_name`` of this round, by view
        name (earlier ones, left by a device that dropped out before reading them, are
        ignored); a message from anyone else, or a view missing, is a protocol error."""
        got: dict[str, Payload] = {}
        mine = {view_id(int(ctx.party), n): n for n in self.cfg.views}
        for msg in ctx.inbox:
            if not isinstance(msg, Message) or msg.sender not in mine:
                raise ProtocolError(f"device {ctx.party}: unexpected message from "
                                    f"{getattr(msg, 'sender', msg)!r} in {step_name}")
            if msg.step == step_name and msg.round == ctx.round:
                got[mine[msg.sender]] = msg.payload
        missing = [n for n in self.cfg.views if n not in got]
        if missing:
            raise ProtocolError(f"device {ctx.party}: no {step_name} message from view(s) "
                                f"{', '.join(missing)}")
        return got

    @step(LOCAL_AGGREGATE)
    def local_aggregate(self, ctx: PartyContext, payload: Payload) -> Payload:
        """Algorithm 1, lines 6-11 on the device: the local secure aggregate of the item
        updates, then (``aggregate_user_sub_model``) each view's user update beside it, as one
        vector into the sum across devices (under ``dp``: the device's one clipped, and for
        ``distributed`` noised, vector of the DP aggregate; the paper's view-level noise is in
        it before, whatever ``dp``)."""
        cfg = self.cfg
        if REQUEST_KEY not in payload:
            raise ProtocolError(f"device {ctx.party}: request names no cohort size")
        got = self._from_views(ctx, VIEW_TRAIN)
        items = [torch.as_tensor(got[n]["item"]).float() for n in cfg.views]
        parts = [local_secure_aggregate(items, cfg.sampled_views, cfg.clip,
                                        cfg.noise_multiplier, ctx.generator())]
        if cfg.aggregate_user_sub_model:
            parts += [torch.as_tensor(got[n]["user"]).double() for n in cfg.views]
        x = torch.cat(parts).numpy()
        if x.size != self.upload_size:
            raise ProtocolError(f"device {ctx.party}: upload of {x.size} values, expected "
                                f"{self.upload_size}")
        if self.dp is not None:
            return self.dp.upload(ctx, x, payload)
        if cfg.secure_aggregation:
            return self.secure.advertise(ctx, x, payload)
        return self.secure.plain(ctx, x, payload)

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """Algorithm 2 on the device: the sum of its views' (noisy) probabilities ranks every
        item it has not trained on; it reports only its own metrics on the split."""
        split = requested_split(payload)
        k = self.cfg.topk
        out: list[Payload] = []
        for c in ctxs:
            got = self._from_views(c, VIEW_PREDICT)
            scores = sum(torch.as_tensor(got[n]["probs"]).double() for n in self.cfg.views)
            data: DeviceData = c.data
            items = {s: getattr(data, f"{s}_items") for s in ("train", "valid", "test")}
            out.append(device_ranking_metrics(scores, items, split, self.num_items, k))
        return out
