"""FCF's options (:mod:`fedrec.algorithms.methods.fcf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.item_gradient import ItemGradientConfig
from fedrec.algorithms.mf_common import implicit_option
from fedrec.config import check_choice
from fedrec.data.implicit import IMPLICIT_CHOICES
from fedrec.errors import ConfigError
from fedrec.federation.dp_sum import DPOptions


@dataclass
class FCFConfig(ItemGradientConfig, DPOptions):
    """FCF's options (:class:`~fedrec.algorithms.item_gradient.ItemGradientConfig`, which FedMF
    shares) and the DP aggregate's (:class:`~fedrec.federation.dp_sum.DPOptions`)."""

    implicit: str = implicit_option()

    def validate(self) -> None:
        super().validate()
        check_choice("implicit", self.implicit, IMPLICIT_CHOICES)
        if self.dp != "none" and self.secure_aggregation:
            raise ConfigError("dp and secure_aggregation are exclusive: dp=distributed masks "
                              "its noised uploads with secure aggregation itself")

