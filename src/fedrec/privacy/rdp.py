"""Rényi-DP curves of the aggregate mechanisms, their amplification by Poisson sampling, and the
conversion to (ε, δ).

A curve is the RDP ``ε(α)`` at the integer orders :data:`ORDERS` (numpy array, one value per
order). Curves of releases that are composed adaptively add up (Mironov 2017, Prop. 1).

* :func:`gaussian_rdp`: a Gaussian of standard deviation ``z · Δ2`` on a query of L2 sensitivity
  ``Δ2`` is ``(α, α / (2 z²))``-RDP (Mironov 2017, Prop. 7).
* :func:`skellam_rdp`: the Skellam mechanism (integer noise ``Poisson(μ/2) - Poisson(μ/2)`` per
  coordinate, variance ``μ``) on an integer query of L1 / L2 sensitivity ``Δ1`` / ``Δ2``
  (Agarwal, Kairouz & Liu, NeurIPS 2021, Theorem 3.5): for integer ``α > 1``,
  ``ε(α) <= α Δ2² / (2μ) + min(((2α - 1) Δ2² + 6 Δ1) / (4 μ²), 3 Δ1 / (2μ))``.
* :func:`poisson_subsampled_rdp`: a mechanism with curve ``ε(·)`` run on a Poisson sample that
  holds each unit with probability ``q``, under add/remove-one (Zhu & Wang, ICML 2019,
  Theorem 6, the general upper bound): for integer ``α >= 2``,
  ``ε'(α) <= 1/(α-1) · log((1-q)^(α-1) (αq - q + 1) + C(α,2) q² (1-q)^(α-2) e^{ε(2)}
  + 3 Σ_{l=3}^{α} C(α,l) q^l (1-q)^(α-l) e^{(l-1) ε(l)})``, and never above ``ε(α)``.
* :func:`rdp_epsilon`: the smallest ``ε`` over the orders at ``δ``, with the conversion of
  Canonne, Kamath & Steinke (2020) that dp-accounting uses (``compute_epsilon``).

The Gaussian curves are cross-checked against dp-accounting's own RDP accountant in the tests
(the amplified bound here is the general one, so it lies at or above dp-accounting's Gaussian-
specific one and close to it).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.special import gammaln, logsumexp

from fedrec.errors import ConfigError

__all__ = ["ORDERS", "gaussian_rdp", "poisson_subsampled_rdp", "rdp_epsilon", "skellam_rdp"]

#: The integer orders every curve is evaluated at (Zhu & Wang's bound needs integers).
ORDERS = np.array(list(range(2, 65)) + list(range(72, 257, 8)) + [320, 384, 512, 768, 1024],
                  dtype=np.int64)


def gaussian_rdp(noise_multiplier: float) -> np.ndarray:
    """``α / (2 z²)``: the curve of one Gaussian release at noise multiplier ``z``."""
    if not noise_multiplier > 0:
        raise ConfigError(f"noise multiplier must be > 0, got {noise_multiplier}")
    return ORDERS / (2.0 * noise_multiplier ** 2)


def skellam_rdp(l1: float, l2: float, variance: float) -> np.ndarray:
    """The curve of one Skellam release of per-coordinate ``variance`` on an integer query of
    sensitivities ``l1`` and ``l2`` (module docstring; all in integer units)."""
    if not variance > 0 or not l2 > 0 or not l1 >= l2:
        raise ConfigError(f"Skellam RDP needs variance > 0 and l1 >= l2 > 0, got variance "
                          f"{variance}, l1 {l1}, l2 {l2}")
    a = ORDERS.astype(np.float64)
    tail = np.minimum(((2 * a - 1) * l2 ** 2 + 6 * l1) / (4 * variance ** 2),
                      3 * l1 / (2 * variance))
    return a * l2 ** 2 / (2 * variance) + tail


def _log_comb(n: np.ndarray | int, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def poisson_subsampled_rdp(curve: np.ndarray, q: float) -> np.ndarray:
    """Zhu & Wang's upper bound (module docstring) for sampling rate ``q``; ``q = 1`` returns
    ``curve``."""
    if not 0 < q <= 1:
        raise ConfigError(f"sampling probability must be in (0, 1], got {q}")
    curve = np.asarray(curve, dtype=np.float64)
    if q == 1.0:
        return curve.copy()
    at = dict(zip(ORDERS.tolist(), curve.tolist(), strict=True))
    if any(o not in at for o in range(2, 65)):
        raise ConfigError("the subsampled bound needs the curve at every order 2..64")
    lq, l1q = math.log(q), math.log1p(-q)
    out = np.empty_like(curve)
    for i, alpha in enumerate(ORDERS.tolist()):
        # e^{(l-1) ε(l)} needs ε at every integer l <= α; above the densely sampled orders, use
        # the value at the next order up (ε(·) is non-decreasing, so that is an upper bound).
        ls = np.arange(3, alpha + 1)
        eps_l = np.array([at[o] for o in _next_orders(ls)]) if len(ls) else np.zeros(0)
        terms = [(alpha - 1) * l1q + math.log(alpha * q - q + 1),
                 float(_log_comb(alpha, np.array(2))) + 2 * lq + (alpha - 2) * l1q + at[2]]
        if len(ls):
            rest = (math.log(3) + _log_comb(alpha, ls) + ls * lq + (alpha - ls) * l1q
                    + (ls - 1) * eps_l)
            terms.append(float(logsumexp(rest)))
        out[i] = min(float(logsumexp(terms)) / (alpha - 1), curve[i])
    return out


def _next_orders(ls: np.ndarray) -> list[int]:
    orders = ORDERS.tolist()
    idx = np.searchsorted(ORDERS, ls)
    return [orders[min(j, len(orders) - 1)] if ls[k] <= orders[-1] else orders[-1]
            for k, j in enumerate(idx.tolist())]


def rdp_epsilon(curve: np.ndarray, delta: float) -> float:
    """The ``ε`` at ``δ`` of a composed curve (0 for an empty run)."""
    if not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1) for an RDP bound, got {delta}")
    curve = np.asarray(curve, dtype=np.float64)
    if not np.any(curve):
        return 0.0
    eps, _ = compute_epsilon(ORDERS.astype(np.float64), curve, delta)
    return float(eps)
