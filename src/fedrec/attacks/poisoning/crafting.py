"""Model-poisoning updates for item-table recommenders (:mod:`fedrec.attacks.poisoning`).

Both attacks speak through the method's :class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter`
and are scaled by :class:`~fedrec.attacks.poisoning.clients.ModelPoisoning` to ``poisoning_scale``
times the attacker's own benign update norm.

**Crafted promotion** (model poisoning in the manner of FedRecAttack, Rong et al., ICDE 2022,
with PipAttack's popularity knowledge, Zhang et al., WSDM 2022, and A-hum's weighting towards the
users a target does not reach yet, Rong et al., IJCAI 2022). Scores are
``s(u, i) = p_u . q_i + b_i``. The attacker knows the item table ``(q, b)`` the server sends
and the public popularity, not the users' factors. Users rate popular items highly, so it
approximates users by the factors of the ``n`` most popular items (plus noise of the factors'
standard deviation ``sigma``): ``u_j = q_{pop_j} + sigma z_j``. Its update is the gradient of
the promotion loss over them,

``L = sum_u sum_t softplus(s_K(u) - s(u, t))``,  so
``dL/dq_t = -sum_u w_ut u``,  ``dL/db_t = -sum_u w_ut``,  ``w_ut = sigmoid(s_K(u) - s(u, t))``,

(``s_K(u)``: the ``K``-th best score of ``u`` over the other items), on the target rows only: a
server that descends it raises every target's score, most for the users whose top ``K`` it
has not reached.

**Untargeted** (sign flipping, as in Fang et al., USENIX Security 2020): the attacker's own
benign update, negated.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedrec.attacks.poisoning.clients import ItemTableAdapter, ModelPoisoning, RowUpdate
from fedrec.core.codec import Payload
from fedrec.federation.runtime import PartyContext

#: Users approximated per round (the most popular items' factors), and the rank a target must
#: reach (the top ``K`` the exposure is measured at).
APPROXIMATE_USERS = 256
PROMOTE_TO = 10


def approximate_users(q: torch.Tensor, popular: torch.Tensor, gen: torch.Generator
                      ) -> torch.Tensor:
    """The attacker's stand-ins for the users (module docstring): each ``popular`` item's
    factor plus Gaussian noise of the factors' standard deviation."""
    sigma = float(q.std()) or 1.0
    return q[popular] + torch.randn(len(popular), q.shape[1], generator=gen,
                                    dtype=q.dtype) * sigma


def _target_margin(users: torch.Tensor, q: torch.Tensor, b: torch.Tensor | None,
                   targets: torch.Tensor, k: int) -> torch.Tensor:
    """``s(u, t) - s_K(u)`` for every synthetic user and target, ``[users, targets]``."""
    scores = users @ q.T
    if b is not None:
        scores = scores + b
    others = scores.clone()
    others[:, targets] = -torch.inf
    kth = torch.topk(others, min(k, q.shape[0] - len(targets)), dim=1).values[:, -1]
    return scores[:, targets] - kth[:, None]


def promotion_gradient(q: torch.Tensor, b: torch.Tensor | None, targets: torch.Tensor,
                       users: torch.Tensor, k: int
                       ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(dL/dq_t, dL/db_t)`` of the promotion loss over ``users`` (module docstring)."""
    with torch.no_grad():
        weight = torch.sigmoid(-_target_margin(users, q, b, targets, k))  # [users, targets]
        grad_q = -(weight.T @ users)
        grad_b = -weight.sum(0) if b is not None else None
    return grad_q, grad_b


class CraftedPromotion(ModelPoisoning):
    """Promote ``targets`` (module docstring). The malicious clients of one call share one
    estimate of the users (the first one's draw): one attacker, one estimate."""

    def __init__(self, adapter: ItemTableAdapter, scale: float, targets: torch.Tensor,
                 by_popularity: torch.Tensor, clip: bool = True) -> None:
        super().__init__(adapter, scale, clip)
        self.targets = targets
        self.popular = by_popularity[:APPROXIMATE_USERS]

    def craft(self, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
              own: Sequence[RowUpdate]) -> list[RowUpdate]:
        q, b = self.adapter.item_table(payloads[0])
        q = q.detach().double()
        b = None if b is None else b.detach().double()
        users = approximate_users(q, self.popular, ctxs[0].generator("approximate-users"))
        gq, gb = promotion_gradient(q, b, self.targets, users, PROMOTE_TO)
        dtype = own[0][1].dtype
        return [(self.targets, gq.to(dtype), None if gb is None else gb.to(dtype))
                for _ in ctxs]


class Untargeted(ModelPoisoning):
    """Each malicious client's own update negated (module docstring)."""

    def craft(self, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
              own: Sequence[RowUpdate]) -> list[RowUpdate]:
        return [(ids, -gq, None if gb is None else -gb) for ids, gq, gb in own]
