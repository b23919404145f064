"""FL-MV-DSSM's server (:mod:`fedrec.algorithms.methods.fl_mv_dssm`): the global item sub-model and
(for
FL-MV-DSSM) the global user sub-models, updated by Adam from the devices' summed uploads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import RANKING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.algorithms.methods.fl_mv_dssm.steps import (
    EVALUATE,
    LOCAL_AGGREGATE,
    VIEW_PREDICT,
    VIEW_TRAIN,
)
from fedrec.algorithms.methods.fl_mv_dssm.view import init_user_model, view_id
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.errors import ConfigError
from fedrec.federation.dp_sum import DPAggregate, dp_on, evaluation_sender, expected_mean
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import Runtime, fixed_subset
from fedrec.federation.secure_sum import (
    protection_text,
    receives,
    secure_sum_request,
    sum_cohort,
)
from fedrec.models import dssm
from fedrec.privacy.accounting import PrivacyAccountant
from fedrec.privacy.mechanisms import GaussianMechanism
from fedrec.privacy.report import Guarantee, NoGuarantee, PrivacyReport

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-7  # Keras's default (the paper ran TensorFlow Federated)


def model_layout(cfg: FLMVDSSMConfig, item_dim: int,
                 view_dims: Mapping[str, int]) -> dict[str, int]:
    """The global vectors, in upload order, and their sizes: ``item`` and, for FL-MV-DSSM,
    ``user/<view>`` for each view."""
    layout = {"item": dssm.num_params(dssm.param_shapes(item_dim, cfg.widths))}
    if cfg.aggregate_user_sub_model:
        for name in cfg.views:
            layout[f"user/{name}"] = dssm.num_params(dssm.param_shapes(view_dims[name],
                                                                       cfg.widths))
    return layout


class FLMVDSSMServer(ServerLogic):
    """Holds the global sub-models as flat float32 vectors and Adam's moments; under ``dp``, the
    DP aggregate over the ``num_devices`` devices that train (cohorts are Poisson samples of
    them)."""

    def __init__(self, cfg: FLMVDSSMConfig, item_dim: int, view_dims: Mapping[str, int],
                 num_devices: int = 0) -> None:
        self.cfg = cfg
        self.layout = model_layout(cfg, item_dim, view_dims)
        shapes = dssm.param_shapes(item_dim, cfg.widths)
        # The initial models come from the public seed (the server provides them, Algorithm 1).
        item = dssm.init_tower(item_dim, cfg.widths, torch_generator(cfg.seed, "fl-mv-dssm-item"))
        self.params: dict[str, torch.Tensor] = {"item": dssm.flatten(item, list(shapes))}
        if cfg.aggregate_user_sub_model:
            for name in cfg.views:
                user = init_user_model(cfg, name, view_dims[name])
                self.params[f"user/{name}"] = dssm.flatten(user, list(user))
        self.m = {k: torch.zeros_like(v, dtype=torch.float64) for k, v in self.params.items()}
        self.v = {k: torch.zeros_like(v, dtype=torch.float64) for k, v in self.params.items()}
        self.steps = 0
        self.participations: Counter[PartyId] = Counter()
        self.evaluations = 0
        #: The devices training cohorts are drawn from when not all are (cold start); None: all.
        self.trainable: list[int] | None = None
        if dp_on(cfg) and num_devices < 1:
            raise ConfigError(f"dp={cfg.dp} needs at least one device with training data")
        self.dp = DPAggregate(cfg, num_devices, self.upload_size) if dp_on(cfg) else None

    @property
    def upload_size(self) -> int:
        return sum(self.layout.values())

    def model(self) -> Payload:
        return dict(self.params)

    def sum_uploads(self, rt: Runtime, replies: Mapping[PartyId, Payload],
                    cohort: int) -> tuple[np.ndarray, int]:
        """The sum of the devices' uploads (their replies to ``local_aggregate``) and how many
        are in it: the secure sum, or the plain sum of the same fixed-point encodings."""
        cfg = self.cfg
        size = self.upload_size
        sa = cfg.sum_config(size, cohort)
        return sum_cohort(rt, replies, sa, secure=cfg.secure_aggregation, step=LOCAL_AGGREGATE)

    def view_ids(self, devices: list[PartyId]) -> list[str]:
        return [view_id(int(d), n) for d in devices for n in self.cfg.views]

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        if self.dp is not None:
            return self._dp_round(rt)
        cfg = self.cfg
        # Cold start: the held-out users' devices have nothing to train on (not in trainable).
        devices = rt.cohort(cfg.clients_per_round, among=self.trainable)
        rt.broadcast(VIEW_TRAIN, self.view_ids(devices), self.model())
        replies = rt.broadcast(LOCAL_AGGREGATE, devices, secure_sum_request(len(devices)))
        self.participations.update(replies.keys())
        total, count = self.sum_uploads(rt, replies, len(devices))
        mean = torch.from_numpy(total / max(count, 1))
        self.adam_step(mean)
        return {"clients": float(count), "update_norm": float(mean.norm())}

    def _dp_round(self, rt: Runtime) -> dict[str, float]:
        """One round through the DP aggregate (:mod:`fedrec.federation.dp_sum`): a Poisson
        cohort of the devices that train, each device's whole upload (its views' item and user
        changes) one clipped vector, the noised sum divided by the public expected cohort."""
        assert self.dp is not None
        devices = self.dp.cohort(rt, among=self.trainable)
        rt.broadcast(VIEW_TRAIN, self.view_ids(devices), self.model())
        released = self.dp.round(rt, LOCAL_AGGREGATE, {}, cohort=devices)
        self.participations.update(released.replied)  # their views released to their device
        mean = torch.from_numpy(expected_mean(released.total, self.dp.plan))
        self.adam_step(mean)
        return {"clients": float(len(released.survivors)), "update_norm": float(mean.norm())}

    def adam_step(self, mean_update: torch.Tensor) -> None:
        """Adam (``server_lr``) with the negated mean update as the gradient, per vector."""
        self.steps += 1
        b1, b2 = ADAM_BETAS
        at = 0
        for name, size in self.layout.items():
            grad = -mean_update[at: at + size]
            at += size
            self.m[name].mul_(b1).add_(grad, alpha=1 - b1)
            self.v[name].mul_(b2).addcmul_(grad, grad, value=1 - b2)
            m_hat = self.m[name] / (1 - b1 ** self.steps)
            v_hat = self.v[name] / (1 - b2 ** self.steps)
            step = self.cfg.server_lr * m_hat / (v_hat.sqrt() + ADAM_EPS)
            self.params[name] = (self.params[name].double() - step).float()

    def evaluated_devices(self, rt: Runtime) -> list[PartyId]:
        """Every device, or (``eval_devices``) a sample of that many drawn from the run's seed on
        a stream of its own (the training cohorts' draws are untouched), in ``client_ids``
        order: the same devices at every evaluation, on every engine."""
        return fixed_subset(rt.client_ids, self.cfg.eval_devices, self.cfg.seed,
                            "fl-mv-dssm-eval-devices")

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        devices = self.evaluated_devices(rt)
        rt.broadcast(VIEW_PREDICT, self.view_ids(devices), self.model())
        self.evaluations += 1
        replies = rt.broadcast(EVALUATE, devices, eval_request({}, split),
                               sender=evaluation_sender(self.cfg))
        return reduce_client_metrics(replies.values(), explicit=False)

    def state_dict(self) -> dict[str, Any]:
        state = {"params": {k: v.clone() for k, v in self.params.items()},
                 "m": {k: v.clone() for k, v in self.m.items()},
                 "v": {k: v.clone() for k, v in self.v.items()}, "steps": self.steps,
                 "participations": {str(k): v for k, v in self.participations.items()},
                 "evaluations": self.evaluations}
        if self.dp is not None:
            state["dp"] = self.dp.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.params = {k: v.clone() for k, v in state["params"].items()}
        self.m = {k: v.clone() for k, v in state["m"].items()}
        self.v = {k: v.clone() for k, v in state["v"].items()}
        self.steps = int(state["steps"])
        self.participations = Counter({int(k): int(v)
                                       for k, v in state["participations"].items()})
        self.evaluations = int(state["evaluations"])
        if self.dp is not None:
            self.dp.load_state_dict(state["dp"])

    # -- privacy ------------------------------------------------------------------------------
    def releases(self) -> tuple[tuple[float, int] | None, tuple[float, int] | None]:
        """The worst view's ``(noise multiplier, count)`` of Gaussian releases: item updates
        (one per round its device took part in) and prediction vectors (one per evaluation);
        None where that release carries no noise."""
        cfg = self.cfg
        train = predict = None
        if cfg.noise_multiplier > 0:
            train = (cfg.noise_multiplier, max(self.participations.values(), default=0))
        if cfg.predict_noise > 0:
            predict = (cfg.predict_noise, self.evaluations)
        return train, predict

    def receives(self) -> dict[str, str]:
        vector = "its views' aggregated update of the user and item sub-models"
        if self.dp is not None:
            return self.dp.receives(LOCAL_AGGREGATE, vector)
        return {**receives(LOCAL_AGGREGATE, vector, self.cfg.secure_aggregation),
                EVALUATE: RANKING_EVALUATION}

    def view_epsilons(self) -> dict[str, float | None]:
        """The paper's view-level figures: each view's item updates and its prediction vectors
        (None where that release carries no noise)."""
        train, predict = self.releases()
        delta = self.cfg.delta
        return {"epsilon_item_updates": None if train is None else gaussian_epsilon([train],
                                                                                    delta),
                "epsilon_predictions": None if predict is None else gaussian_epsilon([predict],
                                                                                     delta)}

    def view_level_report(self) -> Guarantee | NoGuarantee:
        """The paper's view-level Gaussian as its own figure beside a DP run's user-level one:
        what protects one view against its own device and whoever reads that device's local
        aggregate (add/remove one view's contribution), independent of ``dp``."""
        cfg = self.cfg
        train, predict = self.releases()
        details = {"scope": "each view against its own device (the local framework) and "
                            "whoever reads that device's local aggregate: add/remove one view's "
                            "contribution; the paper's Gaussian, independent of dp",
                   "noise_multiplier": cfg.noise_multiplier, "clip": cfg.clip,
                   "predict_noise": cfg.predict_noise,
                   "rounds_of_the_busiest_device": max(self.participations.values(), default=0),
                   "evaluations": self.evaluations, **self.view_epsilons()}
        if train is None or predict is None:
            off = " and ".join(what for what, rel in (("item updates", train),
                                                       ("prediction probabilities", predict))
                               if rel is None)
            return NoGuarantee(f"the paper's Gaussian, but none on the {off}", part="view_level",
                               details={
                **details, "delta": cfg.delta, "epsilon_method": GAUSSIAN_COMPOSITION})
        return Guarantee(VIEW_LEVEL, gaussian_epsilon([train, predict], cfg.delta), cfg.delta,
                         GAUSSIAN_COMPOSITION, unit=VIEW_UNIT, threat=VIEW_THREAT,
                         part="view_level", details=details)

    def privacy(self) -> PrivacyReport:
        """The paper's view-level report; under ``dp``, the DP aggregate's user-level report
        (the unit: a device with all its views) with the view-level one under ``view_level``."""
        if self.dp is not None:
            users = ("each view's user-sub-model update goes in clear to its device, and only "
                     "inside the device's clipped vector into the DP sum"
                     if self.cfg.aggregate_user_sub_model else
                     "user sub-models never leave their views (SEMI-FL-MV-DSSM)")
            return self.dp.report().with_part(self.view_level_report()).with_caveat(
                "user_sub_models", users)
        cfg = self.cfg
        train, predict = self.releases()
        remote = (protection_text(cfg.secagg_variant, cfg.secagg_threshold, cfg.secagg_corrupt)
                  if cfg.secure_aggregation else
                  "none across devices: each device's upload is sent in clear")
        users = ("each view's user-sub-model update goes in clear to its device and, inside "
                 "the device's upload, to the sum" if cfg.aggregate_user_sub_model else
                 "user sub-models never leave their views (SEMI-FL-MV-DSSM)")
        facts: dict[str, Any] = {
            "remote_protection": remote,
            "rounds_of_the_busiest_device": max(self.participations.values(), default=0),
            "evaluations": self.evaluations, "secure_aggregation": cfg.secure_aggregation,
            **self.view_epsilons()}
        if train is None or predict is None:
            unprotected = [what for what, rel in (("item-sub-model updates", train),
                                                  ("prediction probabilities", predict))
                           if rel is None]
            noised = ("the Gaussian mechanism on each view's item updates (local aggregate)"
                      if train is not None else "no noise on anything a view releases")
            top: Guarantee | NoGuarantee = NoGuarantee(
                protection=noised + "; " + remote,
                leakage=f"{' and '.join(unprotected)} of each view reach its device without "
                        "noise; " + users, details=facts)
        else:
            top = Guarantee(VIEW_LEVEL, gaussian_epsilon([train, predict], cfg.delta),
                            cfg.delta, GAUSSIAN_COMPOSITION, unit=VIEW_UNIT, threat=VIEW_THREAT,
                            details=facts)
        return PrivacyReport((top,)).with_caveat("user_sub_models", users)


GAUSSIAN_COMPOSITION = "exact composition of Gaussian mechanisms (Gaussian DP)"
VIEW_LEVEL = ("(epsilon, delta)-DP per view, add/remove one view's contribution, for everything "
              "the view releases to its device (item updates and prediction probabilities)")
VIEW_UNIT = "view-level: add/remove one view's contribution"
VIEW_THREAT = "against its device: and whoever reads that device's local aggregate"


def gaussian_epsilon(releases: list[tuple[float, int]], delta: float) -> float:
    """The epsilon at ``delta`` of ``count`` Gaussian releases of each ``(noise multiplier,
    count)``: exactly one Gaussian mechanism of multiplier ``1 / mu``, ``mu^2 = sum count /
    multiplier^2`` (Dong, Roth & Su 2019, Corollary 3.3; no subsampling is claimed), whose
    epsilon is analytic (:class:`~fedrec.privacy.mechanisms.GaussianMechanism`). It equals the
    PLD accountant's figure up to its discretisation (tested), and stays computable for tiny
    multipliers, where a discretised PLD does not fit in memory. 0 for no release."""
    mu_squared = sum(count / multiplier ** 2 for multiplier, count in releases)
    if mu_squared == 0:
        return 0.0
    return GaussianMechanism(1.0, noise_multiplier=mu_squared ** -0.5).epsilon(delta)


def training_accountant(noise_multiplier: float, clip: float, rounds: int) -> PrivacyAccountant:
    """One view's item updates over ``rounds`` local aggregates: each a Gaussian mechanism of
    sensitivity ``clip`` and noise ``noise_multiplier * clip``. No amplification by the view
    sampling is claimed (``B`` is a fixed-size sample, which the accountant's Poisson
    amplification does not cover), so every round its device takes part in counts."""
    acct = PrivacyAccountant()
    if rounds > 0:
        acct.record(GaussianMechanism(clip, noise_multiplier=noise_multiplier), count=rounds)
    return acct
