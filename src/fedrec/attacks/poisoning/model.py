"""The model-poisoning attack of a run (:mod:`fedrec.attacks.poisoning`), chosen by what the
method's adapter speaks: item-table gradients
(:class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter`: :mod:`.crafting`) or prediction
uploads (:class:`~fedrec.attacks.poisoning.predictions.PredictionAdapter`:
:mod:`.predictions`)."""

from __future__ import annotations

import torch

from fedrec.attacks.poisoning.clients import ClientAttack, ItemTableAdapter
from fedrec.attacks.poisoning.crafting import CraftedPromotion, Untargeted
from fedrec.attacks.poisoning.options import MODEL_ATTACKS
from fedrec.attacks.poisoning.predictions import (
    InvertedPredictions,
    PredictionAdapter,
    PromotedPredictions,
)

#: What a method's :attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning` makes.
Adapter = ItemTableAdapter | PredictionAdapter


def model_attack(adapter: Adapter, attack: str, scale: float, targets: torch.Tensor,
                 by_popularity: torch.Tensor, clip: bool = True) -> ClientAttack:
    """The ``attack`` (``crafted`` or ``untargeted``) in ``adapter``'s upload format:
    gradient attacks scaled to ``scale`` times the attacker's own benign norm (``clip``
    False: skipping a secure mode's client-side bound), prediction attacks on scores in
    ``[0, 1]`` (no scale: :mod:`.predictions`)."""
    if attack not in MODEL_ATTACKS:
        raise ValueError(f"{attack!r} is not a model-poisoning attack ({MODEL_ATTACKS})")
    if isinstance(adapter, PredictionAdapter):
        return (PromotedPredictions(adapter, targets, by_popularity) if attack == "crafted"
                else InvertedPredictions(adapter))
    return (CraftedPromotion(adapter, scale, targets, by_popularity, clip)
            if attack == "crafted" else Untargeted(adapter, scale, clip))
