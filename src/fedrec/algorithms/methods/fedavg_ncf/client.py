"""FedAvg-NeuMF's client (:mod:`fedrec.algorithms.methods.fedavg_ncf`): loads the global model next
to
its own user embedding, trains it locally, uploads it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from fedrec.algorithms.methods.fedavg_ncf.config import FedAvgNCFConfig, server_param_names
from fedrec.algorithms.methods.fedavg_ncf.steps import EVALUATE, TRAIN
from fedrec.algorithms.mf_common import requested_split
from fedrec.algorithms.ncf_common import NeuMFCohort
from fedrec.core.codec import Payload
from fedrec.federation.runtime import PartyContext, PartyLogic
from fedrec.federation.secrets import PartySecret
from fedrec.federation.steps import step


class FedAvgNCFClient(PartyLogic):
    """A NeuMF client (PTF-FedRec's local training, :class:`NeuMFCohort`) whose non-user
    parameters come from, and go back to, the server."""

    def __init__(self, cfg: FedAvgNCFConfig, num_items: int, chunk: int = 256) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.chunk = chunk
        self.cohort = NeuMFCohort(cfg, num_items)
        self.shape = self.cohort.shape

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        state = self.cohort.init_state(data, secret)  # fixed negatives, initial user embedding
        state["params"] = {"user": state["params"]["user"]}
        return state

    def _load(self, ctxs: Sequence[PartyContext], glob: Payload) -> None:
        params = {k: torch.as_tensor(glob[k]).float() for k in server_param_names(self.shape)}
        # The global item table is every client's starting table: rows a client trains are
        # stored in its state, the others read from here (no per-client copy of the table).
        self._global_rows = params.pop("item_emb")
        for c in ctxs:
            c.state["params"] = {"user": c.state["params"]["user"], **params}

    def _global_rows_of(self, clients: torch.Tensor,
                        items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The untrained rows (:data:`~fedrec.algorithms.ncf_common.InitialRows`): the loaded
        global table, indexed by item (the same for every client)."""
        return self._global_rows, torch.broadcast_tensors(clients, items)[1]

    def _unload(self, ctxs: Sequence[PartyContext]) -> None:
        for c in ctxs:
            c.state["params"] = {"user": c.state["params"]["user"]}
            c.state["items"] = torch.empty(0, dtype=torch.int64)
            c.state["rows"] = torch.empty(0, 2 * self.shape.dim)

    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        return self._in_chunks(ctxs, payload, self._local_train)

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        split = requested_split(payload)
        return self._in_chunks(ctxs, payload, lambda part: self.cohort.evaluate(
            part, split, self._global_rows_of))

    def _in_chunks(self, ctxs: Sequence[PartyContext], payload: Payload,
                   work: Callable[[Sequence[PartyContext]], list[Payload]]) -> list[Payload]:
        """``work`` on chunks of the cohort, each with the broadcast global model loaded."""
        out: list[Payload] = []
        for start in range(0, len(ctxs), self.chunk):  # bounds memory; clients are independent
            part = ctxs[start : start + self.chunk]
            self._load(part, payload)
            try:
                out.extend(work(part))
            finally:
                self._unload(part)
        return out

    def _local_train(self, ctxs: Sequence[PartyContext]) -> list[Payload]:
        self.cohort.fit(ctxs, self._global_rows_of)
        out: list[Payload] = []
        for c in ctxs:
            st = c.state
            item_emb = self._global_rows.clone()  # the full table goes back, trained rows set
            item_emb[st["items"]] = st["rows"]
            msg: Payload = {"n": int(c.data.num_train + len(st["negatives"])),
                            "item_emb": item_emb}
            msg.update({k: v.clone() for k, v in st["params"].items() if k != "user"})
            out.append(msg)
        return out


