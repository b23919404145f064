"""User-level accounting of a run's DP aggregates, per threat.

Neighbouring runs differ by one user's whole data (its contribution to every round is replaced by
nothing; the participation pattern, which the server sees, is public). Each round releases one
aggregate: the sum of the surviving sampled clients' clipped vectors plus noise (Skellam from the
clients, or Gaussian from a trusted aggregator), with RDP curve ``ε_r(α)``
(:mod:`fedrec.privacy.rdp`). Two threats, two figures:

* **the server**, which knows who took part in each round: no amplification by sampling. A
  client is protected by the composition of the rounds whose sum held its vector, so the run's
  figure composes, for every client, the curves of its rounds and takes the pointwise maximum
  over clients (an upper bound on every client's curve, hence on its ε). With a trusted
  aggregator (``central``), the server sees the noiseless sum: no bound (``None``).
* **anyone who sees only the released models** (other clients, the public): the cohort is a
  Poisson sample of rate ``q`` that they never see, so each round's curve is amplified
  (:func:`~fedrec.privacy.rdp.poisson_subsampled_rdp`) and every round is composed. The sampler
  of a DP run is the matching Poisson sampler
  (:func:`fedrec.federation.runtime.poisson_cohort`). "Never see" is an assumption: drawn from
  a public seed, the cohorts are known to whoever holds the run's config, and against such an
  observer the server-side figure is the one that holds.

ε at ``δ`` from RDP (the formal figure for both mechanisms). For the central Gaussian the PLD
figure of dp-accounting (tight) is given too, and the smaller of the two is its ``epsilon``; for
the distributed Skellam sum, the PLD of a Gaussian of the same minimum variance is given as a
cross-check only (PLD of the Skellam sum is not computed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np

from fedrec.errors import ConfigError
from fedrec.privacy.accounting import PrivacyAccountant, Release
from fedrec.privacy.rdp import ORDERS, poisson_subsampled_rdp, rdp_epsilon

__all__ = ["UserLevelAccountant", "solve_noise_multiplier"]


class UserLevelAccountant:
    """The rounds of a run, each a curve (keyed, so that equal rounds are computed once) and the
    clients whose vectors its sum held; :meth:`report` gives both threats' figures."""

    def __init__(self, mechanism: str, sampling_rate: float,
                 curve_of: Callable[[Hashable], np.ndarray]) -> None:
        if mechanism not in ("distributed", "central"):
            raise ConfigError(f"unknown DP aggregate {mechanism!r}")
        if not 0 < sampling_rate <= 1:
            raise ConfigError(f"sampling rate must be in (0, 1], got {sampling_rate}")
        self.mechanism = mechanism
        self.q = float(sampling_rate)
        self.curve_of = curve_of
        self.rounds: Counter[Hashable] = Counter()
        self.per_client: dict[Any, Counter[Hashable]] = {}
        self._curves: dict[Hashable, np.ndarray] = {}
        self._amplified: dict[Hashable, np.ndarray] = {}

    def record(self, key: Hashable, clients: Iterable[Any]) -> None:
        """One released aggregate, of curve ``curve_of(key)``, over ``clients``' vectors."""
        self.rounds[key] += 1
        for c in clients:
            self.per_client.setdefault(c, Counter())[key] += 1

    def _curve(self, key: Hashable) -> np.ndarray:
        if key not in self._curves:
            self._curves[key] = np.asarray(self.curve_of(key), dtype=np.float64)
        return self._curves[key]

    def server_curve(self) -> np.ndarray:
        """Pointwise maximum over clients of the composition of their rounds' curves."""
        worst = np.zeros(len(ORDERS))
        for counts in self.per_client.values():
            worst = np.maximum(worst, sum((n * self._curve(k) for k, n in counts.items()),
                                          np.zeros(len(ORDERS))))
        return worst

    def released_curve(self) -> np.ndarray:
        total = np.zeros(len(ORDERS))
        for key, n in self.rounds.items():
            if key not in self._amplified:
                self._amplified[key] = poisson_subsampled_rdp(self._curve(key), self.q)
            total += n * self._amplified[key]
        return total

    def participations_max(self) -> int:
        return max((sum(c.values()) for c in self.per_client.values()), default=0)

    def report(self, delta: float, gaussian_reference: float | None = None) -> dict[str, Any]:
        """Both threats' ε at ``delta`` (RDP) and, with ``gaussian_reference`` (the noise
        multiplier of the Gaussian with the aggregate's minimum variance), the PLD figures of
        that Gaussian: the central mechanism's own, the distributed one's cross-check."""
        most = self.participations_max()
        released = rdp_epsilon(self.released_curve(), delta)
        server = (rdp_epsilon(self.server_curve(), delta)
                  if self.mechanism == "distributed" else None)
        out: dict[str, Any] = {
            "epsilon_server_rdp": server,
            "epsilon_released_model_rdp": released,
            "participations_max": most,
            "rounds_released": int(sum(self.rounds.values())),
            "sampling_rate": self.q,
        }
        if gaussian_reference is not None and self.rounds:
            server_pld = _gaussian_pld(gaussian_reference, 1.0, most, delta) if most else 0.0
            released_pld = _gaussian_pld(gaussian_reference, self.q,
                                         int(sum(self.rounds.values())), delta)
            name = "pld" if self.mechanism == "central" else "pld_gaussian_reference"
            out[f"epsilon_server_{name}"] = server_pld if self.mechanism == "distributed" else None
            out[f"epsilon_released_model_{name}"] = released_pld
        return out


def _gaussian_pld(noise_multiplier: float, q: float, count: int, delta: float) -> float:
    acct = PrivacyAccountant()
    acct.record_release(Release("gaussian", noise_multiplier, q, count))
    return acct.epsilon_pld(delta)


def solve_noise_multiplier(target_epsilon: float, epsilon_of: Callable[[float], float],
                           low: float = 0.05, high: float = 1000.0) -> float:
    """The smallest noise multiplier ``z`` (to 0.1%) with ``epsilon_of(z) <= target_epsilon``;
    ``epsilon_of`` must be non-increasing in ``z``. A one-line :class:`ConfigError` when even
    ``high`` does not reach the target."""
    if not target_epsilon > 0:
        raise ConfigError(f"target_epsilon must be > 0, got {target_epsilon}")
    if epsilon_of(high) > target_epsilon:
        raise ConfigError(f"no noise multiplier up to {high:g} reaches target_epsilon "
                          f"{target_epsilon:g} in these rounds (epsilon {epsilon_of(high):.3g} "
                          "there): raise the target, or train fewer rounds or sample fewer "
                          "clients per round")
    if epsilon_of(low) <= target_epsilon:
        return low
    while high / low > 1.001:
        mid = (low * high) ** 0.5
        if epsilon_of(mid) <= target_epsilon:
            high = mid
        else:
            low = mid
    return high
