"""The contract every federated method meets, and how a method states the slice it is checked on.

The conformance suite (``tests/conformance``) runs every registered federated method through
the same checks, with no test code of the method's own:

``privacy_boundary``
    Changing one party's data changes only that party's messages: another party's message may
    differ only after one it received differed (what crosses is a message the runtime meters
    and observers see, never a read of another party's data).
``flower``
    The Flower runtime (the real ServerApp and ClientApp code over an in-memory grid) gives
    what the simulator gives: metrics and training statistics within
    :attr:`Contract.flower_tolerance`, ledgers exactly.
``resume``
    Stopping after a round and resuming from the checkpoint gives the uninterrupted run, bit
    for bit.
``public_meta``
    The builder works from the dataset's public metadata alone (what a Flower ServerApp
    builds from), and the server it builds starts in the state it starts in from the data.
``no_update``
    A round in which no update arrives (every client dropped out, or every update rejected)
    stops with the runtime's one error, :class:`~fedrec.errors.NoUpdateError`.
``privacy_report``
    The privacy report (:meth:`~fedrec.algorithms.base.ServerLogic.privacy`) names every kind
    of message the server receives (:meth:`~fedrec.algorithms.base.ServerLogic.receives`),
    and results.json gives it back (``PrivacyReport.from_json(report.to_json()) == report``)
    in lines of at most 100 characters.
``dp``
    A run with the user-level DP aggregate (:mod:`fedrec.federation.dp_sum`) sends the server
    no clear value derived from client data (for methods whose config has ``dp``).
``poisoning``
    Malicious clients (:mod:`fedrec.attacks.poisoning`) are ordinary parties: metered and
    observed, outside the evaluation, leaving a benign client's messages unchanged (for
    methods whose config has ``poisoning``).

A method that cannot meet a check says so in its :class:`Contract` (``exempt``), with the
reason; the suite prints the declared exemptions. A method's
:class:`~fedrec.algorithms.base.AlgorithmSpec` carries the default :class:`Contract` unless it
gives its own, so a new method is checked with nothing added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The checks of the conformance suite, by name (see the module docstring).
CHECKS = ("privacy_boundary", "flower", "resume", "public_meta", "no_update", "privacy_report",
          "dp", "poisoning")


@dataclass(frozen=True)
class Contract:
    """How the conformance suite runs one method: on the first ``max_users`` users of
    ``dataset`` (None: all of it), with ``settings`` over the method's defaults for that
    dataset (the suite itself sets the rounds), and the tolerances and exemptions the method
    declares, each with its reason."""

    dataset: str = "ml-100k"
    max_users: int | None = 40
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: Largest relative difference of a metric or training statistic between Flower and the
    #: simulator (0: equal to the last bit).
    flower_tolerance: float = 0.0
    flower_tolerance_reason: str = ""
    #: Largest relative difference allowed in another party's message when one party's data
    #: changes (0: bit-identical), for a simulator that batches a cohort's computation.
    boundary_tolerance: float = 0.0
    boundary_tolerance_reason: str = ""
    #: Other settings the privacy-boundary check also runs with (over ``settings``): protocol
    #: paths the contract's settings do not take (implicit feedback, a user fit, a schedule).
    boundary_variants: tuple[Mapping[str, Any], ...] = ()
    #: Settings of a DP run (over ``settings``), for a method whose config has ``dp``.
    dp_settings: Mapping[str, Any] = field(default_factory=dict)
    #: Checks the method does not meet: ``{check: reason}``.
    exempt: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.exempt) - set(CHECKS)
        if unknown:
            raise TypeError(f"exempt from unknown checks {sorted(unknown)}; checks: "
                            f"{', '.join(CHECKS)}")
        if self.flower_tolerance and not self.flower_tolerance_reason:
            raise TypeError("a Flower tolerance needs its reason (flower_tolerance_reason)")
        if self.boundary_tolerance and not self.boundary_tolerance_reason:
            raise TypeError("a boundary tolerance needs its reason (boundary_tolerance_reason)")
        if any(not str(reason).strip() for reason in self.exempt.values()):
            raise TypeError("every exemption needs its reason")
