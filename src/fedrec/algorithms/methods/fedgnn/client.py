"""FedGNN's client (:mod:`fedrec.algorithms.methods.fedgnn`): gradients on the local subgraph,
pseudo items,
local DP, the neighbour exchange."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.methods.fedgnn.config import FedGNNConfig, ldp_mechanism, ring_bound
from fedrec.algorithms.methods.fedgnn.steps import (
    EVALUATE,
    EXPAND_INSTALL,
    EXPAND_KEY,
    EXPAND_MATCH,
    TRAIN,
)
from fedrec.algorithms.mf_common import rating_unit, requested_split, with_exposure
from fedrec.core.codec import Payload
from fedrec.data.partition import ClientData
from fedrec.errors import ProtocolError
from fedrec.federation.dp_sum import DPSumClient, dp_on
from fedrec.federation.message import THIRD_PARTY
from fedrec.federation.runtime import PartyContext, PartyLogic, Routed, cohort_chunks
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import SecureSumSteps
from fedrec.federation.steps import step
from fedrec.models import gnn
from fedrec.models.gnn import pad_subgraphs, pad_tests
from fedrec.privacy import ItemTokenizer, clip_linf


class FedGNNClient(SecureSumSteps, PartyLogic):
    """A device: its ratings (data), its user embedding and the mean of its neighbours (state)."""

    def __init__(self, cfg: FedGNNConfig, num_items: int, mu: float,
                 rating_range: tuple[float, float], template: gnn.Params,
                 num_clients: int) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.mu = mu
        self.rating_range = rating_range
        self.template = template
        # The model works in units of a quarter of the rating range (1 on 1..5 scales, 24.75 on
        # YahooMusic's 1..100), so one set of learning rates and clip bounds fits every dataset.
        self.unit = rating_unit(rating_range)
        self.f = gnn.loss_fn(cfg.gnn, cfg.loss, cfg.loss_reduction, mu / self.unit)
        self.mechanism = ldp_mechanism(cfg)
        self.secure = cfg.sum_client()
        width = cfg.dim + (1 if cfg.bias else 0)
        self.dp = (DPSumClient(cfg, num_clients, gnn.flatten(template).numel()
                               + num_items * width) if dp_on(cfg) else None)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        gen = secret.generator("init-user")
        e_u = torch.randn(self.cfg.dim, generator=gen) * self.cfg.init_std
        if self.cfg.bias:
            e_u = torch.cat([e_u, torch.zeros(1)])
        return {"e_u": e_u, "nb_mean": None}

    def handle_cohort(self, step: str, ctxs: Sequence[PartyContext],
                      payloads: Sequence[Payload]) -> list[Any]:
        for c in ctxs:  # neighbour lists wait in the inbox until the client is next reached
            self.read_neighbours(c)
        return super().handle_cohort(step, ctxs, payloads)

    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Any]:
        return self.send(ctxs, self._train(ctxs, payload), payload)

    def send(self, ctxs: Sequence[PartyContext], uploads: Sequence[Any], payload: Payload,
             clip: bool = True) -> list[Any]:
        """The messages that carry ``uploads`` (:meth:`protect`'s, one per client) in this
        run's mode: as they are, or into the DP aggregate or the secure sum (``clip`` False:
        the DP aggregate's clip skipped, as a malicious client may)."""
        if self.dp is not None:  # one clipped (and noised) dense vector per client
            return [self.dp.upload(c, x, payload, clip=clip)
                    for c, x in zip(ctxs, uploads, strict=True)]
        if self.cfg.item_privacy == "secure_sum":  # the step ends with the keys, not x
            return [self.secure.advertise(c, x, payload)
                    for c, x in zip(ctxs, uploads, strict=True)]
        return list(uploads)

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        return self._evaluate(ctxs, payload)

    # -- graph expansion ----------------------------------------------------------------------
    @step(EXPAND_KEY, broadcast=True)
    def send_tokens(self, ctx: PartyContext, payload: Payload) -> Routed:
        data: ClientData = ctx.data
        tokens = ItemTokenizer(bytes(payload["key"])).tokens(data.train_items.astype(np.int64))
        return Routed({THIRD_PARTY: {"tokens": tokens, "embedding":
                                    ctx.state["e_u"][: self.cfg.dim].clone()}})

    @step(EXPAND_INSTALL, broadcast=True)
    def install(self, ctx: PartyContext, payload: Payload) -> None:
        """Nothing more: the neighbour lists were read from the inbox on arrival."""

    def read_neighbours(self, ctx: PartyContext) -> None:
        """Install the neighbour list the third party routed to ``ctx`` (if any is waiting)."""
        for msg in ctx.inbox:
            if msg.sender == THIRD_PARTY and msg.step == EXPAND_MATCH:
                nb = torch.as_tensor(msg.payload["embeddings"]).float()
                count = torch.as_tensor(msg.payload["counts"]).long()
                if nb.shape[0] != ctx.data.num_train:
                    raise ProtocolError("neighbour list does not match the tokens sent")
                # The model sees neighbours only through their mean (fedrec.models.gnn): keep
                # that, not the K x N x d list.
                m = (torch.arange(nb.shape[1])[None, :] < count[:, None]).float()
                ctx.state["nb_mean"] = (m[..., None] * nb).sum((0, 1)) / m.sum().clamp(min=1.0)
        return None

    # -- padded cohort tensors ----------------------------------------------------------------
    def _pad(self, ctxs: Sequence[PartyContext], idx: np.ndarray, items_table: torch.Tensor
             ) -> dict[str, torch.Tensor]:
        return pad_subgraphs([ctxs[i].data for i in idx],
                             torch.stack([ctxs[i].state["e_u"] for i in idx]),
                             [ctxs[i].state["nb_mean"] for i in idx], items_table, self.cfg.dim)

    # -- training -----------------------------------------------------------------------------
    def _train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Any]:
        return [self.protect(c, *g) for c, g in zip(ctxs, self.gradients(ctxs, payload),
                                                    strict=True)]

    def gradients(self, ctxs: Sequence[PartyContext], payload: Payload
                  ) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]]:
        """Each client's ``(GNN-weight gradient (flat), rated item ids, their embedding
        gradients, loss)`` on its subgraph, before any protection; updates each client's user
        embedding (the round's local step)."""
        cfg = self.cfg
        table = torch.as_tensor(payload["items"]).float()
        p = gnn.unflatten(torch.as_tensor(payload["model"]).float(), self.template)
        sizes = np.array([c.data.num_train for c in ctxs])
        out: list[Any] = [None] * len(ctxs)
        for idx in cohort_chunks(sizes, cfg.chunk_slots):
            t = self._pad(ctxs, idx, table)
            e_u = t["e_u"]
            # The user step is on the mean loss whatever loss_reduction is, so that a client
            # with many ratings takes the same-size step as one with few.
            step = cfg.lr_user / (t["mask"].sum(1, keepdim=True).clamp(min=1).float()
                                  if cfg.loss_reduction == "sum" else 1.0)
            keep_u, keep_t = self._dropout_masks(ctxs, idx, e_u, t["e_items"])
            data = (t["e_items"] * keep_t, t["nb_mean"], t["mask"], t["ratings"] / self.unit)
            for _ in range(cfg.local_steps - 1):
                g_u = gnn.cohort_user_grads(self.f, p, e_u * keep_u, *data) * keep_u
                e_u = e_u - step * g_u - cfg.lr_user * cfg.l2 * e_u
            gp, gu, gt, loss = gnn.cohort_grads(self.f, p, e_u * keep_u, *data)
            # Chain rule through the dropout masks: d loss / d e = keep * d loss / d (keep e).
            gu, gt = gu * keep_u, gt * keep_t
            new_u = e_u - step * gu - cfg.lr_user * cfg.l2 * e_u
            flat_p = torch.cat([gp[k].reshape(len(idx), -1) for k in sorted(gp)], 1)
            for r, i in enumerate(idx):
                ctx = ctxs[i]
                ctx.state["e_u"] = new_u[r].detach().clone()
                k = ctx.data.num_train
                out[i] = (flat_p[r], t["items"][r, :k], gt[r, :k], float(loss[r]))
        return out

    def _dropout_masks(self, ctxs: Sequence[PartyContext], idx: np.ndarray, e_u: torch.Tensor,
                       e_items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inverted-dropout masks (rate ``feature_dropout``) on the embedding columns of the
        user and item nodes of each client's subgraph (bias columns are kept), drawn from the
        client's own keyed generator; all ones when the rate is 0."""
        rate, d = self.cfg.feature_dropout, self.cfg.dim
        keep_u, keep_t = torch.ones_like(e_u), torch.ones_like(e_items)
        if rate <= 0:
            return keep_u, keep_t
        for r, i in enumerate(idx):
            gen = ctxs[i].generator("dropout")
            keep_u[r] = gnn.dropout_keep(tuple(e_u.shape[1:]), rate, d, gen)
            keep_t[r] = gnn.dropout_keep(tuple(e_items.shape[1:]), rate, d, gen)
        return keep_u, keep_t

    def pseudo(self, ctx: PartyContext, real_items: torch.Tensor, real_grads: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """``M`` unrated items and Gaussian gradients with the real rows' mean and covariance.

        ``pseudo_set`` decides what is redrawn each round (module docstring): ``per_round``
        draws the ids and the mixing coefficients ``Z`` afresh; ``fixed`` keeps the ids and
        redraws ``Z``; ``fixed_coupled`` keeps both; ``fixed_copy`` keeps the ids and gives each
        a real item whose row it copies (each real item copied ``M // K`` or one more times).
        What is kept comes from a generator keyed by the client's secret alone (no round), so
        it is the same every round and as private as the secret."""
        k = len(real_items)
        m = min(self.cfg.pseudo_items, self.num_items - k)
        if m <= 0 or k == 0:
            return real_items[:0], real_grads[:0]
        mode = self.cfg.pseudo_set
        gen = ctx.generator("pseudo")
        # What a client keeps across rounds: drawn again each round from its secret alone.
        kept = gen if mode == "per_round" else ctx.secret.generator("pseudo-set")
        rated = torch.zeros(self.num_items, dtype=torch.bool)
        rated[real_items] = True
        rated[torch.from_numpy(ctx.data.train_items.astype(np.int64))] = True
        m = min(m, int((~rated).sum()))
        perm = torch.randperm(self.num_items, generator=kept)
        ids = perm[~rated[perm]][:m]
        if mode == "fixed_copy":  # balanced: with M >= K, every real row has copies
            src = torch.randperm(k, generator=kept).repeat(m // k + 1)[:m]
            return ids, real_grads[src]
        mean = real_grads.mean(0)
        # Rows follow the order of ctx.data.train_items, the same every round: a kept Z ties
        # each pseudo row to the same combination of the same real items in every round.
        z = torch.randn(m, k, generator=kept if mode == "fixed_coupled" else gen)
        dev = (real_grads - mean) / math.sqrt(max(k - 1, 1))
        # Linear in the real rows on purpose: a D x D factor of the covariance (QR, Cholesky)
        # would need fewer draws for K > D, but as a non-linear function of the rows it turns
        # an ulp of difference in the gradients (another engine's padding) into different
        # pseudo rows (measured: simulator vs Flower 1.5e-5 apart after 3 rounds, not ~1e-9).
        return ids, torch.addmm(mean, z, dev)

    def protect(self, ctx: PartyContext, g_model: torch.Tensor, items: torch.Tensor,
                g_items: torch.Tensor, loss: float) -> Payload | np.ndarray:
        """What one client sends for its :meth:`gradients` in this run's mode: its dense vector
        (DP aggregate), its secure-sum input, or (the paper's) its real and pseudo rows,
        shuffled, clipped and Laplace-noised with the GNN-weight gradient."""
        cfg = self.cfg
        if self.dp is not None:
            return self.dense_gradient(g_model, items, g_items).double().numpy()
        if cfg.item_privacy == "secure_sum":
            return self.secure_input(ctx, g_model, items, g_items)
        p_ids, p_grads = self.pseudo(ctx, items, g_items)
        ids = torch.cat([items, p_ids])
        gen = ctx.generator("ldp")
        perm = torch.randperm(len(ids), generator=gen)
        ids = ids[perm]
        # The unified vector [model gradient, shuffled rows], the rows gathered straight into it.
        n, width = g_model.numel(), g_items.shape[1]
        unified = torch.empty(n + len(ids) * width, dtype=g_items.dtype)
        unified[:n] = g_model
        torch.index_select(torch.cat([g_items, p_grads]), 0, perm,
                           out=unified[n:].view(len(ids), width))
        if cfg.clip > 0:
            unified = clip_linf(unified, cfg.clip)
        if self.mechanism is not None:  # numpy's PCG64: half the cost of torch's uniforms
            unified = self.mechanism.add_noise(unified, ctx.rng("ldp-noise"))
        out: Payload = {"items": ids, "grad_items": unified[n:].view(len(ids), width),
                        "grad_model": unified[:n]}
        # The training loss is a function of the private ratings that no noise covers: it
        # travels only in runs that claim no local DP, where it serves as a progress statistic.
        if self.mechanism is None:
            out["loss"] = loss
        return out

    def secure_input(self, ctx: PartyContext, g_model: torch.Tensor, items: torch.Tensor,
                     g_items: torch.Tensor) -> np.ndarray:
        """The client's input to the secure sum (see :meth:`FedGNNServer.secure_sum`): its
        GNN-weight gradient and its item gradient dense over all items (zero rows for items it
        did not rate), clipped and, under LDP, noised on every coordinate, so the vector's
        shape and its noised zeros say nothing about which items are rated; then, with
        ``item_avg="uploaders"``, its rated-item indicator times the ring bound (the server
        needs per-item counts; this block is exact, not noised)."""
        cfg = self.cfg
        dense = clip_linf(self.dense_gradient(g_model, items, g_items), cfg.clip)
        if self.mechanism is not None:
            dense = self.mechanism.add_noise(dense, ctx.rng("ldp-noise"))
        return self.with_counts(dense, items)

    def with_counts(self, dense: torch.Tensor, items: torch.Tensor) -> np.ndarray:
        """A secure-sum input: ``dense`` and, with ``item_avg="uploaders"``, the indicator of
        ``items`` times the ring bound (:meth:`secure_input`)."""
        parts = [dense.double().numpy()]
        if self.cfg.item_avg == "uploaders":
            rated = np.zeros(self.num_items)
            rated[items.numpy()] = ring_bound(self.cfg)
            parts.append(rated)
        return np.concatenate(parts)

    def dense_gradient(self, g_model: torch.Tensor, items: torch.Tensor, g_items: torch.Tensor
                       ) -> torch.Tensor:
        """``[GNN-weight gradient, item gradients dense over all items]``: zero rows for the
        items the client did not rate, the same length for every client."""
        n, width = g_model.numel(), g_items.shape[1]
        dense = torch.zeros(n + self.num_items * width, dtype=g_items.dtype)
        dense[:n] = g_model
        dense[n:].view(self.num_items, width).index_copy_(0, items, g_items)
        return dense

    # -- evaluation ---------------------------------------------------------------------------
    def _evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        table = torch.as_tensor(payload["items"]).float()
        p = gnn.unflatten(torch.as_tensor(payload["model"]).float(), self.template)
        lo, hi = self.rating_range
        split = requested_split(payload)
        # Chunks sized by the scored split only: a validation evaluation never depends on the
        # test rows, not even through its padding.
        sizes = np.array([c.data.num_train + len(c.data.rows(split)[0]) for c in ctxs])
        out: list[Payload | None] = [None] * len(ctxs)
        for idx in cohort_chunks(sizes, self.cfg.chunk_slots):
            t = self._pad(ctxs, idx, table)
            test, vals, tmask = pad_tests([ctxs[i].data for i in idx], split)
            with torch.no_grad():
                pred = self.unit * gnn.cohort_predict(
                    self.cfg.gnn, self.mu / self.unit, p, t["e_u"], t["e_items"], t["mask"],
                    t["nb_mean"], table[test])
                err = (pred.clamp(lo, hi) - vals).double() * tmask
            for r, i in enumerate(idx):
                out[i] = {"sq_err": float(err[r].square().sum()),
                          "abs_err": float(err[r].abs().sum()),
                          "count": int(tmask[r].sum())}

        def scores(start: int, stop: int) -> torch.Tensor:
            """Every item's predicted rating (unclamped: its order is the recommendation's)
            for clients ``ctxs[start:stop]``."""
            t = self._pad(ctxs[start:stop], np.arange(stop - start), table)
            return gnn.cohort_predict(self.cfg.gnn, self.mu / self.unit, p, t["e_u"],
                                      t["e_items"], t["mask"], t["nb_mean"],
                                      table.expand(stop - start, *table.shape))

        # The targets' exposure (a poisoning experiment's request only), in chunks of about
        # chunk_slots scored (client, item) pairs.
        return with_exposure(out, ctxs, scores, payload, split,
                             batch=max(1, self.cfg.chunk_slots // self.num_items))
