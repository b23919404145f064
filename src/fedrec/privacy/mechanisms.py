"""Additive noise mechanisms (Laplace, Gaussian) and their per-release privacy guarantee.

Neighbouring relation: a mechanism's guarantee holds for any two inputs ``x, x'`` whose
difference is within its stated sensitivity (``||x - x'||_1 <= sensitivity_l1`` for Laplace,
``||x - x'||_2 <= sensitivity_l2`` for Gaussian). Which datasets count as neighbours (replace
one client's update, add/remove one client, change one coordinate, ...) is decided by whoever
computes the sensitivity, usually through :mod:`fedrec.privacy.clipping`; the epsilon reported
here is for exactly that relation and for ONE release. Compose releases with
:class:`fedrec.privacy.accounting.PrivacyAccountant`.

Noise is drawn with textbook floating-point samplers from a ``torch.Generator`` or a numpy
``Generator`` (reproducible; numpy's PCG64 draws float64 uniforms about twice as fast as torch's
CPU Mersenne Twister, which matters where every client noises ~70k values per round); like
Opacus, they are not hardened against floating-point attacks on the low-order bits (Mironov,
CCS 2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np
import torch

from fedrec.errors import ConfigError

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "LinfLaplaceEpsilon",
    "analytic_gaussian_delta",
    "linf_laplace_epsilon",
]


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not value > 0.0 or math.isinf(value):
        raise ConfigError(f"{name} must be a finite number > 0, got {value}")
    return value


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ConfigError(f"delta must be in [0, 1), got {delta}")
    return delta


Generator = torch.Generator | np.random.Generator


def _noise_like(x: torch.Tensor, generator: Generator | None, kind: str) -> torch.Tensor:
    """Standard noise (Laplace(1) or N(0, 1)) with x's shape and dtype, on x's device.

    It is drawn on the generator's device (so a CPU generator gives the same numbers for a
    tensor on any device; a numpy generator draws on the CPU) and then moved to ``x.device``.
    """
    if not x.is_floating_point():
        raise ConfigError(f"noise can only be added to a floating-point tensor, got {x.dtype}")
    shape = tuple(x.shape)
    if isinstance(generator, np.random.Generator):
        if kind == "gaussian":
            noise = torch.from_numpy(generator.standard_normal(shape)).to(x.dtype)
            return noise.to(x.device)
        u = torch.from_numpy(generator.random(shape)).sub_(0.5)  # float64, [0, 1) - 0.5
    else:
        device = generator.device if generator is not None else x.device
        if kind == "gaussian":
            noise = torch.randn(shape, generator=generator, dtype=x.dtype, device=device)
            return noise.to(x.device)
        u = torch.rand(shape, generator=generator, dtype=torch.float64, device=device).sub_(0.5)
    # Laplace(0, 1) by inverse CDF of one float64 uniform per coordinate (a few times faster
    # than the difference of two exponentials); u = -0.5 would give an infinite draw. In place:
    # the operations of -sign(u) * log1p(-min(2|u|, 1 - 2^-52)) without a temporary per step.
    sign = torch.sign(u)
    mag = u.abs_().mul_(2.0).clamp_(max=1.0 - 2.0**-52)
    return mag.neg_().log1p_().mul_(sign).neg_().to(x.dtype).to(x.device)


@dataclass(frozen=True)
class LaplaceMechanism:
    """``M(x) = x + Lap(scale)`` independently on every coordinate.

    Guarantee (pure DP, Dwork et al. 2006): for neighbours with ``||x - x'||_1 <= Δ₁``
    (``Δ₁ = sensitivity_l1``) the density ratio of ``M(x)`` and ``M(x')`` at any output ``y`` is
    ``exp((||y - x'||_1 - ||y - x||_1) / scale) <= exp(Δ₁ / scale)``, so one release is
    ``(ε, 0)``-DP with ``ε = Δ₁ / scale``.
    """

    sensitivity_l1: float
    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity_l1", _positive("sensitivity_l1", self.sensitivity_l1))
        object.__setattr__(self, "scale", _positive("Laplace scale", self.scale))

    @property
    def noise_multiplier(self) -> float:
        """``scale / sensitivity``: the noise in units of sensitivity (dp-accounting's unit)."""
        return self.scale / self.sensitivity_l1

    def add_noise(self, x: torch.Tensor, generator: Generator | None = None) -> torch.Tensor:
        """Return ``x + Lap(scale)`` (a new tensor, same shape, dtype and device)."""
        return x + self.scale * _noise_like(x, generator, "laplace")

    def epsilon(self, delta: float = 0.0) -> float:
        """``ε = sensitivity_l1 / scale`` for one release; pure DP, so it holds for any delta."""
        _check_delta(delta)
        return self.sensitivity_l1 / self.scale

    def dp_event(self) -> dp_accounting.LaplaceDpEvent:
        return dp_accounting.LaplaceDpEvent(self.noise_multiplier)


@dataclass(frozen=True, init=False)
class GaussianMechanism:
    """``M(x) = x + N(0, sigma² I)``; give either ``sigma`` or ``noise_multiplier = sigma / Δ₂``.

    Guarantee (analytic Gaussian mechanism, Balle & Wang, ICML 2018, Theorem 8): for neighbours
    with ``||x - x'||_2 <= Δ₂`` and ``m = sigma / Δ₂``, one release is ``(ε, δ)``-DP iff
    ``δ >= Φ(1/(2m) - ε·m) - e^ε · Φ(-1/(2m) - ε·m)``. :meth:`epsilon` returns the smallest
    such ``ε`` (computed by ``dp_accounting.get_epsilon_gaussian``); the formula itself is
    :func:`analytic_gaussian_delta`.
    """

    sensitivity_l2: float
    sigma: float

    def __init__(
        self,
        sensitivity_l2: float,
        sigma: float | None = None,
        *,
        noise_multiplier: float | None = None,
    ) -> None:
        sensitivity_l2 = _positive("sensitivity_l2", sensitivity_l2)
        if (sigma is None) == (noise_multiplier is None):
            raise ConfigError("GaussianMechanism needs exactly one of sigma and noise_multiplier")
        if sigma is None:
            sigma = _positive("noise_multiplier", noise_multiplier) * sensitivity_l2  # type: ignore[arg-type]
        object.__setattr__(self, "sensitivity_l2", sensitivity_l2)
        object.__setattr__(self, "sigma", _positive("Gaussian sigma", sigma))

    @property
    def noise_multiplier(self) -> float:
        """``sigma / sensitivity_l2``: the noise in units of sensitivity."""
        return self.sigma / self.sensitivity_l2

    def add_noise(self, x: torch.Tensor, generator: Generator | None = None) -> torch.Tensor:
        """Return ``x + N(0, sigma²)`` (a new tensor, same shape, dtype and device)."""
        return x + self.sigma * _noise_like(x, generator, "gaussian")

    def epsilon(self, delta: float) -> float:
        """Smallest ε for which one release is (ε, delta)-DP (analytic Gaussian, see class doc)."""
        delta = _check_delta(delta)
        if delta == 0.0:
            raise ConfigError("the Gaussian mechanism has no finite epsilon at delta = 0")
        return float(dp_accounting.get_epsilon_gaussian(self.noise_multiplier, delta))

    def dp_event(self) -> dp_accounting.GaussianDpEvent:
        return dp_accounting.GaussianDpEvent(self.noise_multiplier)


def analytic_gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """Exact δ(ε) of one Gaussian release with ``sigma = noise_multiplier · Δ₂``.

    ``δ(ε) = Φ(1/(2m) - ε m) - e^ε Φ(-1/(2m) - ε m)`` (Balle & Wang 2018, Theorem 8).
    """
    m = _positive("noise_multiplier", noise_multiplier)

    def phi(t: float) -> float:
        return 0.5 * math.erfc(-t / math.sqrt(2.0))

    return phi(0.5 / m - epsilon * m) - math.exp(epsilon) * phi(-0.5 / m - epsilon * m)


@dataclass(frozen=True)
class LinfLaplaceEpsilon:
    """Two readings of the local-DP guarantee of one L∞-clipped, Laplace-noised vector (see
    :func:`linf_laplace_epsilon`)."""

    per_coordinate: float
    """``2δ/λ``: one coordinate, the others held fixed (the figure FedGNN reports). Secondary:
    it does not bound what a client releases."""
    per_vector: float
    """``2δD/λ``: the whole D-dimensional uploaded gradient: the upload's local-DP guarantee."""
    dim: int
    clip_bound: float
    laplace_scale: float

    @property
    def vector_mechanism(self) -> LaplaceMechanism:
        """The upload as one Laplace mechanism: L1 sensitivity ``2δD``, scale ``λ`` (noise
        multiplier ``λ / (2δD)``); what an accountant composes."""
        return LaplaceMechanism(2.0 * self.clip_bound * self.dim, self.laplace_scale)


def linf_laplace_epsilon(clip_bound: float, laplace_scale: float, dim: int) -> LinfLaplaceEpsilon:
    """Local-DP epsilon of a vector clipped in L∞ and given Laplace noise per coordinate (FedGNN's
    perturbation, Wu et al. 2021).

    A client uploads ``g̃ = clip_linf(g, δ) + Lap(λ)^D`` (``δ = clip_bound``, ``λ = laplace_scale``,
    ``D = dim``). Neighbouring relation: local DP, i.e. any two D-dimensional gradients ``g, g'``
    the same client could have computed in that round (everything about its private data may
    change, the upload's shape may not: what the shape and the item ids reveal is not covered).

    * Whole vector (the guarantee): ``||clip(g) - clip(g')||_1 <= 2δD``, so one upload is
      ``ε = 2δD/λ``-DP (pure; :attr:`LinfLaplaceEpsilon.vector_mechanism`). It grows linearly
      with D: with δ 0.1 and λ 0.2 it is D itself, tens of thousands of coordinates per upload on
      ML-100K, i.e. no meaningful protection of the gradient values.
    * Per coordinate (secondary): each clipped coordinate lies in ``[-δ, δ]``, so releasing
      coordinate ``i`` alone is ``2δ/λ``-DP. This bounds what one coordinate reveals if all
      the others were public; it is the figure FedGNN reports, and it does not bound what a
      client releases.

    Both are for ONE upload; a client composes the uploads of the rounds it took part in
    (:func:`fedrec.privacy.accounting.worst_client_accountant`).
    """
    clip_bound = _positive("clip bound", clip_bound)
    laplace_scale = _positive("Laplace scale", laplace_scale)
    if int(dim) != dim or dim < 1:
        raise ConfigError(f"dim must be a positive integer, got {dim}")
    per_coordinate = 2.0 * clip_bound / laplace_scale
    return LinfLaplaceEpsilon(per_coordinate=per_coordinate, per_vector=per_coordinate * int(dim),
                         dim=int(dim), clip_bound=clip_bound, laplace_scale=laplace_scale)
