"""A Feras host: its :class:`~fedrec.data.HostView` (the whole topology, the attributes and
labels of its visible nodes only), its own copy of the weights and their Adam state.

Each iteration ``t`` the host draws its subgraph from the public sampler (the draw is keyed by
the public ``(seed, "feras", "subgraph", t, host)``: a sampler party holding the public seed
would hand out exactly these, so that role costs no message), computes the first layer on it
(attributes of unseen nodes are zero) and uploads the embeddings of its *visible* nodes
(``EMBED``). After the AS's averages arrive it finishes the forward pass on them (``TRAIN``):
its first layer is ``embed``'s own computation (with the same dropout masks, keyed by the
host's own secret and ``t``): kept, with its autograd graph, from ``embed`` to ``train`` of the
same iteration in the process that ran both (:class:`_FirstLayer`), recomputed exactly where it
is not (a deployment's node builds its logic anew for every message; a checkpoint holds no
graph). Its loss on its visible training nodes
``v`` of the subgraph is ``sum L_v / (n_train p_v)`` (GraphSAINT's normalisation, ``n_train``
this host's labelled training nodes). Every ``q``-th iteration it also sends its weights to the
AS, and takes their average when told (``TAKE_WEIGHTS``, in the same iteration).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.gcn_common import make_saint_sampler
from fedrec.algorithms.methods.feras import dp, model
from fedrec.algorithms.methods.feras.config import FerasConfig
from fedrec.algorithms.methods.feras.meta import METHOD
from fedrec.algorithms.methods.feras.steps import (
    AVERAGE_EMBEDDINGS,
    AVERAGE_WEIGHTS,
    EMBED,
    EVAL_EMBED,
    EVALUATE,
    TAKE_WEIGHTS,
    TRAIN,
)
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.data import HostView
from fedrec.data.sampling import CsrGraph, Sampler, Subgraph, estimate_normalization
from fedrec.data.types import check_split
from fedrec.errors import ProtocolError
from fedrec.federation.message import AGGREGATOR, SERVER
from fedrec.federation.runtime import Outgoing, PartyContext, PartyLogic, Routed
from fedrec.federation.secrets import PartySecret
from fedrec.federation.steps import step
from fedrec.metrics.classification import f1_micro
from fedrec.models import gcn

NAME = METHOD.name


def host_id(index: int) -> str:
    """The party id of host ``index`` (a client that is not a user)."""
    return f"host-{index}"


@dataclass(frozen=True, eq=False)
class Topology:
    """What every host derives from the public topology and the public seed alone."""

    graph: CsrGraph
    sampler: Sampler
    alpha: torch.Tensor
    node_prob: torch.Tensor
    edge_index: np.ndarray
    num_nodes: int

    @cached_property
    def full_adj(self) -> torch.Tensor:
        """``A_hat`` of the whole graph, for evaluation only: built at the first evaluation
        (on a Reddit-sized graph it holds ~470 MB that training never reads)."""
        return gcn.normalized_adjacency(self.edge_index, self.num_nodes)


@dataclass(eq=False)
class _FirstLayer:
    """One host's first layer of one iteration, on leaf copies of its weights ``source``: the
    subgraph, its operator, the values it shares (``H1``, or ``P`` with ``share_at =
    projection``) with their autograd graph, and the dropout generator after the first layer's
    masks (the next layers' masks follow from it)."""

    iteration: int
    source: dict[str, torch.Tensor]
    sub: Subgraph
    adj: torch.Tensor
    params: dict[str, torch.Tensor]
    shares: torch.Tensor
    generator: torch.Generator


def _snapshot(opt: torch.optim.Optimizer) -> dict[str, Any]:
    """``opt.state_dict()`` with its state tensors copied (what ``copy.deepcopy`` of it holds,
    at a fraction of its cost: the per-tensor moments are the only mutable entries; the packed
    groups are fresh dicts, which ``load_state_dict`` copies again)."""
    sd = opt.state_dict()
    state = {i: {k: v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
                 for k, v in entry.items()} for i, entry in sd["state"].items()}
    return {"state": state, "param_groups": copy.deepcopy(sd["param_groups"])}


class FerasHost(PartyLogic):
    def __init__(self, cfg: FerasConfig, num_features: int, num_classes: int) -> None:
        self.cfg = cfg
        self.num_features = num_features
        self.num_classes = num_classes
        # Public: keyed by the topology array every view shares (one build per process).
        self._topologies: dict[int, Topology] = {}
        # A host's ``embed`` computation until its ``train`` of the same iteration, keyed by the
        # party and read back by that party only (a cache: lost with the process, recomputed
        # bit for bit by ``train``).
        self._pending: dict[Any, _FirstLayer] = {}

    def init_state(self, party: Any, data: Any, secret: PartySecret) -> dict[str, Any]:
        # Every host starts from the same weights, drawn from the public seed.
        params = model.init_params(self.num_features, self.cfg.hidden, self.num_classes,
                                   torch_generator(self.cfg.seed, NAME, "init"))
        return {"params": params, "adam": None}

    # -- public derivations ------------------------------------------------------------------
    def topology(self, view: HostView) -> Topology:
        key = id(view.edge_index)
        if key not in self._topologies:
            graph = CsrGraph.from_edge_index(np.array(view.edge_index), view.num_nodes)
            sampler = make_saint_sampler(NAME, self.cfg, graph)
            norm = estimate_normalization(sampler, self.cfg.presample,
                                          torch_generator(self.cfg.seed, NAME, "presample"))
            self._topologies[key] = Topology(
                graph, sampler, norm.alpha, norm.node_prob, view.edge_index, view.num_nodes)
        return self._topologies[key]

    def subgraph(self, view: HostView, iteration: int) -> Subgraph:
        """Host ``view.host``'s subgraph of ``iteration``, from the public sampler."""
        gen = torch_generator(self.cfg.seed, NAME, "subgraph", iteration, view.host)
        return self.topology(view).sampler.sample(gen)

    # -- the host's computation --------------------------------------------------------------
    @staticmethod
    def _no_weights(ctx: PartyContext) -> None:
        if any(m.step == AVERAGE_WEIGHTS for m in ctx.inbox):
            raise ProtocolError(f"{ctx.party}: averaged weights arrived outside take_weights")

    @step(TAKE_WEIGHTS, broadcast=True)
    def take_weights(self, ctx: PartyContext, payload: Payload) -> None:
        """Replace the weights by the AS's average (Adam's moments stay the host's own)."""
        averages = [m.payload for m in ctx.inbox if m.step == AVERAGE_WEIGHTS]
        if len(averages) != 1:
            raise ProtocolError(f"{ctx.party}: expected one weight average, got {len(averages)}")
        ctx.state["params"] = {k: torch.as_tensor(averages[0][k]).float().clone()
                               for k in model.PARAM_NAMES}

    @staticmethod
    def _averages(ctx: PartyContext, nodes: torch.Tensor, hidden: int
                  ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The AS's averaged embeddings spread over ``nodes`` (sorted global ids) and which of
        them have one; None when the AS sent none (this host's upload never reached it: the
        runtime rejected it), and the host then sits the step out like a dropped host."""
        replies = [m.payload for m in ctx.inbox if m.step == AVERAGE_EMBEDDINGS]
        if not replies:
            return None
        if len(replies) != 1:
            raise ProtocolError(f"{ctx.party}: expected one average from the AS at step "
                                f"{ctx.step}, got {len(replies)}")
        ids = torch.as_tensor(replies[0]["nodes"]).long()
        received = torch.zeros(len(nodes), hidden)
        has = torch.zeros(len(nodes), dtype=torch.bool)
        pos = torch.searchsorted(nodes, ids)
        if len(ids) and not bool((nodes[pos.clamp(max=len(nodes) - 1)] == ids).all()):
            raise ProtocolError(f"{ctx.party}: the AS returned nodes outside its subgraph")
        received[pos] = torch.as_tensor(replies[0]["embeddings"]).float()
        has[pos] = True
        return received, has

    def _shares(self, params: dict[str, torch.Tensor], adj: torch.Tensor, x: torch.Tensor,
                rate: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
        """What the host shares of its nodes: ``H1`` (the paper's p = 1), or ``P`` with
        ``share_at = projection``."""
        if self.cfg.share_at == "projection":
            shares = model.project(params, x, rate, generator)
            return dp.clip_rows(self.cfg, shares) if self.cfg.embedding_dp != "none" else shares
        return model.first_layer(params, adj, x, rate, generator)

    def _second_input(self, params: dict[str, torch.Tensor], adj: torch.Tensor,
                      shared: torch.Tensor) -> torch.Tensor:
        """``H1`` from the (averaged) shared values."""
        if self.cfg.share_at == "projection":
            return model.aggregate(params, adj, shared)
        return shared

    def _shared(self, ctx: PartyContext, own: torch.Tensor, nodes: torch.Tensor
                ) -> torch.Tensor | None:
        """The AS's averages where it sent one (Feras), the host's own values where the hosts
        share no embedding (the baselines); None: no average arrived (:meth:`_averages`)."""
        if not self.cfg.shares_embeddings:
            return own
        averages = self._averages(ctx, nodes, self.cfg.hidden)
        if averages is None:
            return None
        received, has = averages
        if self.cfg.embedding_dp != "none":  # its own rows of the nodes it sees (module dp)
            view: HostView = ctx.data
            has = has & ~torch.from_numpy(view.visible_mask()[nodes.numpy()])
        return model.shared(own, received, has)

    def _features(self, view: HostView, nodes: torch.Tensor | None) -> torch.Tensor:
        return gcn.row_normalized(view.features(None if nodes is None else nodes.numpy()))

    def _dropout_generator(self, ctx: PartyContext, iteration: int) -> torch.Generator:
        return ctx.secret.generator("dropout", iteration)

    def _optimizer(self, params: dict[str, torch.Tensor]) -> torch.optim.Adam:
        decayed = list(params) if self.cfg.decay_all_layers else ["w1"]
        return torch.optim.Adam(
            [{"params": [params[k] for k in decayed], "weight_decay": self.cfg.weight_decay},
             {"params": [v for k, v in params.items() if k not in decayed],
              "weight_decay": 0.0}], lr=self.cfg.lr)

    def _upload(self, ctx: PartyContext, nodes: torch.Tensor, seen: np.ndarray,
                h1: torch.Tensor, *key: object) -> Routed:
        """What goes to the AS: the node ids, the visible ones among them and their embeddings
        (nothing of an unseen node: its embedding was computed from zero attributes), with
        ``embedding_noise`` Gaussian noise drawn from the host's secret (the round, the step
        and ``key``), or with ``embedding_dp`` the calibrated noise of :mod:`.dp` instead."""
        local = torch.from_numpy(np.flatnonzero(seen))
        emb = h1[local].detach().clone()
        if self.cfg.embedding_dp != "none":  # calibrated noise on the private rows (module dp)
            view: HostView = ctx.data
            private = np.isin(nodes[local].numpy(), view.private_ids)
            emb = dp.upload_noise(self.cfg, emb, private, ctx.generator("embedding_dp", *key))
        elif self.cfg.embedding_noise > 0:
            noise = torch.randn(emb.shape, generator=ctx.generator("embedding_noise", *key))
            emb = emb + self.cfg.embedding_noise * noise
        return Routed({AGGREGATOR: {"nodes": nodes.clone(), "seen": nodes[local].clone(),
                                    "embeddings": emb}})

    def _first_layer(self, ctx: PartyContext, iteration: int) -> _FirstLayer:
        view: HostView = ctx.data
        topo = self.topology(view)
        sub = self.subgraph(view, iteration)
        params = {k: v.clone().requires_grad_() for k, v in ctx.state["params"].items()}
        adj = gcn.subgraph_adjacency(sub, topo.graph.degree, topo.alpha)
        gen = self._dropout_generator(ctx, iteration)
        shares = self._shares(params, adj, self._features(view, sub.nodes),
                              self.cfg.feature_dropout, gen)
        return _FirstLayer(iteration, ctx.state["params"], sub, adj, params, shares, gen)

    @step(EMBED, broadcast=True)
    def embed(self, ctx: PartyContext, payload: Payload) -> Outgoing:
        view: HostView = ctx.data
        self._no_weights(ctx)
        first = self._first_layer(ctx, int(payload["iteration"]))
        self._pending[ctx.party] = first
        nodes = first.sub.nodes
        return self._upload(ctx, nodes, view.visible_mask()[nodes.numpy()], first.shares,
                            first.iteration)

    @step(TRAIN, broadcast=True)
    def train(self, ctx: PartyContext, payload: Payload) -> Outgoing:
        view: HostView = ctx.data
        self._no_weights(ctx)
        t = int(payload["iteration"])
        topo = self.topology(view)
        first = self._pending.pop(ctx.party, None)
        if first is None or first.iteration != t or first.source is not ctx.state["params"]:
            first = self._first_layer(ctx, t)  # embed ran elsewhere, or not at all (baselines)
        nodes, params, adj = first.sub.nodes, first.params, first.adj
        opt = self._optimizer(params)
        if ctx.state["adam"] is not None:
            opt.load_state_dict(ctx.state["adam"])
        shared = self._shared(ctx, first.shares, nodes)
        if shared is None:
            return None
        h1 = self._second_input(params, adj, shared)
        z = model.rest(params, adj, h1, self.cfg.feature_dropout, first.generator)
        local = torch.from_numpy(np.flatnonzero(view.mask("train", nodes.numpy())))
        labels = torch.from_numpy(np.asarray(view.labels(nodes[local].numpy()), np.int64))
        n_train = view.num_train
        losses = gcn.node_losses(z[local], labels, view.multilabel)
        if len(local):
            weight = 1.0 / (n_train * topo.node_prob[nodes[local]])
            opt.zero_grad()
            (losses * weight.float()).sum().backward()
            opt.step()
            ctx.state["adam"] = _snapshot(opt)
        ctx.state["params"] = {k: v.detach() for k, v in params.items()}
        reply = {"loss": float(losses.detach().sum()), "n": len(local)}
        if not payload["share_weights"]:
            return reply
        return Routed({SERVER: reply, AGGREGATOR: dict(ctx.state["params"])})

    # -- evaluation --------------------------------------------------------------------------
    def _full_shares(self, ctx: PartyContext) -> torch.Tensor:
        view: HostView = ctx.data
        with torch.no_grad():
            return self._shares(ctx.state["params"], self.topology(view).full_adj,
                                self._features(view, None))

    @step(EVAL_EMBED, broadcast=True)
    def eval_embed(self, ctx: PartyContext, payload: Payload) -> Outgoing:
        view: HostView = ctx.data
        self._no_weights(ctx)
        # The noise is keyed by the round: a round's validation and test passes upload the
        # same noisy embeddings (the AS learns nothing by averaging the two).
        return self._upload(ctx, torch.arange(view.num_nodes), view.visible_mask(),
                            self._full_shares(ctx))

    @step(EVALUATE, broadcast=True)
    def evaluate(self, ctx: PartyContext, payload: Payload) -> Payload | None:
        """Micro-F1 (the accuracy, single-label) on this host's visible nodes of the split."""
        view: HostView = ctx.data
        split = "val" if check_split(str(payload["split"])) == "valid" else "test"
        nodes = np.flatnonzero(view.mask(split))
        if len(nodes) == 0:
            return {"f1_micro": 0.0, "count": 0}
        params, adj = ctx.state["params"], self.topology(view).full_adj
        with torch.no_grad():
            shared = self._shared(ctx, self._full_shares(ctx), torch.arange(view.num_nodes))
            if shared is None:
                return None
            z = model.rest(params, adj, self._second_input(params, adj, shared))
        pred = gcn.predict(z, view.multilabel).numpy()[nodes]
        return {"f1_micro": f1_micro(pred, view.labels(nodes)), "count": len(nodes)}
