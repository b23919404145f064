"""FedAvg over NeuMF: the parameter-transmission baseline of PTF-FedRec (Yuan et al., ICDE 2024).

Same client model (NeuMF, :mod:`fedrec.models.ncf`), same data and split
(:func:`~fedrec.algorithms.ptf_fedrec.implicit_dataset`) and same local training as
:mod:`fedrec.algorithms.ptf_fedrec` (its :class:`~fedrec.algorithms.ptf_fedrec.PTFClient` code:
positives label 1, ``num_negatives`` fixed negatives per positive label 0, BCE batch mean,
``local_epochs`` epochs of Adam ``client_lr``, batch ``client_batch``, lazy item-row updates),
but the parties exchange model parameters with FedAvg (McMahan et al., AISTATS 2017):

1. ``train`` (server -> selected clients): the global NeuMF parameters except user embeddings,
   i.e. ``item_emb`` ``[I, 2d]`` (GMF half then MLP half), the MLP tower ``w{k}``/``b{k}`` and
   the prediction layer ``out_w``/``out_b``.
2. Each client loads them next to its own user embedding (GMF and MLP halves; it never leaves the
   device), trains locally, and uploads every server-owned parameter, trained, plus ``n``, its
   number of training rows (positives + negatives).
3. The server replaces the global model by the ``n``-weighted mean of the uploads.

Evaluation (``evaluate``): the global parameters are broadcast to every client, which ranks all
items it has not trained on with its own user embedding and reports only its metrics
(``Recall@K``, ``NDCG@K``, ...).

Cost: every message carries the full server-owned model, ``(2 d I + MLP + output)`` float32 values
plus a small header (ML-100K, defaults: ~216 KB per client per round in each direction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fedrec.algorithms.base import FederatedJob, FederatedTrainer, ServerLogic
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics, requested_split
from fedrec.algorithms.ptf_fedrec import NCFClientConfig, PTFClient, implicit_dataset
from fedrec.config import option
from fedrec.core.codec import Payload
from fedrec.core.rng import derive_seed
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset
from fedrec.errors import ProtocolError
from fedrec.federation.aggregation import fedavg
from fedrec.federation.runtime import PartyContext, Runtime
from fedrec.federation.secrets import PartySecret
from fedrec.models import ncf
from fedrec.privacy.report import no_guarantee


@dataclass
class FedAvgNCFConfig(NCFClientConfig):
    """PTF-FedRec's client settings and split; nothing else (no server model, no defences)."""

    rounds: int = option(20)
    eval_every: int = option(5)


def server_param_names(shape: ncf.NCFShape) -> list[str]:
    """Names of the parameters the server owns (all but the user embedding)."""
    return ["item_emb", *(k for k in shape.param_shapes() if k != "user")]


