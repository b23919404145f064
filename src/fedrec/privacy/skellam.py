"""The distributed Skellam mechanism: each client clips, rounds and noises its vector in the
integers, and only the sum of the cohort's vectors (a secure sum in ``Z_{2^bits}``) is ever
decoded (Agarwal, Kairouz & Liu, "The Skellam Mechanism for Differentially Private Federated
Learning", NeurIPS 2021).

Why Skellam rather than the distributed discrete Gaussian (Kairouz, Liu & Steinke, ICML 2021):
a sum of independent Skellam variables is Skellam again, so the noise in the decoded sum is
*exactly* a Skellam of variance (survivors x each client's share): the accounting needs no
closeness term for a sum of discrete Gaussians, the survivors of a round (dropouts included)
give its exact noise, and a client draws its share with two vectorised Poisson draws.

A client's encoding of ``x`` (``d`` floats), with the scale ``γ`` of :class:`SkellamEncoding`:

1. clip in L2 to ``C`` (:func:`~fedrec.privacy.clipping.clip_l2`);
2. scale by ``γ`` and round each coordinate randomly and unbiasedly (``floor(v) + Bernoulli(v -
   floor(v))``); the result differs from ``γ x`` by less than 1 per coordinate, so its L2 norm
   is at most ``Δ2 = γC + sqrt(d)`` and its L1 norm at most ``Δ1 = sqrt(d) Δ2`` whatever the
   draw: these are the sensitivities the accounting uses (add/remove of one client's vector);
3. add ``Skellam(μ_c)`` per coordinate, ``μ_c = z² Δ2² / t``, ``t`` the fewest survivors with
   which the secure sum still completes, so that every decoded sum carries variance
   ``μ = survivors · μ_c >= z² Δ2²`` (the guarantee of noise multiplier ``z`` holds whatever
   dropouts the sum survives; a round with more survivors is accounted at its larger noise);
4. reduce mod ``2^bits``: the vector the secure sum masks.

No random rotation: the ring is sized for the unrotated worst case (every coordinate of a
client's vector may reach ``Δ2``). Rotation (a randomized Hadamard transform) flattens the
coordinates so that fewer bits suffice; it buys communication, not privacy, and fedrec's
secure sum already sends 32 or 64 bits per coordinate.

Scale and ring (:meth:`SkellamEncoding.for_sum`): the decoded sum of ``n`` clients lies within
``B = n Δ2 + TAIL · sqrt(n μ_c)`` of zero unless the noise exceeds ``TAIL = 40`` standard
deviations (probability below ``e^-800``). ``γ`` is the largest scale with ``2B <= 2^(bits-1)``,
capped so that ``γC <= 2^24`` (larger scales gain nothing: rounding then adds less than 1e-7 of
the noise's variance, and Poisson draws stay in range); a ring too small for ``γC >= 2^10`` is a
:class:`~fedrec.errors.ConfigError`. :meth:`SkellamEncoding.decode` lifts the ring sum to the
centred integers and raises :class:`~fedrec.errors.ProtocolError` for any coordinate beyond
``B``: a sum that wrapped around the ring is detected, never decoded.

Error added to the sum besides the noise: the rounding, unbiased, variance at most ``n/4`` per
coordinate in integer units (below ``1e-6`` of the noise's variance at ``γC = 2^10``, ``z >=
0.1``). The Poisson draws are numpy's (PCG64 keyed by the client's secret): like Opacus, not
hardened against floating-point attacks on the sampler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from fedrec.errors import ConfigError, ProtocolError
from fedrec.privacy.clipping import clip_l2
from fedrec.privacy.rdp import skellam_rdp

__all__ = ["MAX_SCALED_CLIP", "MIN_SCALED_CLIP", "TAIL", "SkellamEncoding"]

TAIL = 40.0
MAX_SCALED_CLIP = float(1 << 24)
MIN_SCALED_CLIP = float(1 << 10)


@dataclass(frozen=True)
class SkellamEncoding:
    """The public parameters of one distributed-DP sum: dimension ``dim``, cohort size
    ``cohort``, minimum survivors ``threshold``, clip ``clip``, noise multiplier
    ``noise_multiplier``, ring ``Z_{2^bits}``; ``scale`` is ``γ`` (module docstring)."""

    dim: int
    cohort: int
    threshold: int
    clip: float
    noise_multiplier: float
    bits: int
    scale: float

    @classmethod
    def for_sum(cls, dim: int, cohort: int, threshold: int, clip: float,
                noise_multiplier: float, bits: int) -> SkellamEncoding:
        """The encoding of a sum of ``cohort`` vectors of ``dim`` floats: the largest scale the
        ring holds (module docstring), or a one-line :class:`ConfigError`."""
        if not clip > 0 or not math.isfinite(clip):
            raise ConfigError(f"dp_clip must be a finite number > 0, got {clip}")
        if not noise_multiplier > 0 or not math.isfinite(noise_multiplier):
            raise ConfigError(f"the distributed noise multiplier must be > 0, got "
                              f"{noise_multiplier}")
        if not 2 <= threshold <= cohort:
            raise ConfigError(f"a distributed-DP sum needs 2 <= threshold <= cohort, got "
                              f"{threshold} of {cohort}")
        if bits not in (32, 64):
            raise ConfigError(f"a distributed-DP sum needs a ring of 32 or 64 bits, got {bits}")
        # In units of γC: Δ2 <= γC (1 + sqrt(d)/γC); bound B / γC for the smallest γC allowed.
        root_d = math.sqrt(dim)

        def bound_per_unit(scaled_clip: float) -> float:
            d2 = 1.0 + root_d / scaled_clip
            return cohort * d2 + TAIL * noise_multiplier * d2 * math.sqrt(cohort / threshold)

        half = float(1 << (bits - 2))  # 2B <= 2^(bits-1)
        scaled = min(MAX_SCALED_CLIP, half / bound_per_unit(MIN_SCALED_CLIP))
        if scaled < MIN_SCALED_CLIP:
            raise ConfigError(
                f"the {bits}-bit ring is too small for a distributed-DP sum of {cohort} clients "
                f"at noise multiplier {noise_multiplier:g}: use secagg_bits=64 or fewer clients "
                "per round")
        return cls(dim, cohort, threshold, float(clip), float(noise_multiplier), bits,
                   scaled / clip)

    # -- sensitivities and noise ---------------------------------------------------------------
    @property
    def l2_sensitivity(self) -> float:
        """``Δ2 = γC + sqrt(d)``: the L2 norm of any client's rounded vector, in integer units."""
        return self.scale * self.clip + math.sqrt(self.dim)

    @property
    def l1_sensitivity(self) -> float:
        return math.sqrt(self.dim) * self.l2_sensitivity

    @property
    def client_variance(self) -> float:
        """``μ_c = z² Δ2² / t``: each client's share of the noise variance per coordinate."""
        return (self.noise_multiplier * self.l2_sensitivity) ** 2 / self.threshold

    def sum_variance(self, survivors: int) -> float:
        return survivors * self.client_variance

    def rdp(self, survivors: int) -> np.ndarray:
        """The RDP curve of one decoded sum over ``survivors`` clients (add/remove one client's
        vector): :func:`~fedrec.privacy.rdp.skellam_rdp` at the sum's exact variance."""
        if survivors < self.threshold:
            raise ProtocolError(f"a distributed-DP sum of {survivors} clients has less noise "
                                f"than its guarantee (threshold {self.threshold})")
        return skellam_rdp(self.l1_sensitivity, self.l2_sensitivity, self.sum_variance(survivors))

    @property
    def dtype(self) -> type[np.unsignedinteger]:
        return np.uint32 if self.bits == 32 else np.uint64

    def bound(self, survivors: int) -> float:
        """``B``: no coordinate of a correct decoded sum lies farther from 0 (integer units)."""
        return (survivors * self.l2_sensitivity
                + TAIL * math.sqrt(self.sum_variance(survivors)))

    # -- the client's side ---------------------------------------------------------------------
    def encode(self, x: np.ndarray | torch.Tensor, rng: np.random.Generator,
               clip: bool = True) -> np.ndarray:
        """Steps 1-4 of the module docstring: ``x`` clipped, scaled, randomly rounded, noised
        with this client's share and reduced mod ``2^bits`` (randomness from ``rng``: the
        client's own). ``clip`` False skips step 1, as a malicious client may: nothing in the
        sum can check it (:mod:`fedrec.attacks.poisoning`)."""
        v = torch.as_tensor(x, dtype=torch.float64).reshape(-1)
        if v.numel() != self.dim:
            raise ConfigError(f"distributed-DP input has {v.numel()} values, expected {self.dim}")
        if not bool(torch.isfinite(v).all()):
            raise ConfigError("cannot encode non-finite values (NaN or inf)")
        scaled = (clip_l2(v, self.clip) if clip else v).numpy() * self.scale
        low = np.floor(scaled)
        ints = low.astype(np.int64) + (rng.random(self.dim) < scaled - low)
        half = self.client_variance / 2.0
        ints += rng.poisson(half, self.dim) - rng.poisson(half, self.dim)
        return ints.astype(self.dtype)  # two's complement: reduction mod 2^bits

    # -- the server's side ---------------------------------------------------------------------
    def decode(self, ring_sum: np.ndarray, survivors: int) -> np.ndarray:
        """The centred lift of a ring sum of ``survivors`` encodings, divided by ``γ``; a
        :class:`ProtocolError` where a coordinate lies beyond :meth:`bound` (the sum wrapped)."""
        v = np.asarray(ring_sum)
        if v.dtype != self.dtype or v.shape != (self.dim,):
            raise ProtocolError(f"a distributed-DP sum must be {self.dim} {self.dtype.__name__}")
        signed = v.view(np.int32 if self.bits == 32 else np.int64)
        worst = float(np.abs(signed.astype(np.float64)).max()) if self.dim else 0.0
        if worst > self.bound(survivors):
            raise ProtocolError(
                f"the decoded distributed-DP sum overflowed its {self.bits}-bit ring (a "
                f"coordinate at {worst:.4g}, beyond the bound {self.bound(survivors):.4g} of "
                f"{survivors} clients); nothing was decoded")
        return signed / self.scale
