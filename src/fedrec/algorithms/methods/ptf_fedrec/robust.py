"""PTF-FedRec's server against malicious clients (:mod:`fedrec.attacks.poisoning`).

The server sums no update: it trains its hidden model on the uploaded ``(user, item, score)``
rows as soft labels, over the graph of the latest uploads. The defenses of
:mod:`fedrec.federation.aggregation` estimate a *sum* of updates and do not apply as such. What
does apply, on the uploads of one round:

* **range** (always on): every uploaded score is clamped to ``[0, 1]``, the range of the
  probability it stands for. An honest client's score is a sigmoid, so this never changes one;
  it bounds what one malicious row weighs in the graph and the loss.
* **item_trimmed** (``score_defense``): per item ``i`` with ``m_i`` uploaded scores this round,
  the ``k_i = floor(score_trim * m_i)`` highest and the ``k_i`` lowest are dropped (ties broken
  by the upload's order) before the server trains on, and builds its graph from, the round's
  uploads. Guarantee, item by item: every kept score of item ``i`` lies within the range of its
  benign scores as long as at most ``k_i`` of its ``m_i`` contributors are malicious (the
  trimmed mean's argument, Yin et al., ICML 2018, applied to the rows the model trains on).
  Known weakness, stated plainly: a cold target uploaded by few benign clients is held by the
  attackers, who are then more than ``k_i`` of its contributors, and every score they send is
  kept; and an item with fewer than ``1 / score_trim`` contributors trims nothing.
"""

from __future__ import annotations

import torch

from fedrec.algorithms.ncf_common import rank_within


def item_trim_mask(items: torch.Tensor, scores: torch.Tensor, fraction: float) -> torch.Tensor:
    """Which of one round's uploaded ``(item, score)`` rows an ``item_trimmed`` server keeps
    (module docstring): per item, all but its ``floor(fraction * m_i)`` highest and lowest
    scores. ``fraction`` 0 keeps every row."""
    if len(items) == 0 or fraction <= 0:
        return torch.ones(len(items), dtype=torch.bool)
    _, rank = rank_within(items, scores.double())  # rank within the item, ascending score
    count = torch.bincount(items)[items]
    k = torch.floor(fraction * count.double()).long()
    return (rank >= k) & (rank < count - k)
