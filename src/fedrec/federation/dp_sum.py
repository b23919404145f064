"""User-level differential privacy on a round's aggregate, as runtime steps: the one DP aggregate
every method uses (``--set dp=distributed|central``).

A client's whole contribution to one round (every vector it puts into that round's sums,
concatenated by the method) is one vector, clipped in L2 to ``dp_clip`` (``C``). Then:

* ``distributed``: the client rounds and noises it in the integers with its share of Skellam
  noise (:mod:`fedrec.privacy.skellam`) and the cohort's vectors are summed by the secure sum
  (:mod:`fedrec.federation.secure_sum`, Bonawitz et al. or SecAgg+) in ``Z_{2^secagg_bits}``:
  the server only ever decodes a sum that carries noise of standard deviation at least
  ``z · C`` (``z`` the noise multiplier), whatever dropouts the sum survives. Guarantee,
  against the server and everyone else: user-level DP (:mod:`fedrec.privacy.user_level`).
  ``dp_masking: false`` sums the same ring vectors in clear (long accuracy runs): the server then
  sees each client's noised vector and the report claims no server-side bound.
* ``central``: the client sends its clipped vector (a plain, fixed-point sum); the server, as a
  trusted aggregator, adds Gaussian noise ``N(0, (zC)²)`` from its own secret. The reference for
  the distributed mechanism's accuracy; it protects nothing against the server (no server-side
  bound), only against whoever sees the released model.

Sampling: a DP run's cohort is a Poisson sample (rate ``clients_per_round / clients``; 1 when
``clients_per_round`` is 0), the sampler the accountant's amplification assumes
(:func:`~fedrec.federation.runtime.poisson_cohort`). It is drawn from the run's public seed, so
whoever holds the config can regenerate every cohort: the amplified released-model figure holds
only against observers without the config; against one with it, the server-side figure applies
(at rate 1, as in ``fedrec reproduce privacy``, the two are equal). The server divides a round's
sum by the public expected cohort size, never by a count derived from client data.

``z`` is ``noise_multiplier`` (``dp_noise_multiplier`` beside a method's own local noise:
:class:`DPOptionsBeside`), or is solved before training from ``target_epsilon`` (the
server-side ε of the distributed mechanism; the released-model ε of the central one) over the
run's planned cohorts, which follow from the public seed alone (:class:`DPPlan`): every party
derives the same ``z`` from its own copy of the options.

What else crosses: the secure sum's keys, encrypted shares and masked vectors (or, unmasked, the
ring vectors), and the cohort size. Evaluation is the experimenter's: its requests come from and
its replies go to :data:`~fedrec.federation.message.EXPERIMENTER`, never the server
(:func:`evaluation_sender`); the Flower engine has no experimenter's channel, so it refuses DP
runs (:func:`check_engine`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.message import EXPERIMENTER, SERVER, PartyId
from fedrec.federation.runtime import PartyContext, Runtime, cohort_size, poisson_cohort
from fedrec.federation.secure_sum import (
    PlainSum,
    SecureSumClient,
    receives,
    requested_cohort,
    run_secure_sum,
    secure_sum_config,
    secure_sum_request,
    threshold_count,
)
from fedrec.privacy.clipping import clip_l2
from fedrec.privacy.rdp import gaussian_rdp, rdp_epsilon
from fedrec.privacy.report import (
    Guarantee,
    NoGuarantee,
    PrivacyReport,
    released_model_guarantee,
)
from fedrec.privacy.skellam import SkellamEncoding
from fedrec.privacy.user_level import UserLevelAccountant, solve_noise_multiplier

__all__ = ["DP_MODES", "STREAM_BYTES", "DPAggregate", "DPAggregateOptions", "DPOptions",
           "DPOptionsBeside", "DPPlan", "DPRound", "DPSumClient", "check_engine",
           "check_not_with_secure_aggregation", "dp_on",
           "evaluation_sender", "expected_mean", "plan_for"]

DP_MODES = ("none", "distributed", "central")
#: How many bytes of clients' ring vectors a sum in clear holds at once
#: (:meth:`DPAggregate.round`).
STREAM_BYTES = 512 * 2**20


NOISE_DOC = ("z: noise standard deviation / C of each round's sum (0: solved from "
             "target_epsilon; central only: 0 and no target is clipping without noise)")


@dataclass
class DPAggregateOptions(RunConfig):
    """The options of the DP aggregate but its noise multiplier ``z``, whose option is named by
    :attr:`NOISE_OPTION` (:class:`DPOptions`: ``noise_multiplier``; :class:`DPOptionsBeside`:
    ``dp_noise_multiplier``, for a method whose ``noise_multiplier`` is its own local
    mechanism's). The secure sum's ring, threshold and variant are the method's
    ``secagg_bits``, ``secagg_threshold`` and ``secagg_variant`` options."""

    #: The name of the option that holds ``z``.
    NOISE_OPTION: ClassVar[str] = "noise_multiplier"

    dp: str = option("none", "none | distributed: clients add Skellam noise inside the secure "
                             "sum (user-level DP against the server) | central: a trusted "
                             "server adds Gaussian noise to the clear sum (DP against the "
                             "released model only)")
    dp_clip: float = option(1.0, "C: L2 bound of a client's whole contribution to a round")
    target_epsilon: float = option(0.0, "user-level epsilon over the run to reach "
                                        "(distributed: against the server; central: against "
                                        "the released model); solves the noise multiplier")
    dp_delta: float = option(1e-5, "delta of every epsilon reported")
    dp_masking: bool = option(True, "distributed: mask the noised vectors with secure "
                                    "aggregation (false: sum them in clear, for accuracy runs; "
                                    "no server-side epsilon is then claimed)")

    def dp_noise(self) -> float:
        """``z`` as given (0: solved from ``target_epsilon``, or none)."""
        return float(getattr(self, self.NOISE_OPTION))

    def validate(self) -> None:
        super().validate()
        z_name = self.NOISE_OPTION
        check_choice("dp", self.dp, DP_MODES)
        check_range("dp_clip", self.dp_clip, 0.0, low_open=True)
        check_range(z_name, self.dp_noise(), 0.0)
        check_range("target_epsilon", self.target_epsilon, 0.0)
        check_range("dp_delta", self.dp_delta, 0.0, 0.5)
        if self.dp == "none":
            return
        if self.dp_noise() > 0 and self.target_epsilon > 0:
            raise ConfigError(f"give {z_name} or target_epsilon, not both")
        if self.dp == "distributed" and not (self.dp_noise() > 0 or self.target_epsilon > 0):
            raise ConfigError(f"dp=distributed needs {z_name} > 0 or target_epsilon > 0")
        if not self.dp_delta > 0:
            raise ConfigError("dp needs dp_delta > 0")


@dataclass
class DPOptions(DPAggregateOptions):
    """The options of the DP aggregate; a method's config inherits them (``z`` is
    ``noise_multiplier``)."""

    noise_multiplier: float = option(0.0, NOISE_DOC)


@dataclass
class DPOptionsBeside(DPAggregateOptions):
    """The DP aggregate's options beside a method's own local noise, whose multiplier is the
    method's ``noise_multiplier`` (FL-MV-DSSM's view-level Gaussian): the aggregate's ``z`` is
    ``dp_noise_multiplier``, an independent setting."""

    NOISE_OPTION: ClassVar[str] = "dp_noise_multiplier"

    dp_noise_multiplier: float = option(0.0, NOISE_DOC)


def dp_on(cfg: Any) -> bool:
    return getattr(cfg, "dp", "none") != "none"


def check_not_with_secure_aggregation(cfg: Any) -> None:
    """A one-line :class:`ConfigError` for ``dp`` beside a method's own ``secure_aggregation``
    switch (for a method whose switch is off by default): the DP aggregate sums (and, with
    ``dp_masking``, masks) the uploads itself."""
    if dp_on(cfg) and cfg.secure_aggregation:
        raise ConfigError("dp and secure_aggregation are exclusive: dp=distributed masks "
                          "its noised uploads with secure aggregation itself")


def _dp_mode(cfg: Any) -> str | None:
    """``"dp=..."`` or ``"upload_dp=..."`` in a DP run -- the DP aggregate or a method's local
    DP mechanism (PTF-FedRec's ``upload_dp``) --, else None."""
    if dp_on(cfg):
        return f"dp={cfg.dp}"
    local = getattr(cfg, "upload_dp", "none")
    return None if local == "none" else f"upload_dp={local}"


def evaluation_sender(cfg: Any) -> PartyId:
    """Who asks for (and receives) a client-side evaluation: the server, or the experimenter in
    a DP run (the DP aggregate or a method's local DP mechanism: module docstring) and in a
    poisoning experiment, whose evaluation replies carry each benign client's exposure shares
    (:mod:`fedrec.metrics.exposure`): whether it rated each target, and whether each target is
    in its top K, which the server must not learn."""
    poisoned = getattr(cfg, "poisoning", "none") != "none"
    return EXPERIMENTER if _dp_mode(cfg) or poisoned else SERVER


def check_engine(cfg: Any, engine: str) -> None:
    """A one-line :class:`ConfigError` for a DP run on an engine without an experimenter's
    channel (every engine but the simulator, for now)."""
    mode = _dp_mode(cfg)
    if mode and engine != "simulator":
        raise ConfigError(f"{mode} runs on the simulator only: the {engine} engine has no "
                          "channel for the experimenter's evaluation (the server must not "
                          "receive it)")


def _sum_options(cfg: Any) -> dict[str, Any]:
    return {"threshold": cfg.secagg_threshold, "modulus_bits": cfg.secagg_bits,
            "variant": cfg.secagg_variant, "corrupt": cfg.secagg_corrupt,
            "dropout": cfg.secagg_dropout}


class DPPlan:
    """What every party derives from the public options, the number of clients and the
    dimension of a round's vector: the sampling rate, the planned cohorts (from the public
    seed), the noise multiplier ``z`` and each cohort's encoding. Built by :func:`plan_for`
    (cached: clients and server share one)."""

    def __init__(self, cfg: Any, num_clients: int, dim: int) -> None:
        self.mode = cfg.dp
        self.clip, self.delta = float(cfg.dp_clip), float(cfg.dp_delta)
        self.dim, self.num_clients = int(dim), int(num_clients)
        self.sum = _sum_options(cfg)
        self.rate = cohort_size(cfg.clients_per_round, num_clients) / num_clients
        self.expected_cohort = self.rate * num_clients
        # The planned participation: the runtime's own Poisson draws of every round, from the
        # public seed (client positions stand for the ids: the draw depends on the count only).
        member = np.zeros((cfg.rounds, num_clients), dtype=bool)
        positions = range(num_clients)
        for r in range(1, cfg.rounds + 1):
            member[r - 1, poisson_cohort(positions, self.rate, cfg.seed, r)] = True
        self.planned_sizes = member.sum(1)
        self._member = member
        if self.mode == "distributed" and self.planned_sizes.min(initial=2) < 2:
            raise ConfigError("a planned round samples fewer than 2 clients: raise "
                              "clients_per_round for a distributed-DP sum")
        given = cfg.dp_noise()
        self.z = (given if given > 0 or cfg.target_epsilon <= 0
                  else self._solve(float(cfg.target_epsilon)))
        if self.mode == "distributed":  # a ring too small is an error before training
            self.encoding(int(self.planned_sizes.max(initial=2)))

    def threshold(self, cohort: int) -> int:
        return threshold_count(cohort, self.sum["threshold"])

    def encoding(self, cohort: int, z: float | None = None) -> SkellamEncoding:
        return _encoding(self.dim, cohort, self.threshold(cohort), self.clip,
                         self.z if z is None else z, self.sum["modulus_bits"])

    def curve(self, key: tuple[int, int]) -> np.ndarray:
        """The RDP curve of one released sum: ``(cohort, survivors)`` for distributed, any key
        for central (the Gaussian's, which the server adds whatever the cohort)."""
        if self.mode == "central":
            return gaussian_rdp(self.z)
        cohort, survivors = key
        return self.encoding(cohort).rdp(survivors)

    def planned_epsilon(self, z: float) -> float:
        """The ε the target is solved against, over the planned cohorts with each sum at its
        threshold of survivors (the least noise it may carry)."""
        if self.mode == "central":
            acct = UserLevelAccountant("central", self.rate, lambda _k: gaussian_rdp(z))
            acct.rounds[None] = len(self.planned_sizes)
            return rdp_epsilon(acct.released_curve(), self.delta)
        sizes = sorted(set(self.planned_sizes.tolist()))
        curves = {n: self.encoding(n, z).rdp(self.threshold(n)) for n in sizes}
        per_round = np.stack([curves[n] for n in self.planned_sizes.tolist()])
        worst = (self._member.T.astype(np.float64) @ per_round).max(0)
        return rdp_epsilon(worst, self.delta)

    def _solve(self, target: float) -> float:
        return solve_noise_multiplier(target, self.planned_epsilon)


@functools.lru_cache(maxsize=256)
def _encoding(dim: int, cohort: int, threshold: int, clip: float, z: float,
              bits: int) -> SkellamEncoding:
    return SkellamEncoding.for_sum(dim, cohort, threshold, clip, z, bits)


_PLANS: dict[tuple[Any, ...], DPPlan] = {}


def plan_for(cfg: Any, num_clients: int, dim: int) -> DPPlan:
    """The run's :class:`DPPlan` (one per distinct options, clients and dimension)."""
    key = (cfg.dp, cfg.dp_clip, cfg.dp_noise(), cfg.target_epsilon, cfg.dp_delta,
           cfg.rounds, cfg.seed, cfg.clients_per_round, num_clients, dim,
           tuple(sorted(_sum_options(cfg).items())))
    if key not in _PLANS:
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[key] = DPPlan(cfg, num_clients, dim)
    return _PLANS[key]


class DPSumClient:
    """A client's half: its round vector clipped (and, distributed, rounded and noised from its
    own secret) and handed to the secure sum's first step, or sent as a plain-sum upload."""

    def __init__(self, cfg: Any, num_clients: int, dim: int) -> None:
        self.cfg = cfg
        self.plan = plan_for(cfg, num_clients, dim)
        s = self.plan.sum
        self.secure = SecureSumClient(s["threshold"], self.plan.clip, s["modulus_bits"],
                                      variant=s["variant"], corrupt=s["corrupt"],
                                      dropout=s["dropout"])

    @property
    def masked(self) -> bool:
        return self.cfg.dp == "distributed" and self.cfg.dp_masking

    def upload(self, ctx: PartyContext, x: np.ndarray | torch.Tensor, request: Payload,
               clip: bool = True) -> Payload:
        """This client's message of the step that ends a round's local work (``clip`` False:
        the distributed encoding skips the clip, as a malicious client may)."""
        if not bool(torch.isfinite(torch.as_tensor(x)).all()):
            raise ProtocolError(f"client {ctx.party}: its round vector is not finite in round "
                                f"{ctx.round} (training diverged: lower lr)")
        if self.cfg.dp == "distributed":
            enc = self.plan.encoding(requested_cohort(ctx, request))
            ring = enc.encode(x, ctx.rng("dp-noise"), clip=clip)
            if self.masked:
                return self.secure.advertise(ctx, ring, request, preencoded=True)
            return self.secure.plain(ctx, ring, request, preencoded=True)
        clipped = clip_l2(torch.as_tensor(x, dtype=torch.float64).reshape(-1), self.plan.clip)
        return self.secure.plain(ctx, clipped.numpy(), request)


class DPAggregate:
    """The server's half: the Poisson cohort, the request, the decoded noised sum and the
    accounting of every released sum (:mod:`fedrec.privacy.user_level`)."""

    def __init__(self, cfg: Any, num_clients: int, dim: int) -> None:
        self.cfg = cfg
        self.plan = plan_for(cfg, num_clients, dim)
        self.accountant = self._new_accountant()

    def _new_accountant(self) -> UserLevelAccountant:
        return UserLevelAccountant(self.cfg.dp, self.plan.rate, self.plan.curve)

    def cohort(self, rt: Runtime, among: Sequence[PartyId] | None = None) -> list[PartyId]:
        """This round's Poisson cohort of every client, or of ``among`` (the clients that train,
        when others only evaluate; the plan's ``num_clients`` is then ``len(among)``)."""
        cohort = rt.sample_poisson(self.plan.rate, among)
        if len(cohort) < 2:
            raise ProtocolError(f"round {rt.round}: the Poisson sample holds {len(cohort)} "
                                "client(s); a DP sum needs at least 2")
        return cohort

    def request(self, cohort: list[PartyId]) -> Payload:
        return secure_sum_request(len(cohort))

    def receives(self, step: str, vector: str) -> dict[str, str]:
        """What the server receives of the DP aggregate, by step (the keys, or the vectors,
        arrive in the method's ``step``; evaluation goes to the experimenter, not here)."""
        distributed = self.cfg.dp == "distributed"
        described = (f"{vector}, clipped to dp_clip, randomly rounded and Skellam-noised in the "
                     "ring" if distributed else f"{vector}, clipped to dp_clip (central DP: "
                     "the server adds the noise)")
        return receives(step, described, secure=distributed and self.cfg.dp_masking)

    def round(self, rt: Runtime, step: str, payload: Payload,
              among: Sequence[PartyId] | None = None,
              cohort: list[PartyId] | None = None) -> DPRound:
        """One round of the DP aggregate: this round's Poisson cohort (:meth:`cohort` of
        ``among``, or ``cohort`` where the method drew it for an earlier step of the round) is
        sent ``payload`` with the request of the sum, runs the method's ``step`` and replies
        with its vector (:class:`DPSumClient`); the result is the noised sum
        (:meth:`aggregate`).
        A sum in clear (``dp_masking`` false, ``central``) is added up as the replies arrive,
        :data:`STREAM_BYTES` of them at a time (:meth:`Runtime.gather`): a large population's
        dense vectors are never all in memory."""
        cohort = self.cohort(rt, among) if cohort is None else cohort
        request = {**payload, **self.request(cohort)}
        if self.masked:
            replies = rt.broadcast(step, cohort, request)
            return DPRound(*self.aggregate(rt, replies, len(cohort), step=step), list(replies))
        acc = PlainSum(self.sum_config(len(cohort)))
        chunk = max(1, STREAM_BYTES // (self.plan.dim * acc.total.itemsize))
        replied = rt.gather(step, cohort, request, acc.add, chunk=chunk)
        if not replied:
            raise rt.no_update(step)
        return DPRound(*self.release(rt, acc.result()[0], replied, len(cohort)), replied)

    @property
    def masked(self) -> bool:
        """Whether the round's vectors reach the server only inside a secure sum."""
        return self.cfg.dp == "distributed" and bool(self.cfg.dp_masking)

    def sum_config(self, cohort: int) -> Any:
        """The sum's configuration for a cohort of ``cohort`` clients."""
        plan = self.plan
        s = plan.sum
        return secure_sum_config(plan.dim, cohort, s["threshold"], plan.clip, s["modulus_bits"],
                                 variant=s["variant"], corrupt=s["corrupt"],
                                 dropout=s["dropout"], preencoded=self.cfg.dp == "distributed")

    def aggregate(self, rt: Runtime, replies: Mapping[PartyId, Payload], cohort: int, *,
                  step: str) -> tuple[np.ndarray, list[PartyId]]:
        """The noised sum of the round's vectors (decoded floats; ``replies`` are those of the
        method's ``step`` to a cohort of ``cohort`` clients) and whose vectors it holds. No
        vector at all is a :class:`~fedrec.errors.NoUpdateError`, fewer than a
        distributed-DP sum's threshold a :class:`ProtocolError`."""
        config = self.sum_config(cohort)
        if self.masked:
            result = run_secure_sum(rt, replies, config, step=step)
            total, survivors = result.total, list(result.survivors)
        else:
            acc = PlainSum(config)
            for party, reply in rt.updates(replies, step).items():
                acc.add(party, reply)
            total, survivors = acc.result()[0], list(replies)
        return self.release(rt, total, survivors, cohort)

    def release(self, rt: Runtime, total: np.ndarray, survivors: list[PartyId], cohort: int
                ) -> tuple[np.ndarray, list[PartyId]]:
        """The released sum of ``survivors``' vectors (``total``: the decoded ring sum): the
        distributed sum decoded with its noise, or the central sum with the server's
        Gaussian; accounted."""
        plan, distributed = self.plan, self.cfg.dp == "distributed"
        if distributed:
            enc = plan.encoding(cohort)
            if len(survivors) < enc.threshold:
                raise ProtocolError(f"round {rt.round}: {len(survivors)} survivors, fewer than "
                                    f"the {enc.threshold} a distributed-DP sum needs")
            noised = enc.decode(total, len(survivors))
            key: tuple[int, int] = (cohort, len(survivors))
        else:
            noise = rt.server_secret.rng(rt.round, "dp-central-noise").standard_normal(plan.dim)
            noised = total + plan.z * plan.clip * noise
            key = (0, 0)
        self.accountant.record(key, survivors)
        return noised, survivors

    # -- the report ------------------------------------------------------------------------------
    def report(self) -> PrivacyReport:
        """The privacy report of a DP run (:mod:`fedrec.privacy.report`): the run's own entry
        is the guarantee against the server (``epsilon``, a server-side figure; no formal
        guarantee where there is none), and ``released_model`` the guarantee against the
        released model only (where there is noise)."""
        cfg, plan = self.cfg, self.plan
        ref = plan.z if plan.z > 0 else None
        figures = (self.accountant.report(plan.delta, gaussian_reference=ref)
                   if plan.z > 0 else {})
        distributed = cfg.dp == "distributed"
        server = figures.get("epsilon_server_rdp") if distributed and cfg.dp_masking else None
        if plan.z <= 0:
            guarantee = ("no formal guarantee: clipping without noise "
                         f"({cfg.NOISE_OPTION} 0)")
        elif distributed and cfg.dp_masking:
            guarantee = (
                "user-level DP against the server and everyone else: each round's sum of "
                f"clipped vectors (L2 {plan.clip:g}) carries Skellam noise of standard deviation "
                f">= {plan.z:.4g} x clip added by the clients inside secure aggregation; composed "
                "over the rounds of the most-participating client (RDP, Agarwal et al. 2021)")
        elif distributed:
            guarantee = ("user-level DP against the released model only: dp_masking is false, "
                         "so the server sees each client's noised vector (no server-side bound)")
        else:
            guarantee = ("user-level DP against the released model only: a trusted server adds "
                         f"Gaussian noise {plan.z:.4g} x clip to the clear sum")
        released = min((e for e in (figures.get("epsilon_released_model_rdp"),
                                    figures.get("epsilon_released_model_pld")) if e is not None),
                       default=None)
        method = "rdp (server: no amplification, most-participating client)"
        details: dict[str, Any] = {
            "protection": guarantee,
            "dp": cfg.dp,
            "epsilon_server": server,
            **({"epsilon_released_model": None} if released is None else {}),
            "noise_multiplier": plan.z,
            "dp_clip": plan.clip,
            "sampling": f"Poisson, rate {plan.rate:.6g} (expected cohort "
                        f"{plan.expected_cohort:.1f}), from the public seed: "
                        "epsilon_released_model holds against observers without the run's "
                        "config (with it they regenerate the cohorts: epsilon_server applies)",
            "neighboring_relation": "user level: one user's whole data (its vector in every "
                                    "round) replaced by nothing; participation is public to the "
                                    "server",
            "secure_aggregation": bool(distributed and cfg.dp_masking),
            "evaluation": "the experimenter's: no evaluation reply reaches the server",
            **figures,
        }
        threat = "against the server"
        top: Guarantee | NoGuarantee = (
            Guarantee(guarantee, server, plan.delta, method, unit="user-level", threat=threat,
                      details=details) if server is not None else
            NoGuarantee(details.pop("protection"), statement=guarantee, threat=threat,
                        details={**details, "epsilon_method": method, "delta": plan.delta}))
        return PrivacyReport((top,) + (() if released is None else (
            released_model_guarantee(released, plan.delta, figures),)))

    def state_dict(self) -> dict[str, Any]:
        acct = self.accountant
        return {"rounds": dict(acct.rounds),
                "per_client": {c: dict(v) for c, v in acct.per_client.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.accountant = self._new_accountant()
        self.accountant.rounds.update(state["rounds"])
        for c, counts in state["per_client"].items():
            self.accountant.per_client.setdefault(c, type(self.accountant.rounds)()).update(
                counts)


@dataclass
class DPRound:
    """What :meth:`DPAggregate.round` gives the server: the released (noised) sum, whose
    vectors it holds, and who replied to the round's step."""

    total: np.ndarray
    survivors: list[PartyId]
    replied: list[PartyId]


def expected_mean(total: np.ndarray, plan: DPPlan) -> np.ndarray:
    """A round's noised sum divided by the public expected cohort size (module docstring)."""
    return total / max(plan.expected_cohort, 1.0)

