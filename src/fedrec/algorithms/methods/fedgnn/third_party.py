"""FedGNN's third-party matcher (:mod:`fedrec.algorithms.methods.fedgnn`): finds co-raters of
encrypted
item ids for the graph expansion."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fedrec.algorithms.methods.fedgnn.steps import EXPAND_KEY, EXPAND_MATCH
from fedrec.core.codec import Payload
from fedrec.federation.runtime import PartyContext, PartyLogic, Routed
from fedrec.federation.steps import step


class FedGNNThirdParty(PartyLogic):
    """The matcher: sees tokens and user embeddings, never item ids or the key."""

    def __init__(self, neighbours: int) -> None:
        self.neighbours = neighbours

    @step(EXPAND_MATCH)
    def match(self, ctx: PartyContext, payload: Payload) -> Routed:
        senders, tokens, embs = [], [], []
        for msg in ctx.inbox:
            if msg.step == EXPAND_KEY:
                senders.append(msg.sender)
                tokens.append(np.asarray(msg.payload["tokens"]))
                embs.append(torch.as_tensor(msg.payload["embedding"]).float())
        if not senders:
            return Routed({})
        emb = torch.stack(embs)
        owner = np.repeat(np.arange(len(senders)), [len(t) for t in tokens])
        _, inv = np.unique(np.concatenate(tokens), return_inverse=True)
        # Groups numbered by first appearance (sender order, then each sender's own order), not
        # by token value: the draws below then do not depend on the (fresh, secret) key.
        first = np.full(inv.max() + 1 if len(inv) else 0, len(inv))
        np.minimum.at(first, inv, np.arange(len(inv)))
        inv = np.argsort(np.argsort(first, kind="stable"), kind="stable")[inv]
        order = np.argsort(inv, kind="stable")
        groups = np.split(order, np.cumsum(np.bincount(inv))[:-1])
        n_max = self.neighbours
        # nb[row] = senders (cohort positions) sharing that row's token, up to n_max, random.
        nb = np.full((len(inv), n_max), -1, dtype=np.int64)
        rng = ctx.rng("neighbours")
        for g in groups:
            m = len(g)
            if m < 2:
                continue
            keys = rng.random((m, m))
            np.fill_diagonal(keys, np.inf)  # never oneself
            take = min(n_max, m - 1)
            pick = np.argsort(keys, axis=1)[:, :take]
            nb[g, :take] = owner[g][pick]
        counts_all = (nb >= 0).sum(1)
        out: dict[Any, Payload] = {}
        start = 0
        for s, sender in enumerate(senders):
            k = len(tokens[s])
            rows = nb[start : start + k]
            counts = counts_all[start : start + k]
            start += k
            width = int(counts.max()) if k else 0
            idx = torch.from_numpy(rows[:, :width])
            vecs = emb[idx.clamp(min=0)] * (idx >= 0)[..., None]
            out[sender] = {"embeddings": vecs.contiguous(), "counts": counts}
        return Routed(out)
