"""FCF's options (:mod:`fedrec.algorithms.fcf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.item_gradient import ItemGradientConfig


@dataclass
class FCFConfig(ItemGradientConfig):
    """FCF's options (:class:`~fedrec.algorithms.item_gradient.ItemGradientConfig`, which FedMF
    shares)."""

