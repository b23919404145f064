"""fedavg-gcn's options."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.config import RunConfig, check_clients, check_range, option
from fedrec.errors import ConfigError


@dataclass
class FedAvgGCNConfig(RunConfig):
    rounds: int = option(100)
    eval_every: int = option(10)
    num_hosts: int = option(4, "hosts the graph's nodes are split among (each a client)")
    public_fraction: float = option(0.5, "share of the nodes every host holds; every other node "
                                         "is private to one host, in [0, 1)")
    hidden: int = option(16, "hidden units of the GCN's first layer")
    feature_dropout: float = option(0.5, "dropout rate on each GCN layer's input (training)")
    lr: float = option(0.01, "hosts' Adam learning rate")
    weight_decay: float = option(5e-4, "hosts' Adam weight decay (L2)")
    local_epochs: int = option(5, "full-batch epochs a host trains per round")

    def validate(self) -> None:
        super().validate()
        check_range("num_hosts", self.num_hosts, 1)
        check_clients(self.clients_per_round, self.num_hosts, "fedavg-gcn", "num_hosts")
        check_range("public_fraction", self.public_fraction, 0.0)
        if self.public_fraction >= 1.0:
            raise ConfigError(f"public_fraction must be < 1, got {self.public_fraction}")
        check_range("hidden", self.hidden, 1)
        check_range("feature_dropout", self.feature_dropout, 0.0, 0.99)
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("weight_decay", self.weight_decay, 0.0)
        check_range("local_epochs", self.local_epochs, 1)
