"""The model attack of a run by its method's adapter (fedrec.attacks.poisoning.model), and the
prediction attacks' crafting (fedrec.attacks.poisoning.predictions)."""

from __future__ import annotations

import pytest
import torch

from fedrec.algorithms.methods.fcf import FCFClient, FCFConfig
from fedrec.algorithms.methods.fcf.poisoning import fcf_item_table
from fedrec.algorithms.methods.ptf_fedrec import PTFClient, PTFFedRecConfig
from fedrec.algorithms.methods.ptf_fedrec.poisoning import ptf_predictions
from fedrec.attacks.poisoning import (
    CraftedPromotion,
    InvertedPredictions,
    PromotedPredictions,
    Untargeted,
    model_attack,
)
from fedrec.attacks.poisoning.predictions import MIMIC_POPULAR
from fedrec.config import build_config

TARGETS = torch.tensor([5, 9])
BY_POPULARITY = torch.arange(100).flip(0)  # item 99 most popular


def test_the_attack_speaks_the_adapters_format(ml100k) -> None:
    ptf = ptf_predictions(PTFClient(build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k"),
                                    ml100k.num_items))
    fcf = fcf_item_table(FCFClient(build_config(FCFConfig, "fcf", "ml-100k"), ml100k))
    assert isinstance(model_attack(ptf, "crafted", 10.0, TARGETS, BY_POPULARITY),
                      PromotedPredictions)
    assert isinstance(model_attack(ptf, "untargeted", 10.0, TARGETS, BY_POPULARITY),
                      InvertedPredictions)
    assert isinstance(model_attack(fcf, "crafted", 10.0, TARGETS, BY_POPULARITY),
                      CraftedPromotion)
    assert isinstance(model_attack(fcf, "untargeted", 10.0, TARGETS, BY_POPULARITY),
                      Untargeted)
    with pytest.raises(ValueError, match="random"):
        model_attack(fcf, "random", 10.0, TARGETS, BY_POPULARITY)


def test_promotion_puts_the_targets_and_popular_items_at_the_top(ml100k) -> None:
    ptf = ptf_predictions(PTFClient(build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k"),
                                    ml100k.num_items))
    attack = PromotedPredictions(ptf, TARGETS, BY_POPULARITY)
    own = (torch.tensor([1, 5, 50, 99]), torch.tensor([0.2, 0.1, 0.7, 0.3]))
    [(items, scores)] = attack.craft([own])
    popular = BY_POPULARITY[:MIMIC_POPULAR]
    assert torch.equal(items, torch.unique(torch.cat([own[0], TARGETS, popular])))
    top = torch.isin(items, torch.cat([TARGETS, popular]))
    assert (scores[top] == 1.0).all()
    assert scores[~top].tolist() == pytest.approx([0.2, 0.7])  # items 1 and 50 as sent
    [(inv_items, inv_scores)] = InvertedPredictions(ptf).craft([own])
    assert torch.equal(inv_items, own[0])
    torch.testing.assert_close(inv_scores, 1.0 - own[1])
