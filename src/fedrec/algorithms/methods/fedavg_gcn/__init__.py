"""fedavg-gcn: node classification on a graph split among hosts, FedAvg of a two-layer GCN.

Protocol, each round: the server broadcasts the global weights of a two-layer GCN
(:mod:`fedrec.models.gcn`) to the sampled hosts; each host trains them for ``local_epochs``
full-batch epochs on its own subgraph (:func:`fedrec.data.partition_graph`: its private nodes,
the public ones and the edges among them) and sends back the weights and its number of labelled
training nodes; the server averages them, weighted by those counts
(:func:`fedrec.federation.aggregation.fedavg`). Evaluation: every host scores the global model on
its own nodes of the split; the reported ``accuracy`` is the mean over hosts.

Guarantee: no host sends a feature, label or edge, only weights and counts; the server sees the
weights (no formal privacy bound). This is the weight-sharing-only baseline of Feras (hosts share
no embedding); its hosts are clients with ids ``host-0``, ``host-1``, ..., not users.
"""

from __future__ import annotations

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fedavg_gcn.client import GCNHost, host_id
from fedrec.algorithms.methods.fedavg_gcn.config import FedAvgGCNConfig
from fedrec.algorithms.methods.fedavg_gcn.memory import fedavg_gcn_memory
from fedrec.algorithms.methods.fedavg_gcn.meta import METHOD
from fedrec.algorithms.methods.fedavg_gcn.server import FedAvgGCNServer
from fedrec.data import GraphDataset, partition_graph
from fedrec.data.types import Dataset, is_metadata_only
from fedrec.errors import ConfigError
from fedrec.federation.message import CLIENT
from fedrec.federation.runtime import Party


def build_fedavg_gcn_job(cfg: FedAvgGCNConfig, ds: Dataset, device: torch.device) -> FederatedJob:
    """The server and one client party per host (on a metadata-only graph, hosts without
    data: what a deployment's server builds)."""
    if not isinstance(ds, GraphDataset):
        raise ConfigError("fedavg-gcn needs a graph dataset (node classification)")
    if ds.multilabel:
        raise ConfigError(f"fedavg-gcn classifies single-label nodes; {ds.name} is multi-label")
    if is_metadata_only(ds):
        shares: list = [None] * cfg.num_hosts
    else:
        shares = partition_graph(ds, cfg.num_hosts, cfg.public_fraction, cfg.seed)
    logic = GCNHost(cfg)
    parties = [Party(host_id(h), CLIENT, logic, share) for h, share in enumerate(shares)]
    return FederatedJob(FedAvgGCNServer(cfg, ds.num_features, ds.num_classes), parties=parties)


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FedAvgGCNConfig,
    build_job=build_fedavg_gcn_job,
    memory_estimate=fedavg_gcn_memory,
    contract=Contract(dataset="cora", max_users=None,
                        settings={"num_hosts": 4, "local_epochs": 2}),
)

__all__ = ["SPEC", "FedAvgGCNConfig", "build_fedavg_gcn_job", "fedavg_gcn_memory"]
