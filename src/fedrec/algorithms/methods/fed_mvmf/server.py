"""FED-MVMF's server (:mod:`fedrec.algorithms.methods.fed_mvmf`): the item factors ``V``, the user
feature loadings ``A`` and the item feature loadings ``B``, with the public item side
information ``Z``; one Adam step per round on the estimated gradient of the whole objective."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import RANKING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fed_mvmf.client import upload_size
from fedrec.algorithms.methods.fed_mvmf.config import FedMVMFConfig
from fedrec.algorithms.methods.fed_mvmf.model import (
    item_factors_from_features,
    server_loss_and_gradients,
)
from fedrec.algorithms.methods.fed_mvmf.steps import EVALUATE, TRAIN
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.errors import ConfigError
from fedrec.federation.dp_sum import DPAggregate, dp_on, evaluation_sender, expected_mean
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import Runtime, fixed_subset
from fedrec.federation.secure_sum import (
    receives,
    run_secure_sum,
    secure_sum_report,
    secure_sum_request,
)
from fedrec.models.mf import init_factors
from fedrec.privacy.report import NoGuarantee, PrivacyReport


def evaluated_clients(clients: list[PartyId], count: int, seed: int) -> list[PartyId]:
    """Every client, or (``count`` > 0) a sample of that many drawn from the run's ``seed`` on a
    stream of its own, in ``clients`` order: the same clients at every evaluation."""
    return fixed_subset(clients, count, seed, "fed-mvmf-eval-clients")


class FedMVMFServer(ServerLogic):
    """Holds ``V``, ``A``, ``B`` (initialised from the public seed) and ``Z`` (public).

    Cold start (``cold_start`` other than none): ``trainable`` names the clients with training
    positives, the only ones sampled for training (a new user's client is evaluated only);
    ``new_items`` names the catalogue's new items (public: the catalogue says which items were
    just added), which the evaluation scores with their side-information factors
    (:func:`~fedrec.algorithms.methods.fed_mvmf.model.item_factors_from_features`) instead of their
    ``V`` rows.

    ``dp``: the DP aggregate over the ``num_clients`` clients that train (those of
    ``trainable`` when given), each client's ``[dL_u/dV, dL_u/dA]`` one clipped vector."""

    def __init__(self, cfg: FedMVMFConfig, item_features: np.ndarray, user_feature_dim: int,
                 trainable: list[PartyId] | None = None, new_items: np.ndarray | None = None,
                 num_clients: int = 0) -> None:
        self.cfg = cfg
        self.trainable = trainable
        self.new_items = torch.as_tensor(
            np.asarray(new_items if new_items is not None else [], dtype=np.int64))
        self.z = torch.from_numpy(np.asarray(item_features, dtype=np.float32))
        num_items, item_dim = self.z.shape
        self.v = init_factors(num_items, cfg.dim, torch_generator(cfg.seed, "mvmf-v"))
        self.a = init_factors(user_feature_dim, cfg.dim, torch_generator(cfg.seed, "mvmf-a"))
        self.b = init_factors(item_dim, cfg.dim, torch_generator(cfg.seed, "mvmf-b"))
        for t in (self.v, self.a, self.b):
            t.requires_grad_(True)
        self.opt = torch.optim.Adam([self.v, self.a, self.b], lr=cfg.lr)
        self.dp = None
        if dp_on(cfg):
            if num_clients < 1:
                raise ConfigError(f"dp={cfg.dp} needs at least one client with training data")
            self.dp = DPAggregate(cfg, num_clients, upload_size(num_items, user_feature_dim,
                                                                cfg.dim))

    def _broadcast(self) -> Payload:
        return {"item_factors": self.v.detach(), "user_feature_loadings": self.a.detach()}

    def scoring_factors(self) -> torch.Tensor:
        """``V`` with each new item's row replaced by its side-information factor."""
        v = self.v.detach()
        if len(self.new_items) == 0:
            return v
        v = v.clone()
        v[self.new_items] = item_factors_from_features(
            self.b.detach().double(), self.z[self.new_items].double(), self.cfg.reg,
            self.cfg.item_view_weight).to(v.dtype)
        return v

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        cfg = self.cfg
        # Cold start: a new user's client has nothing to train on (not in trainable).
        n_clients = len(rt.client_ids if self.trainable is None else self.trainable)
        stats: dict[str, float] = {}
        if self.dp is not None:
            # The noised sum over the public expected cohort, scaled to every client's.
            mean_v, mean_a, count = self._dp_mean(rt)
            grad_v, grad_a = n_clients * mean_v, n_clients * mean_a
        else:
            selected = rt.cohort(cfg.clients_per_round, among=self.trainable)
            if cfg.secure_aggregation:
                sum_v, sum_a, count = self._secure_sum(rt, selected)
                stats["dropped_after_keys"] = float(len(selected) - count)
            else:
                replies = rt.updates(rt.broadcast(TRAIN, selected, self._broadcast()), TRAIN,
                                     "if updates diverge, lower lr")
                count = len(replies)
                sum_v = sum(torch.as_tensor(r["grad_v"]).double() for r in replies.values())
                sum_a = sum(torch.as_tensor(r["grad_a"]).double() for r in replies.values())
                stats["client_loss"] = n_clients / count * sum(float(r["loss"])
                                                               for r in replies.values())
            # The cohort's sum, scaled to every client's: an unbiased estimate of sum_u dL_u.
            scale = n_clients / count
            grad_v, grad_a = scale * sum_v, scale * sum_a
        with torch.no_grad():
            server_loss, s_v, s_a, s_b = server_loss_and_gradients(
                self.v, self.a, self.b, self.z, cfg.reg, cfg.item_view_weight)
        self.opt.zero_grad()
        self.v.grad = (grad_v + s_v.double()).float()
        self.a.grad = (grad_a + s_a.double()).float()
        self.b.grad = s_b.clone()
        self.opt.step()
        if "client_loss" in stats:  # (a secure sum carries no loss: the clients keep theirs)
            stats["loss"] = stats.pop("client_loss") + server_loss
        return {"clients": float(count), **stats}

    def _split(self, total: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """A dense upload's layout (:func:`~fedrec.algorithms.methods.fed_mvmf.client.
        upload_size`) back into its ``V`` and ``A`` parts."""
        flat, v_size = torch.from_numpy(total), self.v.numel()
        return flat[:v_size].reshape(self.v.shape), flat[v_size:].reshape(self.a.shape)

    def _secure_sum(self, rt: Runtime, selected: list[PartyId]
                    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The cohort's summed ``V`` and ``A`` gradients through the secure sum (the server
        sees keys, ciphertexts, masked vectors and this sum) and how many clients are in it."""
        config = self.cfg.sum_config(self.v.numel() + self.a.numel(), len(selected))
        adverts = rt.broadcast(TRAIN, selected,
                               {**self._broadcast(), **secure_sum_request(len(selected))})
        result = run_secure_sum(rt, adverts, config, step=TRAIN)
        return (*self._split(result.total), len(result.survivors))

    def _dp_mean(self, rt: Runtime) -> tuple[torch.Tensor, torch.Tensor, int]:
        """One round of the DP aggregate (:mod:`fedrec.federation.dp_sum`): a Poisson cohort of
        the clients that train, the noised sum of their clipped dense gradients divided by the
        public expected cohort size, and how many clients are in it."""
        assert self.dp is not None
        released = self.dp.round(rt, TRAIN, self._broadcast(), among=self.trainable)
        return (*self._split(expected_mean(released.total, self.dp.plan)),
                len(released.survivors))

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        clients = evaluated_clients(list(rt.client_ids), self.cfg.eval_devices,
                                    self.cfg.seed)
        model = {"item_factors": self.scoring_factors(),
                 "user_feature_loadings": self.a.detach()}
        replies = rt.broadcast(EVALUATE, clients, eval_request(model, split),
                               sender=evaluation_sender(self.cfg))
        return reduce_client_metrics(replies.values(), explicit=False)

    def receives(self) -> dict[str, str]:
        vector = "the gradients of V and A from its interactions and side information"
        if self.dp is not None:
            return self.dp.receives(TRAIN, vector)
        if self.cfg.secure_aggregation:
            return {**receives(TRAIN, vector), EVALUATE: RANKING_EVALUATION}
        return {TRAIN: f"{vector}, each cohort client's own, in clear, with its loss",
                EVALUATE: RANKING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        """No guarantee: the raw data and ``U`` stay on the clients; the gradients go in clear,
        or (``secure_aggregation``) only as the cohort's sum (no formal bound on what a sum
        reveals). With ``dp``, the DP aggregate's user-level report."""
        cfg = self.cfg
        if self.dp is not None:
            return self.dp.report()
        if cfg.secure_aggregation:
            return secure_sum_report(
                cfg, "the server learns each round's summed V and A gradients of the surviving "
                     "clients and who survived; no individual upload")
        return PrivacyReport((NoGuarantee(
            protection="none beyond federation: X, Y and U rows stay on their clients; each "
                       "client's gradients of V and A are sent in clear",
            leakage="each upload's V gradient row j is 2 c_j (u.v_j - p_j) u: every row is a "
                    "multiple of u (its direction is exposed) and positives differ in weight "
                    "and target; its A gradient 2 w_Y (A u - y) u^T ties y to u",
            details={"secure_aggregation": False}),))

    def state_dict(self) -> dict[str, Any]:
        state = {"v": self.v.detach().clone(), "a": self.a.detach().clone(),
                 "b": self.b.detach().clone(), "opt": copy.deepcopy(self.opt.state_dict())}
        if self.dp is not None:
            state["dp"] = self.dp.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        with torch.no_grad():
            self.v.copy_(state["v"])
            self.a.copy_(state["a"])
            self.b.copy_(state["b"])
        self.opt.load_state_dict(state["opt"])
        if self.dp is not None:
            self.dp.load_state_dict(state["dp"])
