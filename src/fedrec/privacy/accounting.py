"""Composition of many noisy releases over a run: PLD, RDP and basic (pure-DP) accounting.

What is composed: every recorded :class:`Release` is ``count`` runs of one mechanism
(Laplace or Gaussian, noise given as ``noise_multiplier = noise scale / sensitivity``),
each optionally on a Poisson subsample that includes the protected unit with probability
``sampling_probability``. Releases are adaptive compositions (each may depend on earlier
outputs).

Neighbouring relation: add/remove one unit (dp-accounting's ``ADD_OR_REMOVE_ONE``); the unit is
whatever the sensitivity was computed for, e.g. one client for user-level DP in federated
learning. Without subsampling, a shifted Laplace/Gaussian has the same privacy loss under
any relation whose sensitivity was used, so the figures then also hold for replace-one with the
replace-one sensitivity; the amplification by subsampling is only valid for add/remove.

Guarantees, each an upper bound on the ε of the whole run at the given δ:

* ``epsilon_pld``: privacy loss distributions (Koskela et al. 2020; Google dp-accounting's
  ``PLDAccountant``, pessimistic discretisation), nearly tight.
* ``epsilon_rdp``: Rényi DP (Mironov 2017; Mironov et al. 2019 for the subsampled Gaussian)
  converted to (ε, δ); looser than PLD, kept as a cross-check. dp-accounting has no RDP bound
  for a Poisson-subsampled Laplace, so then it is not available.
* ``epsilon_basic``: pure-DP basic composition, only when every release is Laplace:
  ``ε = Σ count_i · ε_i`` with ``ε_i = 1/noise_multiplier_i`` and, for sampling probability
  ``q < 1``, the amplified ``ε_i' = ln(1 + q(e^{ε_i} - 1))`` (Li, Qardaji & Su 2012). Holds at
  ``δ = 0``.

:meth:`PrivacyAccountant.report` gives each and, as ``epsilon``, the smallest of them (each is a
valid bound at ``δ``), naming its method.

Where PLD is not computed: a Laplace release whose own privacy loss exceeds
:data:`PLD_MAX_LOSS` (its ε, ``1/noise_multiplier``). dp-accounting discretises the privacy
loss on a grid of step 1e-4 over ``[-ε, ε]``, so building one such PLD costs time and memory
in proportion to ε. Measured with dp-accounting 0.6.0 on one core of a shared machine
(``python bench/bench_pld_large_epsilon.py``, two runs): one release at ε 50 takes 10-16 s, at
ε 200 41-77 s, at ε 1000 it did not finish in 100 s; a grid coarsened to ε · 1e-4 returns
``inf`` for one release at ε 1000 or 71,000 (the size of a FedGNN upload) and fails
(``IndexError``) for 122 releases at ε 71,000. :meth:`epsilon_pld` then raises
:class:`PLDInfeasible` and the report gives basic composition, which loses little there: for
Laplace releases at large ε the privacy loss of each is near its maximum most of the time
(measured by the same script: 100 releases at ε 30 and at ε 50 compose by PLD to
``100 ε - 39.5``, 1.3% and 0.8% below basic composition, at δ 1e-5).

Local DP composes per client: :func:`worst_client_accountant` accounts for the client that took
part in the most rounds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import dp_accounting
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from fedrec.errors import ConfigError
from fedrec.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = [
    "PLD_MAX_LOSS",
    "AccountantReport",
    "PLDInfeasible",
    "PrivacyAccountant",
    "Release",
    "worst_client_accountant",
]

MechanismKind = Literal["laplace", "gaussian"]

#: The largest ε of one Laplace release for which PLD accounting is attempted (module docstring).
PLD_MAX_LOSS = 50.0


class PLDInfeasible(ValueError):
    """PLD accounting is not computed for these releases (module docstring: why)."""


@dataclass(frozen=True)
class Release:
    """``count`` releases of one mechanism, each on a Poisson subsample with rate ``q``."""

    mechanism: MechanismKind
    noise_multiplier: float
    sampling_probability: float = 1.0
    count: int = 1

    def __post_init__(self) -> None:
        if self.mechanism not in ("laplace", "gaussian"):
            raise ConfigError(f"unknown mechanism {self.mechanism!r}; use 'laplace' or 'gaussian'")
        nm = float(self.noise_multiplier)
        if not nm > 0.0 or math.isinf(nm):
            raise ConfigError(f"noise multiplier must be a finite number > 0, got {nm}")
        q = float(self.sampling_probability)
        if not 0.0 < q <= 1.0:
            raise ConfigError(f"sampling probability must be in (0, 1], got {q}")
        if int(self.count) != self.count or self.count < 1:
            raise ConfigError(f"release count must be a positive integer, got {self.count}")
        object.__setattr__(self, "noise_multiplier", nm)
        object.__setattr__(self, "sampling_probability", q)
        object.__setattr__(self, "count", int(self.count))

    def dp_event(self) -> dp_accounting.DpEvent:
        """The dp-accounting event of all ``count`` releases."""
        event: dp_accounting.DpEvent
        if self.mechanism == "laplace":
            event = dp_accounting.LaplaceDpEvent(self.noise_multiplier)
        else:
            event = dp_accounting.GaussianDpEvent(self.noise_multiplier)
        if self.sampling_probability < 1.0:
            event = dp_accounting.PoissonSampledDpEvent(self.sampling_probability, event)
        return dp_accounting.SelfComposedDpEvent(event, self.count)

    def pure_epsilon(self) -> float | None:
        """Pure-DP ε of ONE release (amplified by subsampling), None for Gaussian."""
        if self.mechanism != "laplace":
            return None
        eps = 1.0 / self.noise_multiplier
        q = self.sampling_probability
        return eps if q == 1.0 else math.log1p(q * math.expm1(eps))


@dataclass(frozen=True)
class AccountantReport:
    """Composed (ε, δ) of a run; a field is None where that method does not apply (or, for PLD,
    is not computed: ``pld_note`` says why). ``epsilon`` is the smallest bound, from
    ``method``."""

    delta: float
    epsilon_pld: float | None
    epsilon_rdp: float | None
    epsilon_basic: float | None
    epsilon: float
    method: str
    pld_note: str | None = None


class PrivacyAccountant:
    """Records releases and reports the composed (ε, δ) of the run (see module docstring)."""

    neighboring_relation = "add_or_remove_one"

    def __init__(self) -> None:
        self._releases: list[Release] = []

    @property
    def releases(self) -> tuple[Release, ...]:
        return tuple(self._releases)

    def record(
        self,
        mechanism: LaplaceMechanism | GaussianMechanism,
        *,
        sampling_probability: float = 1.0,
        count: int = 1,
    ) -> Release:
        """Record ``count`` releases of ``mechanism`` (e.g. one per round)."""
        if not isinstance(mechanism, LaplaceMechanism | GaussianMechanism):
            raise ConfigError(f"cannot account for mechanism {type(mechanism).__name__}")
        kind: MechanismKind = "laplace" if isinstance(mechanism, LaplaceMechanism) else "gaussian"
        return self.record_release(Release(kind, mechanism.noise_multiplier,
                                           sampling_probability, count))

    def record_release(self, release: Release) -> Release:
        self._releases.append(release)
        return release

    def dp_event(self) -> dp_accounting.DpEvent:
        """The whole run as one dp-accounting event (identical releases merged)."""
        merged: Counter[tuple[MechanismKind, float, float]] = Counter()
        for r in self._releases:
            merged[(r.mechanism, r.noise_multiplier, r.sampling_probability)] += r.count
        return dp_accounting.ComposedDpEvent(
            [Release(m, nm, q, c).dp_event() for (m, nm, q), c in merged.items()]
        )

    def epsilon_pld(self, delta: float) -> float:
        """ε of the run at ``delta`` from privacy loss distributions (tight upper bound).

        Raises :class:`PLDInfeasible` when a Laplace release's own ε exceeds
        :data:`PLD_MAX_LOSS` (module docstring)."""
        delta = _check_delta(delta)
        if not self._releases:
            return 0.0
        worst = max((r.pure_epsilon() or 0.0 for r in self._releases), default=0.0)
        if worst > PLD_MAX_LOSS:
            raise PLDInfeasible(
                f"PLD not computed: one release has epsilon {worst:.4g} > {PLD_MAX_LOSS:g}, "
                "beyond what dp-accounting's discretised PLD computes in reasonable time "
                "(fedrec.privacy.accounting)")
        accountant = PLDAccountant()
        accountant.compose(self.dp_event())
        return float(accountant.get_epsilon(delta))

    def epsilon_rdp(self, delta: float) -> float:
        """ε of the run at ``delta`` from Rényi DP (upper bound, looser than PLD)."""
        delta = _check_delta(delta)
        if not self._releases:
            return 0.0
        if delta == 0.0:
            raise ConfigError("RDP accounting gives no finite epsilon at delta = 0")
        accountant = RdpAccountant()
        event = self.dp_event()
        if not accountant.supports(event):
            raise ConfigError("RDP accounting does not support Poisson-subsampled Laplace; "
                              "use epsilon_pld")
        accountant.compose(event)
        return float(accountant.get_epsilon(delta))

    def epsilon_basic(self) -> float:
        """Pure ε of the run by basic composition (δ = 0); Laplace releases only."""
        total = 0.0
        for r in self._releases:
            eps = r.pure_epsilon()
            if eps is None:
                raise ConfigError("basic pure-DP composition needs Laplace releases only")
            total += r.count * eps
        return total

    def report(self, delta: float) -> AccountantReport:
        """Every bound that applies at ``delta``, and the smallest as ``epsilon``."""
        delta = _check_delta(delta)
        pld_note = None
        try:
            pld: float | None = self.epsilon_pld(delta)
        except PLDInfeasible as e:
            pld, pld_note = None, str(e)
        rdp: float | None = None
        if pld_note is None:  # RDP meets the same blow-up where PLD does (tiny multipliers)
            try:
                rdp = self.epsilon_rdp(delta)
            except ConfigError:
                rdp = None
        try:
            basic: float | None = self.epsilon_basic()
        except ConfigError:
            basic = None
        bounds = {"pld": pld, "rdp": rdp, "basic composition (pure DP)": basic}
        method, eps = min(((m, e) for m, e in bounds.items() if e is not None),
                          key=lambda me: me[1])
        return AccountantReport(delta=delta, epsilon_pld=pld, epsilon_rdp=rdp, epsilon_basic=basic,
                             epsilon=eps, method=method, pld_note=pld_note)

    def to_dict(self, delta: float) -> dict[str, Any]:
        """JSON-ready summary: the relation, the releases and the composed ε at ``delta``."""
        return {
            "neighboring_relation": self.neighboring_relation,
            **asdict(self.report(delta)),
            "releases": [asdict(r) for r in self._releases],
        }


def worst_client_accountant(
    mechanism: LaplaceMechanism | GaussianMechanism, participations: Mapping[Any, int],
) -> PrivacyAccountant:
    """The accountant of the client that released most often: ``max(participations)`` releases
    of ``mechanism`` (``participations``: client -> rounds in which it released).

    Guarantee (local DP): a client's releases are only those of the rounds it took part in, so
    client ``c`` is protected by the composition of ``n_c`` releases; composed ε is
    non-decreasing in the number of releases of one mechanism, so every client's ε is at most
    that of ``max_c n_c`` releases. ``mechanism`` must bound every one of those releases (for
    uploads of different sizes: the largest sensitivity). Empty when nobody released.
    """
    acct = PrivacyAccountant()
    most = max(participations.values(), default=0)
    if most > 0:
        acct.record(mechanism, count=most)
    return acct


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ConfigError(f"delta must be in [0, 1), got {delta}")
    return delta