class FedAvgNCFClient(PTFClient):
    """A PTF-FedRec client whose non-user parameters come from, and go back to, the server."""

    def __init__(self, cfg: FedAvgNCFConfig, num_items: int, chunk: int = 256) -> None:
        super().__init__(cfg, num_items)  # type: ignore[arg-type]
        self.chunk = chunk

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        state = super().init_state(party, data, secret)  # fixed negatives, initial user embedding
        state["params"] = {"user": state["params"]["user"]}
        return state

    def _load(self, ctxs: Sequence[PartyContext], glob: Payload) -> None:
        params = {k: torch.as_tensor(glob[k]).float() for k in server_param_names(self.shape)}
        # The global item table is every client's starting table: rows a client trains are
        # stored in its state, the others read from here (no per-client copy of the table).
        self._global_rows = params.pop("item_emb")
        for c in ctxs:
            c.state["params"] = {"user": c.state["params"]["user"], **params}

    def _initial_rows(self, clients: torch.Tensor,
                      items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The loaded global table, indexed by item (the same for every client)."""
        return self._global_rows, torch.broadcast_tensors(clients, items)[1]

    def _unload(self, ctxs: Sequence[PartyContext]) -> None:
        for c in ctxs:
            c.state["params"] = {"user": c.state["params"]["user"]}
            c.state["items"] = torch.empty(0, dtype=torch.int64)
            c.state["rows"] = torch.empty(0, 2 * self.shape.dim)

    def handle_cohort(
        self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload]
    ) -> list[Payload | None]:
        if any(p is not payloads[0] for p in payloads):
            raise ValueError("FedAvg-NCF expects the same broadcast for the whole cohort")
        if step not in ("train", "evaluate"):
            raise ValueError(f"FedAvg-NCF clients have no step {step!r}")
        out: list[Payload | None] = []
        for start in range(0, len(ctxs), self.chunk):  # bounds memory; clients are independent
            part = ctxs[start : start + self.chunk]
            self._load(part, payloads[0])
            try:
                out.extend(self._local_train(part) if step == "train"
                           else self._evaluate(part, requested_split(payloads[0])))
            finally:
                self._unload(part)
        return out

    def _local_train(self, ctxs: Sequence[PartyContext]) -> list[Payload]:
        self._fit(ctxs)
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


class FedAvgNCFServer(ServerLogic):
    """Holds the global NeuMF minus user embeddings; FedAvg of client uploads each round."""

    def __init__(self, cfg: FedAvgNCFConfig, num_items: int) -> None:
        self.cfg = cfg
        self.shape = ncf.NCFShape(cfg.client_dim, tuple(cfg.client_layers))
        self.names = server_param_names(self.shape)
        seed = derive_seed(cfg.seed, "fedavg-ncf-global")
        init = ncf.init_params(self.shape, seed, torch.tensor([0]))
        self.params = {k: v[0] for k, v in init.items() if k != "user"}
        self.params["item_emb"] = ncf.init_item_rows(
            self.shape, seed, torch.zeros(num_items, dtype=torch.int64), torch.arange(num_items),
            num_items)

    def _broadcast(self) -> Payload:
        return {k: self.params[k] for k in self.names}

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        selected = rt.sample_clients(self.cfg.clients_per_round or len(rt.client_ids))
        replies = rt.broadcast("train", selected, self._broadcast())
        if not replies:
            raise ProtocolError(f"round {rnd}: no client upload arrived")
        ups = [replies[c] for c in sorted(replies)]
        new = fedavg(ups, self.names)
        shift = sum(float((new[k] - self.params[k]).pow(2).sum()) for k in self.names) ** 0.5
        self.params = new
        return {"clients": float(len(replies)), "update_norm": shift,
                "train_rows": float(sum(int(u["n"]) for u in ups))}

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.broadcast("evaluate", rt.client_ids, eval_request(self._broadcast(), split))
        return reduce_client_metrics(replies.values(), explicit=False)

    def privacy_report(self) -> dict[str, Any]:
        return no_guarantee(
            protection="none: interactions stay on the device, the trained model is sent in "
                       "clear",
            leakage="each upload carries the client's trained item embeddings and MLP weights "
                    "in the clear: the changed item rows name the items it trained on")

    def state_dict(self) -> dict[str, Any]:
        return {"params": {k: v.clone() for k, v in self.params.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.params = {k: v.clone() for k, v in state["params"].items()}


def build_fedavg_ncf_job(cfg: FedAvgNCFConfig, dataset: Dataset,
                         device: torch.device) -> FederatedJob:
    ds = implicit_dataset(dataset, cfg)
    return FederatedJob(server=FedAvgNCFServer(cfg, ds.num_items),
                        client_logic=FedAvgNCFClient(cfg, ds.num_items),
                        client_data=partition_by_user(ds))


def build_fedavg_ncf(cfg: FedAvgNCFConfig, dataset: Dataset,
                     device: torch.device) -> FederatedTrainer:
    return FederatedTrainer(build_fedavg_ncf_job(cfg, dataset, device), cfg, device)
