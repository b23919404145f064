"""Feras's aggregation server (AS), a party of role ``"aggregator"``.

What it receives from a host: node ids (its subgraph's, or all nodes in evaluation), the ids of
the visible ones among them, their first-layer embeddings and, every ``q`` iterations, the
host's weights. Never an attribute or a label: ``tests/algorithms/test_feras.py`` inspects every
message it received. What it learns beyond the embeddings and weights: which nodes each host
sampled and which of them it sees.

``average_embeddings`` answers every host that uploaded with, for each node of its upload that
some host's source holds, the plain mean over the hosts whose source holds it. The sources:

* ``persist`` (the sequential schedule, the paper's "embedding sharing table"): a table of the
  latest embedding each host computed for each node it sees, updated by each upload and kept
  across iterations and rounds, so a host sees the latest embeddings of the hosts before it;
  with ``expiry`` (the ``table_expiry`` option) an entry uploaded at iteration ``s`` is
  forgotten from iteration ``s + expiry`` on (1: only the current iteration's uploads);
* otherwise (synchronous schedule, evaluation): this call's uploads only.

Nodes of a host's upload that no source holds (no host that sees it has sampled it) are left out
of the reply: the host keeps its own value. ``average_weights`` returns to each host that sent
weights the plain mean of the weights received (``a_n = 1 / N``, the paper's).
"""

from __future__ import annotations

from typing import Any

import torch

from fedrec.algorithms.methods.feras import model
from fedrec.algorithms.methods.feras.steps import (
    AVERAGE_EMBEDDINGS,
    AVERAGE_WEIGHTS,
    EMBED,
    EVAL_EMBED,
    TRAIN,
)
from fedrec.core.codec import Payload
from fedrec.federation.runtime import PartyContext, PartyLogic, Routed
from fedrec.federation.secrets import PartySecret
from fedrec.federation.steps import step


class FerasAggregator(PartyLogic):
    """The AS; it knows the public node count and embedding width only."""

    def __init__(self, num_nodes: int, hidden: int) -> None:
        self.num_nodes = num_nodes
        self.hidden = hidden

    def init_state(self, party: Any, data: Any, secret: PartySecret) -> dict[str, Any]:
        # table: host id -> (embeddings (V, H), held (V,) bool); weights: host id -> weights
        # received since the last average (in the sequential schedule they arrive one host at a
        # time, between the AS's other steps).
        return {"table": {}, "weights": {}}

    @staticmethod
    def _keep_weights(ctx: PartyContext) -> None:
        for m in ctx.inbox:
            if m.step == TRAIN:
                ctx.state["weights"][m.sender] = {
                    k: torch.as_tensor(m.payload[k]).float().clone() for k in model.PARAM_NAMES}

    def _dense(self, upload: Payload) -> tuple[torch.Tensor, torch.Tensor]:
        emb = torch.zeros(self.num_nodes, self.hidden)
        held = torch.zeros(self.num_nodes, dtype=torch.bool)
        seen = torch.as_tensor(upload["seen"]).long()
        emb[seen] = torch.as_tensor(upload["embeddings"]).float()
        held[seen] = True
        return emb, held

    def _expire(self, ctx: PartyContext, uploads: list, iteration: int, expiry: int) -> None:
        """Stamp this call's uploads with ``iteration`` and drop every table entry uploaded
        ``expiry`` or more iterations ago. The stamps exist only in runs with an expiry (a
        run without one keeps today's state, bit for bit)."""
        stamps: dict[Any, torch.Tensor] = ctx.state.setdefault("stamps", {})
        for m in uploads:
            stamp = stamps.setdefault(m.sender, torch.zeros(self.num_nodes, dtype=torch.long))
            stamp[torch.as_tensor(m.payload["seen"]).long()] = iteration
        for host, (_, held) in ctx.state["table"].items():
            held &= stamps[host] > iteration - expiry

    @step(AVERAGE_EMBEDDINGS)
    def average_embeddings(self, ctx: PartyContext, payload: Payload) -> Routed:
        self._keep_weights(ctx)
        uploads = [m for m in ctx.inbox if m.step in (EMBED, EVAL_EMBED)]
        table: dict[Any, tuple[torch.Tensor, torch.Tensor]] = ctx.state["table"]
        if payload["persist"]:
            for m in uploads:
                if m.sender not in table:
                    table[m.sender] = self._dense(m.payload)
                    continue
                emb, held = table[m.sender]
                seen = torch.as_tensor(m.payload["seen"]).long()
                emb[seen] = torch.as_tensor(m.payload["embeddings"]).float()
                held[seen] = True
            if "expiry" in payload:
                self._expire(ctx, uploads, int(payload["iteration"]), int(payload["expiry"]))
            sources = list(table.values())
        else:
            sources = [self._dense(m.payload) for m in uploads]
        out = {}
        for m in uploads:
            nodes = torch.as_tensor(m.payload["nodes"]).long()
            total = torch.zeros(len(nodes), self.hidden)
            count = torch.zeros(len(nodes))
            for emb, held in sources:
                total += emb[nodes] * held[nodes, None]
                count += held[nodes]
            keep = count > 0
            out[m.sender] = {"nodes": nodes[keep], "embeddings": total[keep] / count[keep, None]}
        return Routed(out)

    @step(AVERAGE_WEIGHTS)
    def average_weights(self, ctx: PartyContext, payload: Payload) -> Routed:
        self._keep_weights(ctx)
        uploads = ctx.state["weights"]
        ctx.state["weights"] = {}
        if not uploads:
            return Routed({})
        mean = {k: torch.stack([w[k] for w in uploads.values()]).mean(0)
                for k in model.PARAM_NAMES}
        return Routed(dict.fromkeys(uploads, mean))
