"""FCF's options (:mod:`fedrec.algorithms.fcf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.item_gradient import ItemGradientConfig
from fedrec.algorithms.mf_common import implicit_option
from fedrec.config import check_choice
from fedrec.data.implicit import IMPLICIT_CHOICES


@dataclass
class FCFConfig(ItemGradientConfig):
    """FCF's options (:class:`~fedrec.algorithms.item_gradient.ItemGradientConfig`, which FedMF
    shares)."""

    implicit: str = implicit_option()

    def validate(self) -> None:
        super().validate()
        check_choice("implicit", self.implicit, IMPLICIT_CHOICES)

