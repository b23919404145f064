"""FCF's options (:mod:`fedrec.algorithms.methods.fcf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.item_gradient import ItemGradientConfig
from fedrec.algorithms.mf_common import implicit_option
from fedrec.config import check_choice
from fedrec.data.implicit import IMPLICIT_CHOICES
from fedrec.federation.dp_sum import DPOptions, check_not_with_secure_aggregation


@dataclass
class FCFConfig(ItemGradientConfig, DPOptions):
    """FCF's options (:class:`~fedrec.algorithms.item_gradient.ItemGradientConfig`, which FedMF
    shares) and the DP aggregate's (:class:`~fedrec.federation.dp_sum.DPOptions`)."""

    implicit: str = implicit_option()

    def validate(self) -> None:
        super().validate()
        check_choice("implicit", self.implicit, IMPLICIT_CHOICES)
        check_not_with_secure_aggregation(self)

