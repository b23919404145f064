"""FCF's options (:mod:`fedrec.algorithms.methods.fcf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.item_gradient import ItemGradientConfig
from fedrec.algorithms.mf_common import implicit_option
from fedrec.attacks.poisoning import PoisoningOptions
from fedrec.config import check_choice
from fedrec.data.implicit import IMPLICIT_CHOICES
from fedrec.errors import ConfigError
from fedrec.federation.aggregation import DefenseOptions
from fedrec.federation.dp_sum import DPOptions, check_not_with_secure_aggregation, dp_on


@dataclass
class FCFConfig(ItemGradientConfig, DPOptions, PoisoningOptions, DefenseOptions):
    """FCF's options (:class:`~fedrec.algorithms.item_gradient.ItemGradientConfig`, which FedMF
    shares), the DP aggregate's (:class:`~fedrec.federation.dp_sum.DPOptions`) and a
    poisoning experiment's (:class:`~fedrec.attacks.poisoning.PoisoningOptions`), and the
    server's defense against malicious clients
    (:class:`~fedrec.federation.aggregation.DefenseOptions`)."""

    implicit: str = implicit_option()

    def validate(self) -> None:
        super().validate()
        check_choice("implicit", self.implicit, IMPLICIT_CHOICES)
        check_not_with_secure_aggregation(self)
        secure = self.secure_aggregation or dp_on(self)
        if secure and self.defense != "none":
            # A server that sees only the sum cannot apply a defense; the DP aggregate's
            # dp_clip is the one norm bound of a secure FCF round, and the clients apply it.
            raise ConfigError(f"defense {self.defense} needs each client's update in clear: "
                              "FCF with secure_aggregation or dp takes defense none (dp_clip "
                              "bounds each client's update)")

