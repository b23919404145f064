"""A view of a device (:mod:`fedrec.algorithms.methods.fl_mv_dssm`): an app with its own user
features
and user sub-model. It reaches only its own data (:class:`ViewData`), its own state and the
public item features; what it computes leaves it only as a message to its own device."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.methods.fl_mv_dssm.cohort import train_views, view_draws
from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.algorithms.methods.fl_mv_dssm.steps import VIEW_PREDICT, VIEW_TRAIN
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.errors import ProtocolError
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import PartyContext, PartyLogic, Routed
from fedrec.federation.secrets import PartySecret
from fedrec.federation.steps import step
from fedrec.models import dssm, dssm_stacked

#: The role of the views' parties; a view's id is ``"view/<device>/<view name>"``.
VIEW = "view"
#: Sensitivity (L2) of a probability vector: two distributions differ by at most sqrt(2).
PROBABILITY_SENSITIVITY = 2.0 ** 0.5


def view_id(device: int, name: str) -> str:
    return f"{VIEW}/{device}/{name}"


def device_of(view: PartyId) -> int:
    """The device a view id belongs to."""
    parts = str(view).split("/")
    if len(parts) != 3 or parts[0] != VIEW:
        raise ProtocolError(f"{view!r} is not a view id")
    return int(parts[1])


def name_of(view: PartyId) -> str:
    return str(view).split("/")[2]


@dataclass(frozen=True)
class ViewData:
    """What one view holds: its user's feature row (this view's only) and the device's training
    positives ``y`` (the behaviour data every view of the device trains on, Algorithm 1)."""

    features: np.ndarray
    train_items: np.ndarray


def init_user_model(cfg: FLMVDSSMConfig, name: str, dim: int) -> dssm.Params:
    """The initial user sub-model of view ``name`` (public seed): the server's, and each
    SEMI-FL-MV-DSSM view's starting point."""
    return dssm.init_tower(dim, cfg.widths, torch_generator(cfg.seed, "fl-mv-dssm-user", name))


class ViewLogic(PartyLogic):
    """Every view's code: local training (Algorithm 1, lines 2-5) and scoring (Algorithm 2)."""

    def __init__(self, cfg: FLMVDSSMConfig, item_features: np.ndarray,
                 view_dims: dict[str, int], new_items: np.ndarray | None = None) -> None:
        self.cfg = cfg
        #: A cold-start run's new items (public: the catalogue lists them), kept out of the
        #: training negatives (:func:`~fedrec.algorithms.methods.fl_mv_dssm.cohort.view_draws`).
        self.new_items = new_items
        self.items = torch.from_numpy(np.ascontiguousarray(item_features, dtype=np.float32))
        self.item_shapes = dssm.param_shapes(self.items.shape[1], cfg.widths)
        self.user_shapes = {n: dssm.param_shapes(d, cfg.widths) for n, d in view_dims.items()}
        self.num_items = int(self.items.shape[0])
        self.sparse_items = dssm_stacked.SparseRows.of(np.asarray(item_features,
                                                                  dtype=np.float32))

    def init_state(self, party: PartyId, data: Any, secret: PartySecret) -> dict[str, Any]:
        if self.cfg.aggregate_user_sub_model:
            return {}
        name = name_of(party)
        dim = self.user_shapes[name]["w1"][0]
        return {"user": init_user_model(self.cfg, name, dim)}

    def _user_model(self, ctx: PartyContext, payload: Payload) -> dssm.Params:
        name = name_of(ctx.party)
        if self.cfg.aggregate_user_sub_model:
            vec = torch.as_tensor(payload[f"user/{name}"]).float()
            return dssm.unflatten(vec, self.user_shapes[name])
        return ctx.state["user"]

    def _item_model(self, payload: Payload) -> dssm.Params:
        return dssm.unflatten(torch.as_tensor(payload["item"]).float(), self.item_shapes)

    @step(VIEW_TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Routed]:
        """Each view trains copies of the item sub-model and its user sub-model on the device's
        positives and its own features, and sends its device the changes (vectorised over the
        cohort: :mod:`fedrec.algorithms.methods.fl_mv_dssm.cohort`)."""
        cfg = self.cfg
        item_start = self._item_model(payload)
        names = [name_of(c.party) for c in ctxs]
        user_starts = [self._user_model(c, payload) for c in ctxs]
        draws = [view_draws(cfg, c.data.train_items, self.num_items, c.generator(),
                            self.new_items) for c in ctxs]
        trained = train_views(cfg, self.sparse_items, item_start, user_starts, names,
                              [c.data.features for c in ctxs], draws)
        with torch.no_grad():
            item_names = list(self.item_shapes)
            item_delta = (dssm_stacked.flatten(trained.item, item_names)
                          - dssm.flatten(item_start, item_names))
            user_of: dict[int, dssm.Params] = {}
            for name, rows in trained.user_rows.items():
                for r, k in enumerate(rows):
                    user_of[k] = {p: v[r].clone() for p, v in trained.user[name].items()}
        out = []
        for k, c in enumerate(ctxs):
            msg: Payload = {"item": item_delta[k].clone(), "steps": trained.steps[k]}
            if cfg.aggregate_user_sub_model:
                shapes = self.user_shapes[names[k]]
                msg["user"] = (dssm.flatten(user_of[k], shapes)
                               - dssm.flatten(user_starts[k], shapes))
            else:
                c.state["user"] = user_of[k]  # SEMI: the view's own model stays with it
            out.append(Routed({device_of(c.party): msg}))
        return out

    @step(VIEW_PREDICT, cohort=True, broadcast=True)
    def predict(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Routed]:
        """Algorithm 2, per view: P(item | this view's user vector) over every item (softmax of
        gamma times cosine), plus this view's Gaussian noise, sent to its device."""
        with torch.no_grad():
            y_items = dssm.tower(self._item_model(payload), self.items)  # the same for all
            out = []
            for c in ctxs:
                data: ViewData = c.data
                x_user = torch.from_numpy(np.asarray(data.features, dtype=np.float32))
                y_user = dssm.tower(self._user_model(c, payload), x_user)
                probs = torch.softmax(self.cfg.gamma * dssm.relevance(y_user, y_items), dim=0)
                if self.cfg.predict_noise > 0:
                    std = self.cfg.predict_noise * PROBABILITY_SENSITIVITY
                    probs = probs + std * torch.randn(probs.shape, generator=c.generator())
                out.append(Routed({device_of(c.party): {"probs": probs}}))
        return out
