"""A run's choice of defense (:mod:`.defense`), as options a method's config inherits
(:class:`DefenseOptions`) when its server aggregates through :func:`~.defense.robust_sum`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedrec.config import RunConfig, check_choice, option
from fedrec.federation.aggregation.defense import DEFENSES, check_defense


@dataclass
class DefenseOptions(RunConfig):
    """The defense and its parameters (each read by the defenses that take it)."""

    defense: str = option("none", "how the server aggregates the clients' updates: none (the "
                                  "sum) | norm_bound | median | trimmed_mean | krum | "
                                  "item_median | item_trimmed_mean (fedrec.federation."
                                  "aggregation)")
    defense_bound: float = option(0.0, "norm_bound: L2 bound of a client's update")
    defense_beta: float = option(0.1, "trimmed means: the fraction dropped at each end")
    defense_f: int = option(0, "krum: the attackers it tolerates (n > 2f + 2)")
    defense_m: int = option(0, "krum: the updates it keeps (0: n - f)")
    defense_bound_rows: bool = option(False, "per-item rules: first bound each sent row to "
                                             "the cohort's median row norm")

    def defense_params(self) -> dict[str, Any]:
        """The parameters :func:`~.defense.check_defense` takes for :attr:`defense`."""
        given = {"bound": self.defense_bound or None, "beta": self.defense_beta,
                 "f": self.defense_f, "m": self.defense_m or None,
                 "bound_rows": self.defense_bound_rows}
        return {p.name: given[p.name] for p in DEFENSES[self.defense].params}

    def check_defense(self, *, secure: bool, cohort: int) -> dict[str, Any]:
        """:func:`~.defense.check_defense` of this run's choice: a one-line ConfigError for a
        defense the run's mode cannot use, Krum with too few clients, a bad parameter."""
        return check_defense(self.defense, secure=secure, cohort=cohort,
                             params=self.defense_params())

    def validate(self) -> None:
        super().validate()
        check_choice("defense", self.defense, DEFENSES)
