"""FedGNN's side of a poisoning experiment (:mod:`fedrec.attacks.poisoning`): how a malicious
client speaks FedGNN's protocol.

It downloads the item-embedding table and the GNN weights like any client, and uploads a
crafted update of item-embedding rows in the run's mode: in clear (``{"items", "grad_items",
"grad_model"}``, without pseudo items, clipping or noise: no server can tell an unclipped
Laplace-noised value from a noised one), or dense into the secure sum or the DP aggregate
(whose encoding and clipping bound it as any client's). Its GNN-weight gradient is its own
profile's, as its benign code would send it: the attacks craft item rows only. In every other
step (the graph expansion's tokens and user embedding to the third party, the secure sum's
rounds) it runs FedGNN's own client code, so it follows the protocol there.

The crafted attack (:class:`~fedrec.attacks.poisoning.CraftedPromotion`) scores ``u . q_i +
b_i`` with ``q`` the item-embedding table (and ``b`` its bias column with ``bias``); FedGNN
ranks by ``h_u . h_i + b_i`` with ``h`` the GNN layer's output on the embeddings, so the attack
promotes the targets' raw embeddings, an approximation of what FedGNN recommends by.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedrec.algorithms.methods.fedgnn.client import FedGNNClient
from fedrec.algorithms.methods.fedgnn.steps import TRAIN
from fedrec.attacks.poisoning.clients import ItemTableAdapter, RowUpdate
from fedrec.core.codec import Payload
from fedrec.federation.runtime import Outgoing, PartyContext


class FedGNNItemTable(ItemTableAdapter):
    """FedGNN's item-embedding table and upload (module docstring)."""

    train_step = TRAIN

    def __init__(self, client: FedGNNClient) -> None:
        self.client = client
        self.dim = client.cfg.dim
        #: Each malicious client's GNN-weight gradient (and loss, sent without LDP) of the
        #: round, from :meth:`benign`, for its :meth:`upload`.
        self.own: dict[int, tuple[torch.Tensor, float | None]] = {}

    def _split(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(embedding columns, bias column or None)`` of item rows."""
        return rows[:, : self.dim], rows[:, self.dim] if self.client.cfg.bias else None

    def item_table(self, payload: Payload) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self._split(torch.as_tensor(payload["items"]).float())

    def benign(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[RowUpdate]:
        """What each client's code sends in clear (after pseudo items, clip and noise); in the
        secure-sum and DP modes its rated rows before the mode's clipping and noise. Advances
        the clients' user embeddings as their benign round would."""
        client = self.client
        for c in ctxs:  # the neighbours the third party routed (FedGNNClient.handle_cohort)
            client.read_neighbours(c)
        clear = client.dp is None and client.cfg.item_privacy == "pseudo"
        out = []
        for ctx, (g_model, ids, g_items, loss) in zip(ctxs, client.gradients(ctxs, payload),
                                                      strict=True):
            if clear:
                msg = client.protect(ctx, g_model, ids, g_items, loss)
                g_model, ids, g_items = msg["grad_model"], msg["items"], msg["grad_items"]
                loss = msg.get("loss")
            self.own[ctx.party] = (g_model.detach(), loss)
            out.append((ids, *self._split(g_items.detach())))
        return out

    def upload(self, ctx: PartyContext, payload: Payload, ids: torch.Tensor,
               grad_q: torch.Tensor, grad_b: torch.Tensor | None, clip: bool = True
               ) -> Outgoing:
        client = self.client
        g_model, loss = self.own.pop(ctx.party)
        rows = grad_q.float()
        if client.cfg.bias:
            rows = torch.cat([rows, (torch.zeros(len(ids)) if grad_b is None
                                     else grad_b.float())[:, None]], 1)
        if client.dp is not None:
            x = client.dense_gradient(g_model, ids, rows).double().numpy()
        elif client.cfg.item_privacy == "secure_sum":
            x = client.with_counts(client.dense_gradient(g_model, ids, rows), ids)
        else:
            x = {"items": ids, "grad_items": rows, "grad_model": g_model}
            if loss is not None:
                x["loss"] = loss
        return client.send([ctx], [x], payload, clip=clip)[0]


def fedgnn_item_table(client: FedGNNClient) -> FedGNNItemTable:
    """The adapter of :attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning`."""
    return FedGNNItemTable(client)
