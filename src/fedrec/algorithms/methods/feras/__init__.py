"""feras: federated GCN across hosts with shared node embeddings through an aggregation server.

Paper: "Federated Graph-based Networks with Shared Embedding" (Feras). Parties:

* ``N`` hosts (clients ``host-0`` .. ``host-{N-1}``, :mod:`.host`), each with its
  :class:`~fedrec.data.HostView` (:func:`~fedrec.data.feras_host_views`): the whole topology,
  the attributes and labels of its visible nodes (the public ones and its own private ones; a
  share ``pi`` of the nodes is private, dealt uniformly, so ``kappa = (N - 1) / N * pi`` of the
  nodes are invisible to each host, their attributes zero); every host its own weights;
* the aggregation server (AS, party ``"aggregator"``, :mod:`.aggregator`);
* the sampler is public: host ``n``'s GraphSAINT subgraph of iteration ``t`` is drawn from the
  public topology with the public key ``(seed, "feras", "subgraph", t, n)``, by the host itself
  (no message); the normalisation coefficients are pre-sampled from ``(seed, "feras",
  "presample")``, the same at every host;
* the orchestrator (:mod:`.server`) only calls the steps and reads losses and scores.

Model (:mod:`.model`): two GCN layers and a dense output layer, ReLU, GraphSAINT's aggregator
and loss normalisation; embeddings are shared after the first layer (p = 1), weights every
``q = weight_every`` iterations. One iteration, for each host (``schedule``):

1. ``embed``: the host computes the first layer on its subgraph and uploads to the AS the ids of
   the subgraph's nodes and the embeddings of the visible ones;
2. ``average_embeddings``: the AS returns, for every node of that subgraph that a host seeing it
   has embedded, the mean of those hosts' embeddings; the other nodes keep the host's own value;
3. ``train``: the host finishes the forward pass on these embeddings and takes one Adam step.
   Gradients flow back through the host's own computation of each embedding (the received
   average enters as the host's own embedding plus a constant, a straight-through estimate),
   never to another host;
4. every ``q``-th iteration the hosts' weights go to the AS, which returns their mean
   (``average_weights``), which each host takes (``take_weights``; its Adam moments stay its
   own). No message waits in an inbox from one iteration to the next.

``schedule="sequential"`` (default, the paper's experiments): hosts run 1-3 one after another
and the AS keeps a table of the latest embedding of each (host, visible node), so each host sees
the latest embeddings of the hosts before it (and older ones of nodes not sampled since).
``"synchronous"``: every host runs 1 in parallel, the AS averages this iteration's uploads only,
then every host runs 3. Both are messages through the runtime, metered in the ledger.

A round is ``iterations_per_round`` iterations (default 10 = q, so every round ends on a weight
average), iteration ``t`` of round ``r`` being ``(r - 1) * iterations_per_round + t``.
Evaluation (``eval_embed``, ``average_embeddings`` over these uploads only, ``evaluate``): each
host runs the full graph without dropout, the AS averages the visible hosts' first-layer
embeddings of every node, and each host scores its visible nodes of the split; the reported
``accuracy`` (``f1_micro`` on a multi-label graph) is the mean over hosts, the paper's "mean of
all hosts' score".

Guarantee: none formal (:meth:`FerasServer.privacy_report`); ``embedding_dp = node`` bounds the
embedding uploads per private node, given the weights (:mod:`.dp`), never the weights. The AS
never receives an attribute or a label, but it receives first-layer embeddings and first-layer
weights, from which it may infer attributes.
"""

from __future__ import annotations

from typing import Any

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.gcn_common import require_graph
from fedrec.algorithms.methods.feras.aggregator import FerasAggregator
from fedrec.algorithms.methods.feras.config import SCHEDULES, FerasConfig
from fedrec.algorithms.methods.feras.host import NAME, FerasHost, host_id
from fedrec.algorithms.methods.feras.memory import feras_memory
from fedrec.algorithms.methods.feras.meta import METHOD
from fedrec.algorithms.methods.feras.server import FerasServer
from fedrec.attacks.attribute_inference import AttributeInferenceAttack
from fedrec.data import assign_private_nodes, feras_host_views
from fedrec.data.types import Dataset, GraphDataset, is_metadata_only
from fedrec.errors import ConfigError
from fedrec.federation.message import AGGREGATOR, CLIENT
from fedrec.federation.runtime import Party


def feras_instruments(cfg: FerasConfig, ds: Dataset) -> dict[str, Any]:
    """The experimenter's instruments: with ``attack`` (and shared embeddings), the AS's
    attribute-inference attack, given the true attributes and who owns which node to score its
    guesses (and the public nodes' attributes the decoder may use)."""
    if not (cfg.attack and cfg.shares_embeddings):
        return {}
    g = require_graph(ds, NAME)
    owner = assign_private_nodes(g.num_nodes, cfg.num_hosts, cfg.private_fraction, cfg.seed)
    return {"attack": AttributeInferenceAttack(g.x, owner, g.edge_index, seed=cfg.seed,
                                               max_targets=cfg.attack_targets,
                                               projections=cfg.share_at == "projection")}


def build_feras_job(cfg: FerasConfig, ds: Dataset, device: torch.device) -> FederatedJob:
    """The orchestrator, ``num_hosts`` host parties and the AS (on a metadata-only graph, hosts
    without data: what a deployment's server builds). Which nodes are private to which host is
    the experiment's setting, drawn from the public seed."""
    if not isinstance(ds, GraphDataset):
        raise ConfigError(f"{NAME} needs a graph dataset (node classification); {ds.name} is a "
                          f"{ds.KIND} dataset")
    if is_metadata_only(ds):
        views: list = [None] * cfg.num_hosts
    else:
        views = feras_host_views(require_graph(ds, NAME), cfg.num_hosts, cfg.private_fraction,
                                 cfg.seed)
    host = FerasHost(cfg, ds.num_features, ds.num_classes)
    parties = [Party(host_id(h), CLIENT, host, view) for h, view in enumerate(views)]
    parties.append(Party(AGGREGATOR, AGGREGATOR, FerasAggregator(ds.num_nodes, cfg.hidden)))
    server = FerasServer(cfg, bool(ds.multilabel))
    if not is_metadata_only(ds):
        server.attach_instruments(feras_instruments(cfg, ds))
    return FederatedJob(server, parties=parties)


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FerasConfig,
    build_job=build_feras_job,
    instruments=feras_instruments,
    memory_estimate=feras_memory,
    contract=Contract(
        dataset="cora", max_users=None,
        settings={"num_hosts": 4, "hidden": 16, "iterations_per_round": 2, "weight_every": 2,
                  "presample": 20},
        boundary_variants=({"schedule": "synchronous"},),
    ),
)

__all__ = ["SCHEDULES", "SPEC", "FerasAggregator", "FerasConfig", "FerasHost", "FerasServer",
           "build_feras_job", "feras_instruments", "feras_memory", "host_id"]
