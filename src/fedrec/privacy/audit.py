"""Empirical privacy auditing in one run (Steinke, Nasr & Jagielski, "Privacy Auditing with One
(1) Training Run", NeurIPS 2023): a lower bound on ε from what the server receives, to set beside
the accounted ε. A bound above the accounted figure proves an accounting (or noise) bug.

The test (:func:`epsilon_lower_bound`): ``m`` canaries are each included independently with
probability 1/2; the auditor scores every canary from the mechanism's outputs, guesses
"included" for the ``k`` highest scores and "excluded" for the ``k`` lowest, and counts its ``v``
correct guesses among the ``r = 2k``. If the mechanism is ε-DP, ``P[V >= v] <= P[Binomial(r,
e^ε / (1 + e^ε)) >= v]`` (their Theorem 3 with δ = 0), so every ε at which that tail is below
``β`` is rejected; the lower bound is the largest such ε (0 when none is). Several ``k`` are
tried, each at level ``β / len(ks)`` (Bonferroni), so the bound holds with confidence
``1 - β``. δ is not used: the accounted figures are (ε, δ)-DP with δ = 1e-5 and ``m · δ`` small,
and testing pure ε-DP can only raise the lower bound, which makes "audited below accounted" the
stricter check.

The canary experiment on the DP aggregate (:func:`audit_aggregate`): every canary is a client
whose vector in every round is ``C · u_c`` (``u_c`` a random unit direction, public to the
auditor), the strongest signal a clipped client can send; the rounds' sums are formed exactly as
the server decodes them (the clients' ring encodings added in the ring and decoded:
:mod:`fedrec.privacy.skellam`; the secure sum's masks cancel to this bit for bit), or, for the
central mechanism, the clear sum plus the server's Gaussian. A canary's score is the inner
product of its direction with the sum of the decoded rounds. Canaries' directions in ``dim``
dimensions are nearly orthogonal, so the other canaries add little to a score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from fedrec.errors import ConfigError
from fedrec.privacy.rdp import gaussian_rdp, rdp_epsilon
from fedrec.privacy.skellam import SkellamEncoding

__all__ = ["AuditResult", "audit_aggregate", "epsilon_lower_bound"]


def _tail(r: int, v: int, eps: float) -> float:
    p = 1.0 / (1.0 + math.exp(-eps))
    return float(binom.sf(v - 1, r, p))


def epsilon_lower_bound(scores: np.ndarray, included: np.ndarray, ks: Sequence[int],
                        beta: float = 0.05) -> float:
    """The audited lower bound on ε (module docstring) from canary ``scores`` and the truth
    ``included`` (booleans), trying each ``k`` of ``ks`` at level ``beta / len(ks)``."""
    scores, included = np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1:
        raise ConfigError("scores and inclusion must be vectors of the same length")
    order = np.argsort(scores, kind="stable")
    level = beta / len(ks)
    best = 0.0
    for k in ks:
        if not 0 < 2 * k <= len(scores):
            raise ConfigError(f"{k} guesses each way need at least {2 * k} canaries")
        v = int(included[order[-k:]].sum() + (~included[order[:k]]).sum())
        r = 2 * k
        if _tail(r, v, 0.0) > level:
            continue  # not even ε = 0 is rejected
        low, high = 0.0, 50.0
        if _tail(r, v, high) <= level:
            best = max(best, high)
            continue
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if _tail(r, v, mid) <= level else (low, mid)
        best = max(best, low)
    return best


@dataclass(frozen=True)
class AuditResult:
    """The audited lower bound, and the server-side ε the accountant gives the same mechanism
    (RDP, δ 1e-5; every included canary in every round: no amplification)."""

    epsilon_lower_bound: float
    accounted_epsilon: float
    canaries: int
    rounds: int
    included: int


class _Noiseless(SkellamEncoding):
    """The mutation: the encoding with its noise removed (what a noise bug amounts to)."""

    @property
    def client_variance(self) -> float:
        return 0.0


def audit_aggregate(mechanism: str, *, canaries: int, rounds: int, dim: int, clip: float,
                    noise_multiplier: float, rng: np.random.Generator,
                    ks: Sequence[int] = (25, 50, 100), beta: float = 0.05, bits: int = 64,
                    threshold: float = 1.0, remove_noise: bool = False) -> AuditResult:
    """Run the canary experiment (module docstring) on ``mechanism`` (``distributed`` or
    ``central``) and return the audited lower bound beside the accounted ε. ``threshold``: the
    fraction of canaries the distributed noise is sized for (1: every included canary
    survives). ``remove_noise``: the mutation (no noise is added, the accounted ε stays the
    mechanism's), which the audit must catch wherever that ε is below what it can certify."""
    if mechanism not in ("distributed", "central"):
        raise ConfigError(f"unknown mechanism {mechanism!r}")
    directions = rng.standard_normal((canaries, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    included = rng.random(canaries) < 0.5
    members = np.flatnonzero(included)
    if len(members) < 2:
        raise ConfigError("fewer than 2 canaries were included; use more canaries")
    t = max(2, math.ceil(threshold * len(members)))
    encoding = _Noiseless if remove_noise else SkellamEncoding
    total = np.zeros(dim)
    for _ in range(rounds):
        vectors = clip * directions[members]
        if mechanism == "distributed":
            enc = encoding.for_sum(dim, len(members), t, clip, noise_multiplier, bits)
            ring = np.zeros(dim, dtype=enc.dtype)
            for x in vectors:
                np.add(ring, enc.encode(x, rng), out=ring)
            total += enc.decode(ring, len(members))
        else:
            z = 0.0 if remove_noise else noise_multiplier
            total += vectors.sum(0) + z * clip * rng.standard_normal(dim)
    scores = directions @ total
    bound = epsilon_lower_bound(scores, included, ks, beta)
    curve = (gaussian_rdp(noise_multiplier) if mechanism == "central" else
             SkellamEncoding.for_sum(dim, len(members), t, clip, noise_multiplier, bits)
             .rdp(len(members)))
    accounted = rdp_epsilon(rounds * curve, 1e-5)
    return AuditResult(bound, accounted, canaries, rounds, len(members))
