"""Secure sum of one vector per client, as runtime steps: Bonawitz et al. (CCS 2017) secure
aggregation (:mod:`fedrec.privacy.secagg`) or its SecAgg+ variant (Bell et al., CCS 2020:
:mod:`fedrec.privacy.secagg_plus`), carried by :meth:`Runtime.call`, so it runs unchanged on the
simulator and on Flower. ``variant`` chooses: ``"bonawitz"`` (the default; every client masks
with every other) or ``"secagg+"`` (each client masks with, and shares its secrets among, its
``k = O(log n)`` neighbours on a random graph; same steps, same messages' kinds).

Steps of one secure sum over a cohort of ``n`` clients (each one :meth:`Runtime.call`; every
message passes through the server, which is all Flower allows and all Bonawitz assumes):

1. *advertise keys* -- merged into the algorithm's own local step, which ends with
   :meth:`SecureSumClient.advertise` (the client keeps its input vector and returns its two
   X25519 public keys); the reply set is U1. :func:`secure_sum_request` is what the algorithm
   adds to that step's request (the cohort size ``n``, from which every client derives the
   threshold ``t`` itself).
2. ``secagg_share``: the server broadcasts U1's public keys; each client returns its Shamir
   shares of its mask key and self-mask seed, AES-GCM-encrypted for each other client (U2).
3. ``secagg_mask``: the server forwards each client the ciphertexts addressed to it; the client
   returns its fixed-point-encoded input plus its masks, ``y_u`` in Z_{2^k} (U3).
4. ``secagg_unmask``: the server names U3; each client returns its shares of the survivors'
   self-mask seeds and of the dropped clients' (U2 \\ U3) mask keys; the server reconstructs the
   masks from ``t`` shares each and obtains ``Σ_{u ∈ U3} x_u`` (:func:`run_secure_sum`).

Guarantee (honest-but-curious server, Bonawitz et al. §6): the server -- and any coalition with
fewer than ``t`` clients -- learns the sum of the surviving clients' inputs and who survived,
nothing about any individual input: every ``y_u`` it receives is masked by a uniform element of
Z_{2^k}, shares travel encrypted, and no client reveals both secrets of one peer. The sum is
correct whenever at least ``t`` clients survive each step; clients that drop after sharing keys
are excluded from the sum and their pairwise masks removed; fewer than ``t`` survivors abort the
sum with :class:`~fedrec.errors.ProtocolError`, none at all (no reply to a step) with its
:class:`~fedrec.errors.NoUpdateError` (:meth:`Runtime.updates`).
``t = max(2, ceil(threshold · n))`` with ``threshold`` in (0.5, 1], so ``t > n/2`` as Bonawitz
et al. recommend. Not covered: a malicious server, and what the sum itself reveals. Cost:
``O(n)`` PRG expansions of the vector per client and ``O(n · dropped)`` at the server, so keep
cohorts to tens or hundreds of clients.

With ``variant="secagg+"`` the server also sends the public graph seed; the degree ``k`` and the
per-neighbourhood threshold ``t`` come from the cohort size, ``corrupt`` (``γ``: the fraction of
clients that may collude with the server) and ``dropout`` (``δ``: the fraction that may drop)
by the formula of :mod:`fedrec.privacy.secagg_graph` (security ``2^-40``, correctness
``2^-30`` over the graph); ``threshold`` is not used. The server learns the sum of the honest
survivors' inputs and who survived; a neighbourhood left with fewer than ``t`` survivors aborts
the sum with :class:`~fedrec.errors.ProtocolError`, never a wrong sum. Cost: ``k + 1`` PRG
expansions per client, ``O(n + k · dropped)`` at the server.

Precision: inputs are clipped to ``[-clip, clip]`` and rounded to the
:class:`~fedrec.privacy.fixedpoint.FixedPointEncoder` grid of ``Z_{2^bits}`` for ``n`` summands;
the decoded sum of ``m`` inputs is within ``m · 0.5 / scale`` of the sum of the clipped inputs,
``scale = floor((2^(bits-1) - 1) / n) / clip`` (capped at ``2^53 / clip``).

Plain sums (runs with the masking left out, to save its cost on long accuracy runs): each
client sends :func:`plain_message`, the same clipped fixed-point encoding the secure sum would
mask, whole (``dense``) or as its nonzero entries and their positions (``sparse``, built from a
:class:`SparseUpload` without a dense copy); :class:`PlainSum` adds them in the ring one reply
at a time and :func:`sum_streamed` asks the cohort in parts, so the server holds one part's
uploads at a time. Every form and part size gives the secure sum's total bit for bit.

Client state between steps lives in ``ctx.state`` as plain bytes (a SuperNode's process ends
after each message) and is removed once the client has answered ``secagg_unmask`` or starts a
new sum. Keys and seeds come from ``os.urandom``; the result does not depend on them (masks
cancel exactly in the ring), so a secure run is as reproducible as a plain one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.errors import BelowThreshold, ConfigError, ProtocolError
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import PartyContext, Runtime
from fedrec.federation.steps import step
from fedrec.privacy.report import NoGuarantee, PrivacyReport
from fedrec.privacy.secagg import SecAggClient, SecAggConfig, SecAggServer
from fedrec.privacy.secagg_plus import (
    SecAggPlusClient,
    SecAggPlusConfig,
    SecAggPlusServer,
    secaggplus_config,
)

__all__ = [
    "PLAIN_FORMATS",
    "SECAGG_STEPS",
    "VARIANTS",
    "PlainSum",
    "SecureSumClient",
    "SecureSumOptions",
    "SecureSumParameters",
    "SecureSumResult",
    "SecureSumSteps",
    "SparseUpload",
    "plain_message",
    "protection_text",
    "receives",
    "requested_cohort",
    "run_secure_sum",
    "secure_sum_config",
    "secure_sum_request",
    "sum_cohort",
    "sum_streamed",
    "threshold_count",
    "validate_secure_sum_options",
    "variant_of",
    "variant_option",
]

STEP_SHARE = "secagg_share"
STEP_MASK = "secagg_mask"
STEP_UNMASK = "secagg_unmask"
SECAGG_STEPS = (STEP_SHARE, STEP_MASK, STEP_UNMASK)


def receives(step: str, vector: str, secure: bool = True) -> dict[str, str]:
    """What a server summing one ``vector`` per client (described in words) receives, by step,
    for :meth:`fedrec.algorithms.base.ServerLogic.receives`: with ``secure``, the keys
    advertised in the method's own ``step`` and the protocol's three steps; without, the
    fixed-point vectors themselves in ``step`` (the plain sum of the same vectors)."""
    if not secure:
        return {step: f"{vector}: each client's own, in clear (fixed point)"}
    return {
        step: "each cohort client's two X25519 public keys (the secure sum's U1)",
        STEP_SHARE: "each client's Shamir shares of its secrets, encrypted for other clients",
        STEP_MASK: f"{vector}: each client's, masked (uniform in the ring without the others' "
                   "masks)",
        STEP_UNMASK: "each client's shares of survivors' self-mask seeds and dropped clients' "
                     "mask keys: removing the masks yields the cohort's sum only",
    }
STATE_KEY = "secagg"
REQUEST_KEY = "secagg_cohort"

VARIANTS = ("bonawitz", "secagg+")
RandFactory = Callable[[PartyId], Callable[[int], bytes]]


def threshold_count(cohort: int, threshold: float) -> int:
    """``t``: how many clients must survive each step of a sum over ``cohort`` clients."""
    if not 0.5 < threshold <= 1.0:
        raise ConfigError(f"secure aggregation threshold must be in (0.5, 1], got {threshold}")
    if cohort < 2:
        raise ProtocolError(f"secure aggregation needs at least 2 clients, got {cohort}")
    return min(cohort, max(2, math.ceil(threshold * cohort - 1e-9)))


_VARIANT_OPTIONS: dict[str, tuple[Any, str]] = {
    "variant": ("bonawitz", "bonawitz: every client masks with every other | secagg+: with "
                            "O(log n) neighbours on a random graph (Bell et al. 2020)"),
    "corrupt": (0.05, "secagg+: fraction of the cohort that may collude with the server (sizes "
                      "the graph)"),
    "dropout": (0.1, "secagg+: fraction of the cohort that may drop after sharing keys (sizes "
                     "the graph)"),
}


def variant_option(name: str, doc_prefix: str = "") -> Any:
    """The config field ``secagg_<name>`` (``variant``, ``corrupt`` or ``dropout``): a fresh
    :func:`~fedrec.config.option` with its default and doc, for every config class with a secure
    sum to declare alike; :func:`variant_of` reads the three back."""
    default, doc = _VARIANT_OPTIONS[name]
    return option(default, doc_prefix + doc)


def variant_of(cfg: Any) -> dict[str, Any]:
    """The keyword options of :func:`secure_sum_config`, :class:`SecureSumClient` and
    :func:`validate_secure_sum_options` from a config with the :func:`variant_option`
    fields."""
    return {"variant": cfg.secagg_variant, "corrupt": cfg.secagg_corrupt,
            "dropout": cfg.secagg_dropout}


def validate_secure_sum_options(threshold: float, clip: float, bits: int,
                                prefix: str = "secagg", *, variant: str = "bonawitz",
                                corrupt: float = 0.05, dropout: float = 0.1) -> None:
    """The run options every algorithm with a secure sum has (``<prefix>_threshold``,
    ``_clip``, ``_bits``, ``_variant``, ``_corrupt``, ``_dropout``), checked once here with
    one-line :class:`ConfigError` messages."""
    check_range(f"{prefix}_threshold", threshold, 0.5, 1.0, low_open=True)
    check_range(f"{prefix}_clip", clip, 0.0, low_open=True)
    if not math.isfinite(clip):
        raise ConfigError(f"{prefix}_clip must be finite, got {clip}")
    check_range(f"{prefix}_bits", bits, 16, 64)
    check_choice(f"{prefix}_variant", variant, VARIANTS)
    check_range(f"{prefix}_corrupt", corrupt, 0.0, 1.0)
    check_range(f"{prefix}_dropout", dropout, 0.0, 1.0)
    if corrupt >= 1.0 or dropout >= 1.0:
        raise ConfigError(f"{prefix}_corrupt and {prefix}_dropout must be below 1, got "
                          f"{corrupt} and {dropout}")


@dataclass
class SecureSumParameters(RunConfig):
    """The run options that describe one sum of uploads (``secagg_threshold``, ``_clip``,
    ``_bits``, ``_variant``, ``_corrupt``, ``_dropout``), declared once for every algorithm with
    a secure sum: :class:`SecureSumOptions` adds the switch most algorithms have; one that
    switches the sum on by an option of its own (FedGNN's ``item_privacy``) inherits these
    alone, redeclares a default with ``option(value)`` where it differs, overrides
    :meth:`coordinate_bound` where the ring's bound follows from other options, and calls
    :meth:`validate_sum` when its sum is on. Server and clients derive the same sum from the
    same options (:meth:`sum_config`, :meth:`sum_client`)."""

    secagg_threshold: float = option(0.6, "t = ceil(secagg_threshold * cohort) clients must "
                                          "survive each step, in (0.5, 1]")
    secagg_clip: float = option(1.0, "bound of every upload coordinate (larger values are "
                                     "clipped to it before the sum)")
    secagg_bits: int = option(32, "fixed-point encoding in the ring Z_{2^secagg_bits}")
    secagg_variant: str = variant_option("variant")
    secagg_corrupt: float = variant_option("corrupt")
    secagg_dropout: float = variant_option("dropout")

    def coordinate_bound(self) -> float:
        """The bound of every upload coordinate in the sum's fixed-point ring:
        ``secagg_clip``."""
        return self.secagg_clip

    def validate_sum(self) -> None:
        """:func:`validate_secure_sum_options` of these options."""
        validate_secure_sum_options(self.secagg_threshold, self.coordinate_bound(),
                                    self.secagg_bits, **variant_of(self))

    def sum_config(self, dim: int, cohort: int, preencoded: bool = False) -> SecAggConfig:
        """:func:`secure_sum_config` of a sum of ``dim`` floats (``preencoded``: ring
        elements) over ``cohort`` clients."""
        return secure_sum_config(dim, cohort, self.secagg_threshold, self.coordinate_bound(),
                                 self.secagg_bits, **variant_of(self), preencoded=preencoded)

    def sum_client(self) -> SecureSumClient:
        """A client's half of the sums these options describe."""
        return SecureSumClient(self.secagg_threshold, self.coordinate_bound(), self.secagg_bits,
                               **variant_of(self))


@dataclass
class _SecureAggregationSwitch(RunConfig):
    secure_aggregation: bool = option(True, "true: a secure sum across clients "
                                            "(secagg_variant); false: a plain sum of the same "
                                            "clipped, fixed-point uploads")


# The switch is a base of its own, listed after the parameters, only so that a dataclass lists
# it first (fields follow the reversed MRO), as `fedrec config show` always has.
@dataclass
class SecureSumOptions(SecureSumParameters, _SecureAggregationSwitch):
    """The run options of an algorithm whose uploads reach the server only as a sum: a secure
    sum (``secagg_variant``), or with ``secure_aggregation: false`` the plain sum of the same
    clipped fixed-point encodings (the same total bit for bit, without the masking's cost; the
    server then sees every upload), so the sum's options are checked either way. A config class
    inherits them (with its own ``rounds``); one that differs only in a default redeclares that
    field with ``option(value)``."""

    #: Whether the plain sum (``secure_aggregation: false``) is made of the same fixed-point
    #: encodings as the secure one (:func:`sum_cohort`), whose ring is sized for a sum of at
    #: least 2 uploads; an algorithm whose plain path adds raw uploads sets it False.
    PLAIN_SUM_ENCODED: ClassVar[bool] = True

    def validate(self) -> None:
        super().validate()
        self.validate_sum()

    def clients_per_sum(self) -> tuple[int, str]:
        """``(n, what)``: every sum of this run is over at least ``n`` clients, and ``what``
        names that sum in a message; n = 2 for a secure sum (masks cancel only between two or
        more clients, :func:`threshold_count`) and for a plain sum of its fixed-point
        encodings (:data:`PLAIN_SUM_ENCODED`), else 1."""
        if self.secure_aggregation:
            return 2, "a sum by secure aggregation"
        if self.PLAIN_SUM_ENCODED:
            return 2, "a plain sum of fixed-point uploads (secure_aggregation=false)"
        return 1, "a plain sum"


def secure_sum_config(dim: int, cohort: int, threshold: float, clip: float,
                      modulus_bits: int, *, variant: str = "bonawitz", corrupt: float = 0.05,
                      dropout: float = 0.1, preencoded: bool = False) -> SecAggConfig:
    """The public parameters of one sum: server and clients derive the same from the same
    options (the clients from their own config, not from the server's word). SecAgg+ gives a
    :class:`~fedrec.privacy.secagg_plus.SecAggPlusConfig` (degree and threshold from
    ``corrupt`` and ``dropout``). ``preencoded``: the inputs are ring elements already and the
    sum stays in the ring (:class:`~fedrec.privacy.fixedpoint.RingIdentity`; distributed DP)."""
    check_choice("secagg_variant", variant, VARIANTS)
    if variant == "secagg+":
        if cohort < 2:
            raise ProtocolError(f"secure aggregation needs at least 2 clients, got {cohort}")
        return secaggplus_config(dim, cohort, corrupt, dropout, clip, modulus_bits,
                                 preencoded=preencoded)
    return SecAggConfig(dim=dim, threshold=threshold_count(cohort, threshold),
                        max_clients=cohort, clip=clip, modulus_bits=modulus_bits,
                        preencoded=preencoded)


def protection_text(variant: str, threshold: float, corrupt: float) -> str:
    """The privacy report's ``protection`` line for a secure sum of ``variant``."""
    if variant == "secagg+":
        return ("secure aggregation (SecAgg+, Bell et al. 2020): the server learns only the "
                "cohort sum, against a semi-honest server colluding with at most "
                f"{corrupt:g} of the cohort (2^-40 over the random graph)")
    return ("secure aggregation (Bonawitz et al. 2017): the server learns only the cohort sum, "
            "against an honest-but-curious server and fewer than t = "
            f"ceil({threshold} * cohort) colluding clients")


def secure_sum_report(cfg: SecureSumParameters, leakage: str, of: str = "") -> PrivacyReport:
    """The privacy report of a run whose uploads reach the server only as secure sums: no
    formal guarantee (nothing bounds what a sum reveals), :func:`protection_text` (+ ``of``,
    what is summed) and the ``leakage`` the method names."""
    return PrivacyReport((NoGuarantee(
        protection_text(cfg.secagg_variant, cfg.secagg_threshold, cfg.secagg_corrupt) + of,
        leakage, details={"secure_aggregation": True}),))


def secure_sum_request(cohort: int) -> Payload:
    """What the server adds to the request of the step that ends with ``advertise``."""
    return {REQUEST_KEY: int(cohort)}


def requested_cohort(ctx: PartyContext, request: Payload) -> int:
    """The cohort size a :func:`secure_sum_request` names."""
    if REQUEST_KEY not in request:
        raise ProtocolError(f"client {ctx.party}: request names no secure-sum cohort")
    return int(request[REQUEST_KEY])


PLAIN_FORMATS = ("dense", "sparse")


@dataclass
class SparseUpload:
    """One client's input to a sum, a vector of ``size`` floats given by its nonzero entries:
    ``values[i]`` at position ``at[i]`` (distinct positions), zero elsewhere. An algorithm
    builds this when its dense vector is mostly zeros (a client's few item rows of a large
    table), so that a plain sum need never hold it densely; :meth:`dense` is the vector a
    secure sum masks."""

    size: int
    at: np.ndarray  # int64 positions
    values: np.ndarray  # float64

    def dense(self) -> np.ndarray:
        x = np.zeros(self.size)
        x[self.at] = self.values
        return x


def plain_message(x: np.ndarray | SparseUpload, config: SecAggConfig,
                  form: str = "dense") -> Payload:
    """A plain-sum upload: the input clipped and fixed-point encoded by ``config.encoder``,
    exactly what the secure sum would mask. ``form: dense`` sends the whole vector
    ``{"x"}``; ``sparse`` sends its nonzero encodings and their positions ``{"x", "at"}``. The
    two carry the same information (a plain vector shows its zeros) and give the same sum bit
    for bit, since zero encodes to zero; sparse costs 12 bytes per nonzero instead of 4 or 8 per
    coordinate."""
    check_choice("plain upload form", form, PLAIN_FORMATS)
    enc = config.encoder
    if form == "dense":
        return {"x": enc.encode(x.dense() if isinstance(x, SparseUpload) else x)}
    if not isinstance(x, SparseUpload):
        at = np.flatnonzero(x)
        x = SparseUpload(int(np.size(x)), at, np.asarray(x, dtype=np.float64).ravel()[at])
    return {"x": enc.encode(x.values), "at": np.asarray(x.at, dtype=np.int64)}


class SecureSumClient:
    """A client's half of the secure sum, for an algorithm's :class:`PartyLogic` to call.

    ``threshold``, ``clip``, ``modulus_bits``, ``variant``, ``corrupt``, ``dropout`` are the
    client's own copy of the run options (:func:`secure_sum_config`).
    ``rand_factory(party)`` gives the byte source of that party's keys, seeds and nonces
    (default ``os.urandom``; a test may record draws to check the masks).
    """

    def __init__(self, threshold: float, clip: float, modulus_bits: int,
                 rand_factory: RandFactory | None = None, *, variant: str = "bonawitz",
                 corrupt: float = 0.05, dropout: float = 0.1) -> None:
        check_choice("secagg_variant", variant, VARIANTS)
        self.threshold = threshold
        self.clip = clip
        self.modulus_bits = modulus_bits
        self.variant = variant
        self.corrupt = corrupt
        self.dropout = dropout
        self.rand_factory: RandFactory = rand_factory or (lambda _party: os.urandom)

    @property
    def client_type(self) -> type[SecAggClient]:
        return SecAggPlusClient if self.variant == "secagg+" else SecAggClient

    def config_for(self, ctx: PartyContext, size: int, request: Payload,
                   preencoded: bool = False) -> SecAggConfig:
        """The public parameters of a sum of ``size`` floats (``preencoded``: ring elements)
        over the cohort ``request`` names (:func:`secure_sum_request`), from this client's own
        options."""
        return secure_sum_config(size, requested_cohort(ctx, request), self.threshold,
                                 self.clip, self.modulus_bits, variant=self.variant,
                                 corrupt=self.corrupt, dropout=self.dropout,
                                 preencoded=preencoded)

    def plain(self, ctx: PartyContext, x: np.ndarray | SparseUpload, request: Payload,
              form: str = "dense", *, preencoded: bool = False) -> Payload:
        """The plain-sum upload of ``x`` (:func:`plain_message`): what :meth:`advertise` and
        the masking step would send masked, for runs without secure aggregation."""
        size = x.size if isinstance(x, SparseUpload) else int(np.size(x))
        return plain_message(x, self.config_for(ctx, size, request, preencoded), form)

    def advertise(self, ctx: PartyContext, x: np.ndarray | SparseUpload,
                  request: Payload, *, preencoded: bool = False) -> Payload:
        """Step 1: keep ``x`` (this client's input; ``preencoded``: already a ring element) for
        the masking step; return the public keys. ``request`` is the step's request holding
        :func:`secure_sum_request`."""
        if isinstance(x, SparseUpload):
            x = x.dense()
        x = np.ascontiguousarray(np.asarray(x) if preencoded
                                 else np.asarray(x, dtype=np.float64).ravel())
        cfg = self.config_for(ctx, x.size, request, preencoded)
        client = self.client_type(int(ctx.party), cfg, self.rand_factory(ctx.party))
        keys = client.advertise_keys()
        self._save(ctx, client, x)
        return dict(keys)

    def share(self, ctx: PartyContext, payload: Payload) -> Payload:
        """Step 2: the Shamir shares of this client's secrets, encrypted for each peer."""
        client, x = self._resume(ctx, STEP_SHARE)
        out = client.share_keys(payload)
        self._save(ctx, client, x)
        return dict(out)

    def mask(self, ctx: PartyContext, payload: Payload) -> Payload:
        """Step 3: the masked, encoded input."""
        client, x = self._resume(ctx, STEP_MASK)
        out = client.masked_input_collection(payload, x)
        self._save(ctx, client, None)  # the input is not needed again
        return dict(out)

    def unmask(self, ctx: PartyContext, payload: Payload) -> Payload:
        """Step 4: the shares the server needs to remove the masks; ends this client's sum."""
        client, _ = self._resume(ctx, STEP_UNMASK)
        out = client.unmasking(payload)
        del ctx.state[STATE_KEY]
        return dict(out)

    def _resume(self, ctx: PartyContext, step_name: str) -> tuple[SecAggClient, np.ndarray | None]:
        session = ctx.state.get(STATE_KEY)
        if session is None or session["round"] != ctx.round:
            raise ProtocolError(f"client {ctx.party}: {step_name} without a secure sum in "
                                f"progress in round {ctx.round}")
        return self.client_type.from_state(session["client"], self.rand_factory(ctx.party)), \
            session["x"]

    @staticmethod
    def _save(ctx: PartyContext, client: SecAggClient, x: np.ndarray | None) -> None:
        ctx.state[STATE_KEY] = {"round": ctx.round, "client": client.export_state(), "x": x}


class SecureSumSteps:
    """Steps 2-4 declared for a client :class:`~fedrec.federation.runtime.PartyLogic` that
    mixes this in and holds its :class:`SecureSumClient` as ``self.secure`` (step 1 is the
    algorithm's own step, ending with :meth:`SecureSumClient.advertise`)."""

    secure: SecureSumClient

    @step(STEP_SHARE)
    def secagg_share(self, ctx: PartyContext, payload: Payload) -> Payload:
        return self.secure.share(ctx, payload)

    @step(STEP_MASK)
    def secagg_mask(self, ctx: PartyContext, payload: Payload) -> Payload:
        return self.secure.mask(ctx, payload)

    @step(STEP_UNMASK)
    def secagg_unmask(self, ctx: PartyContext, payload: Payload) -> Payload:
        return self.secure.unmask(ctx, payload)


class PlainSum:
    """The ring sum of plain uploads (:func:`plain_message`, either form), added one reply at a
    time so that a caller can sum a cohort in parts without holding every reply; ``result``
    decodes. A mistyped, mis-sized or out-of-range upload is a :class:`ProtocolError`."""

    def __init__(self, config: SecAggConfig) -> None:
        self.encoder = config.encoder
        self.size = config.dim
        self.total = np.zeros(self.size, dtype=self.encoder.dtype)
        self.count = 0

    def add(self, party: PartyId, reply: Payload) -> None:
        x, at, dtype = reply.get("x"), reply.get("at"), self.encoder.dtype
        if not isinstance(x, np.ndarray) or x.dtype != dtype or x.ndim != 1:
            raise ProtocolError(f"{party}: upload is not a {dtype.__name__} vector")
        if at is None:
            if x.shape != (self.size,):
                raise ProtocolError(f"{party}: upload has length {x.size}, not {self.size}")
            np.add(self.total, x, out=self.total)
        else:
            if (not isinstance(at, np.ndarray) or at.dtype != np.int64 or at.shape != x.shape
                    or (at.size and (at.min() < 0 or at.max() >= self.size))):
                raise ProtocolError(f"{party}: sparse upload's positions are not int64 "
                                    f"positions below {self.size}, one per value")
            np.add.at(self.total, at, x)  # a repeated position adds; wraps mod 2^bits
        self.count += 1

    def result(self) -> tuple[np.ndarray, int]:
        return self.encoder.decode(self.encoder.reduce(self.total.copy())), self.count


@dataclass
class SecureSumResult:
    """What the server learns: the sum of the survivors' inputs, and who is in it."""

    total: np.ndarray
    advertised: list[int]
    survivors: list[int]
    dropped: list[int]


def sum_cohort(rt: Runtime, replies: Mapping[PartyId, Payload], config: SecAggConfig, *,
               secure: bool, step: str) -> tuple[np.ndarray, int]:
    """The decoded sum of a cohort's dense uploads (the replies to ``step``) and how many are
    in it.

    ``secure``: the replies are the step-1 adverts and :func:`run_secure_sum` sums the masked
    inputs. Otherwise each reply is a :func:`plain_message` (what the secure sum would mask),
    summed in the ring and decoded by :class:`PlainSum`: the same total bit for bit, for runs
    that leave the masking out (the ledger then counts the plain messages). No upload at all is
    a :class:`~fedrec.errors.NoUpdateError`; a mistyped or mis-sized one a
    :class:`ProtocolError`."""
    if secure:
        result = run_secure_sum(rt, replies, config, step=step)
        return result.total, len(result.survivors)
    acc = PlainSum(config)
    replies = rt.updates(replies, step)
    for party, reply in replies.items():
        acc.add(party, reply)
    return acc.result()


def sum_streamed(rt: Runtime, targets: Sequence[PartyId],
                 send: Callable[[list[PartyId]], Mapping[PartyId, Payload]],
                 config: SecAggConfig, *, secure: bool, step: str,
                 part: int = 0) -> tuple[np.ndarray, int]:
    """:func:`sum_cohort` of the uploads that ``send(targets)`` returns (the replies to the
    algorithm's ``step`` that ends with the upload). A plain sum asks ``part`` targets at a
    time (0: all at once) and adds each reply as it comes, so the server never holds more than
    ``part`` uploads; the total is the same ring sum whatever ``part`` is (a part that no
    target answers adds nothing; no upload in any part is a
    :class:`~fedrec.errors.NoUpdateError`). A secure sum masks over the whole cohort, so
    ``send`` is called once with every target."""
    if secure or part <= 0 or part >= len(targets):
        return sum_cohort(rt, send(list(targets)), config, secure=secure, step=step)
    acc = PlainSum(config)
    for start in range(0, len(targets), part):
        for party, reply in send(list(targets[start: start + part])).items():
            acc.add(party, reply)
    if acc.count == 0:
        raise rt.no_update(step)
    return acc.result()


def run_secure_sum(rt: Runtime, advertised: Mapping[PartyId, Payload],
                   config: SecAggConfig, *, step: str) -> SecureSumResult:
    """Steps 2-4 from the server's side, given the clients' step-1 replies to the algorithm's
    ``step`` (their public keys). Returns the decoded sum; raises
    :class:`~fedrec.errors.NoUpdateError` when no client answers a step (``step`` included:
    every client dropped out) and :class:`ProtocolError` below ``t`` survivors (for SecAgg+,
    ``t`` in any neighbourhood). A :class:`SecAggPlusConfig` runs SecAgg+, its graph seed from
    ``os.urandom`` (the sum does not depend on it: the masks cancel)."""
    server = (SecAggPlusServer(config) if isinstance(config, SecAggPlusConfig)
              else SecAggServer(config))
    advertised = rt.updates(advertised, step)
    keys = {int(u): m for u, m in advertised.items()}  # type: ignore[arg-type]
    try:
        down = server.advertise_keys(keys)
        up = rt.updates(rt.call(STEP_SHARE, down), STEP_SHARE)
        down = server.share_keys(_ints(up))
        up = rt.updates(rt.call(STEP_MASK, down), STEP_MASK)
        down = server.masked_input_collection(_ints(up))
        up = rt.updates(rt.call(STEP_UNMASK, down), STEP_UNMASK)
        total = server.unmasking(_ints(up))
    except BelowThreshold as exc:
        raise BelowThreshold(below_threshold_text(exc, config), exc.count,
                             exc.threshold) from None
    return SecureSumResult(total=total, advertised=sorted(keys), survivors=server.survivors,
                           dropped=server.dropped)


def below_threshold_text(exc: BelowThreshold, config: SecAggConfig) -> str:
    """``exc``'s message with what decides the threshold and the options that change it: a run
    whose cohort keeps losing more clients than the threshold allows aborts every time."""
    cohort = config.max_clients
    if isinstance(config, SecAggPlusConfig):
        why = (f"SecAgg+ sizes each neighbourhood's threshold for secagg_dropout and "
               f"secagg_corrupt; {exc.count} survived where {exc.threshold} were needed, in a "
               f"cohort of {cohort}: raise secagg_dropout to the share of clients this run "
               "drops, raise clients_per_round, or lower dropout")
    else:
        why = (f"the threshold is t = ceil(secagg_threshold * cohort) = {exc.threshold} of a "
               f"cohort of {cohort}, and {exc.count} survived: lower secagg_threshold (down to "
               "just above 0.5), raise clients_per_round, or lower dropout")
    return f"secure sum aborted: {exc}; {why}"


def _ints(replies: Mapping[PartyId, Payload]) -> dict[int, Payload]:
    if any(not isinstance(p, int) for p in replies):
        raise ProtocolError("secure-sum replies from a party that is not a client")
    return {int(p): m for p, m in replies.items()}  # type: ignore[arg-type]
