"""FedAvg-NeuMF's server (:mod:`fedrec.algorithms.methods.fedavg_ncf`): the global NeuMF minus user
embeddings, replaced each round by the weighted mean of the uploads."""

from __future__ import annotations

from typing import Any

import torch

from fedrec.algorithms.base import RANKING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fedavg_ncf.config import FedAvgNCFConfig, server_param_names
from fedrec.algorithms.methods.fedavg_ncf.steps import EVALUATE, TRAIN
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.core.codec import Payload
from fedrec.core.rng import derive_seed
from fedrec.federation.aggregation import fedavg
from fedrec.federation.runtime import Runtime
from fedrec.models import ncf
from fedrec.privacy.report import NoGuarantee, PrivacyReport


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
        selected = rt.cohort(self.cfg.clients_per_round)
        replies = rt.updates(rt.broadcast(TRAIN, selected, self._broadcast()), TRAIN)
        ups = [replies[c] for c in sorted(replies)]
        new = fedavg(ups, self.names)
        shift = sum(float((new[k] - self.params[k]).pow(2).sum()) for k in self.names) ** 0.5
        self.params = new
        return {"clients": float(len(replies)), "update_norm": shift,
                "train_rows": float(sum(int(u["n"]) for u in ups))}

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.broadcast(EVALUATE, rt.client_ids, eval_request(self._broadcast(), split))
        return reduce_client_metrics(replies.values(), explicit=False)

    def receives(self) -> dict[str, str]:
        return {TRAIN: "each cohort client's locally trained NeuMF weights (item embeddings "
                       "and layers) and its number of training rows, in clear",
                EVALUATE: RANKING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        return PrivacyReport((NoGuarantee(
            protection="none: interactions stay on the device, the trained model is sent in "
                       "clear",
            leakage="each upload carries the client's trained item embeddings and MLP weights "
                    "in the clear: the changed item rows name the items it trained on"),))

    def state_dict(self) -> dict[str, Any]:
        return {"params": {k: v.clone() for k, v in self.params.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.params = {k: v.clone() for k, v in state["params"].items()}


