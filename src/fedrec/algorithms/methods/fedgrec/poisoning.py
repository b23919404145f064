"""FedGRec's side of a poisoning experiment (:mod:`fedrec.attacks.poisoning`): how a malicious
client speaks FedGRec's protocol. It downloads the tables every client downloads (``download:
full``), runs its own Steps 2-3 on its profile, and replaces the item-row block of its Step 4
upload (the change of ``e_t^0`` on the rows it trained, and the rows-trained indicator) with
the attack's rows; its loss, latent-contribution and (under ``dp``) degree blocks are what its
own code computes for its profile. The upload then goes through the client's own code, so it is
clipped and fixed-point encoded to ``secagg_clip`` per coordinate (in clear or into the secure
sum), or, under ``dp``, bounded to ``dp_clip`` in L2 with the rest of its vector.

Scores, as :class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter` states them, are ``p_u .
q_i`` with no bias; ``q`` is the ``alpha``-combined table ``(e_t^0 + ... + e_t^K) / (K + 1)``
FedGRec ranks with. An approximation, in two ways: the attack moves only ``e_t^0`` (the latent
rows ``e_t^k`` of a target are the users' sums; a step ``delta`` on ``e_t^0`` moves ``q_t`` by
``alpha delta``, the same direction), and the users it approximates by the popular items' ``q``
rank with their own ``e_u^0`` (fitted to the tables before ranking, ``user_fit_steps``) and
latent embeddings. FedGRec's upload is a change, which the server *adds* (``e_t^0 +=
server_lr x`` the per-row mean over the clients that sent the row), so a gradient ``g`` of the
attack is sent as the change ``-g``, and a client's own change ``delta`` is the gradient
``-delta``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedrec.algorithms.methods.fedgrec.client import FedGRecClient, LocalRound, full_tables
from fedrec.algorithms.methods.fedgrec.steps import TRAIN
from fedrec.attacks.poisoning.clients import ItemTableAdapter, RowUpdate
from fedrec.core.codec import Payload
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import Outgoing, PartyContext


class FedGRecItemTable(ItemTableAdapter):
    """FedGRec's item table and item-row upload (module docstring). :meth:`benign` keeps each
    malicious client's Steps 2-3 until :meth:`upload` sends its Step 4 from them."""

    train_step = TRAIN

    def __init__(self, client: FedGRecClient) -> None:
        self.client = client
        self.rounds: dict[PartyId, tuple[LocalRound, int]] = {}

    def item_table(self, payload: Payload) -> tuple[torch.Tensor, torch.Tensor | None]:
        tables = full_tables(payload, torch.device("cpu"))
        every = torch.arange(self.client.num_items)
        return self.client.conv.combine(tables.item_layers(every)), None

    def benign(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[RowUpdate]:
        local = self.client.local_round(ctxs, full_tables(payload, ctxs[0].device),
                                        [payload] * len(ctxs))
        out: list[RowUpdate] = []
        for i, ctx in enumerate(ctxs):
            self.rounds[ctx.party] = (local, i)
            ids, delta = local.item_rows(i)
            out.append((ids, -delta, None))
        return out

    def upload(self, ctx: PartyContext, payload: Payload, ids: torch.Tensor,
               grad_q: torch.Tensor, grad_b: torch.Tensor | None, clip: bool = True
               ) -> Outgoing:
        local, i = self.rounds.pop(ctx.party)
        rows = (ids.detach().cpu().long(), -grad_q.detach().cpu().double())
        return self.client.client_upload(ctx, payload, local, i, rows, clip=clip)


def fedgrec_item_table(client: FedGRecClient) -> FedGRecItemTable:
    """The adapter of :attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning`."""
    return FedGRecItemTable(client)
