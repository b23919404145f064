"""FCF's side of a poisoning experiment (:mod:`fedrec.attacks.poisoning`): how a malicious
client speaks FCF's protocol (the item factors and biases it downloads, the item-row gradients
it uploads, in clear or into the DP aggregate or the secure sum)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedrec.algorithms.methods.fcf.client import FCFClient
from fedrec.algorithms.methods.fcf.steps import TRAIN
from fedrec.attacks.poisoning.clients import ItemTableAdapter, RowUpdate
from fedrec.core.codec import Payload
from fedrec.federation.runtime import Outgoing, PartyContext


class FCFItemTable(ItemTableAdapter):
    """FCF's item table and upload (:class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter`)."""

    train_step = TRAIN

    def __init__(self, client: FCFClient) -> None:
        self.client = client

    def item_table(self, payload: Payload) -> tuple[torch.Tensor, torch.Tensor | None]:
        q = torch.as_tensor(payload["item_factors"])
        b = torch.as_tensor(payload["item_bias"]) if self.client.explicit else None
        return q, b

    def benign(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[RowUpdate]:
        q, b = self.client.item_parameters(payload, ctxs[0])
        uploads = self.client.local.train(self.client.cfg, ctxs, q, b)
        return [(u["items"], u["grad_q"].detach(), u["grad_b"].detach() if "grad_b" in u
                 else None) for u in uploads]

    def upload(self, ctx: PartyContext, payload: Payload, ids: torch.Tensor,
               grad_q: torch.Tensor, grad_b: torch.Tensor | None, clip: bool = True
               ) -> Outgoing:
        msg: Payload = {"items": ids, "grad_q": grad_q}
        if self.client.explicit:
            msg["grad_b"] = (grad_b if grad_b is not None
                             else torch.zeros(len(ids), dtype=grad_q.dtype))
        return self.client.send([ctx], [msg], payload, clip=clip)[0]


def fcf_item_table(client: FCFClient) -> FCFItemTable:
    """The adapter of :attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning`."""
    return FCFItemTable(client)
