"""Model-poisoning updates for item-table recommenders (:mod:`fedrec.attacks.poisoning`).

Both attacks speak through the method's :class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter`
and are scaled by :class:`~fedrec.attacks.poisoning.clients.ModelPoisoning` to ``poisoning_scale``
times the attacker's own benign update norm.

**Crafted promotion** (after A-hum, Rong et al., IJCAI 2022, and FedRecAttack, Rong et al., ICDE
2022). Scores are ``s(u, i) = p_u . q_i + b_i``. The attacker knows the item table ``(q, b)`` the
server sends, not the users' factors: it *mines hard users*, ``n`` synthetic factors
``u ~ N(0, sigma^2 I)`` (``sigma`` the item factors' standard deviation) moved by a few gradient
steps that lower each target's margin ``s(u, t) - s_K(u)`` (``s_K``: the ``K``-th best score of
``u`` over the other items), i.e. users the targets do not yet reach. Its update is the gradient
of the promotion loss over them,

``L = sum_u sum_t softplus(s_K(u) - s(u, t))``,  so
``dL/dq_t = -sum_u w_ut u``,  ``dL/db_t = -sum_u w_ut``,  ``w_ut = sigmoid(s_K(u) - s(u, t))``,

on the target rows only: a server that descends it raises every target's score for the users
it is below the top ``K`` of.

**Untargeted** (sign flipping, as in Fang et al., USENIX Security 2020): the attacker's own
benign update, negated.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedrec.attacks.poisoning.clients import ItemTableAdapter, ModelPoisoning, RowUpdate
from fedrec.core.codec import Payload
from fedrec.federation.runtime import PartyContext

#: Synthetic users mined per malicious client and round, and the mining's gradient steps.
HARD_USERS = 256
MINING_STEPS = 5
#: The rank a target must reach (the top ``K`` the exposure is measured at).
PROMOTE_TO = 10


def hard_users(q: torch.Tensor, b: torch.Tensor | None, targets: torch.Tensor, count: int,
               steps: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """``count`` synthetic user factors for whom the targets rank low (module docstring)."""
    sigma = float(q.std()) or 1.0
    users = torch.randn(count, q.shape[1], generator=gen, dtype=q.dtype) * sigma
    radius = users.norm(dim=1, keepdim=True)
    for _ in range(steps):
        users.requires_grad_(True)
        margin = _target_margin(users, q, b, targets, k)
        (grad,) = torch.autograd.grad(margin.sum(), users)
        with torch.no_grad():
            users = users - sigma * grad / grad.norm(dim=1, keepdim=True).clamp(min=1e-12)
            users = users * radius / users.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return users.detach()


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
    set of mined users (the first one's draw): one attacker, one estimate of the users."""

    def __init__(self, adapter: ItemTableAdapter, scale: float, targets: torch.Tensor) -> None:
        super().__init__(adapter, scale)
        self.targets = targets

    def craft(self, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
              own: Sequence[RowUpdate]) -> list[RowUpdate]:
        q, b = self.adapter.item_table(payloads[0])
        q = q.detach().double()
        b = None if b is None else b.detach().double()
        users = hard_users(q, b, self.targets, HARD_USERS, MINING_STEPS, PROMOTE_TO,
                           ctxs[0].generator("hard-users"))
        gq, gb = promotion_gradient(q, b, self.targets, users, PROMOTE_TO)
        dtype = own[0][1].dtype
        return [(self.targets, gq.to(dtype), None if gb is None else gb.to(dtype))
                for _ in ctxs]


class Untargeted(ModelPoisoning):
    """Each malicious client's own update negated (module docstring)."""

    def craft(self, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
              own: Sequence[RowUpdate]) -> list[RowUpdate]:
        return [(ids, -gq, None if gb is None else -gb) for ids, gq, gb in own]
