"""fedavg-gcn's server: FedAvg of the hosts' GCN weights; accuracy as the hosts measure it."""

from __future__ import annotations

from typing import Any

import torch

from fedrec.algorithms.base import ServerLogic
from fedrec.algorithms.methods.fedavg_gcn.config import FedAvgGCNConfig
from fedrec.algorithms.methods.fedavg_gcn.steps import EVALUATE, TRAIN
from fedrec.core.rng import torch_generator
from fedrec.data.types import check_split
from fedrec.federation.aggregation import fedavg, weighted_mean
from fedrec.federation.runtime import Runtime
from fedrec.models import gcn
from fedrec.privacy.report import NoGuarantee, PrivacyReport


class FedAvgGCNServer(ServerLogic):
    """Holds the global weights, initialised from the public seed."""

    def __init__(self, cfg: FedAvgGCNConfig, num_features: int, num_classes: int) -> None:
        self.cfg = cfg
        self.params = gcn.init_params(num_features, cfg.hidden, num_classes,
                                      torch_generator(cfg.seed, "fedavg-gcn", "init"))

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        hosts = rt.cohort(self.cfg.clients_per_round)
        replies = rt.updates(rt.broadcast(TRAIN, hosts, dict(self.params)), TRAIN)
        uploads = [replies[h] for h in hosts if h in replies]
        self.params = fedavg(uploads, gcn.PARAM_NAMES)
        loss = float(weighted_mean([u["loss"] for u in uploads], [u["n"] for u in uploads]))
        return {"loss": loss, "hosts": float(len(uploads))}

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        """The mean over hosts of each host's accuracy on its own nodes of ``split`` (public
        nodes count in every host that holds them), and the number of hosts that scored."""
        request = {**self.params, "split": check_split(split)}
        replies = rt.broadcast(EVALUATE, rt.client_ids, request)
        scored = [r for r in replies.values() if int(r["count"]) > 0]
        if not scored:
            return {"eval_clients": 0.0}
        accuracy = sum(float(r["accuracy"]) for r in scored) / len(scored)
        return {"accuracy": accuracy, "eval_clients": float(len(scored))}

    def state_dict(self) -> dict[str, Any]:
        return {"params": {k: v.clone() for k, v in self.params.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.params = {k: torch.as_tensor(v).clone() for k, v in state["params"].items()}

    def receives(self) -> dict[str, str]:
        return {TRAIN: "each host's locally trained GCN weights, its loss and its number of "
                       "training nodes, in clear",
                EVALUATE: "each host's accuracy count on its own nodes of the split"}

    def privacy(self) -> PrivacyReport:
        return PrivacyReport((NoGuarantee(
            protection="node features, labels and edges stay on their host",
            leakage="the server sees every sampled host's trained GCN weights each round"),))
