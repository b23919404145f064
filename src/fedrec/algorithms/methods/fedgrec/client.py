"""FedGRec's client (:mod:`fedrec.algorithms.methods.fedgrec`): Step 2 (refresh the latent user
embeddings), Step 3 (local training with every latent embedding fixed) and Step 4 (the dense
upload), vectorised over the cohort; every output depends on its own client's data, state,
secret and request only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedrec.algorithms.methods.fedgrec.config import FedGRecConfig
from fedrec.algorithms.methods.fedgrec.dp import DEGREE_SENT, DPBudget, DPLayout, recorded
from fedrec.algorithms.methods.fedgrec.steps import (
    EVALUATE,
    REQUEST_ROWS,
    TRAIN,
    TRAIN_ROWS,
    WARMUP_DEGREES,
    WARMUP_LATENT,
)
from fedrec.algorithms.mf_common import (
    CohortRows,
    cohort_rows,
    evaluate_clients_ranking,
    with_exposure,
)
from fedrec.algorithms.mf_common import requested_split as split_of
from fedrec.core.codec import Payload
from fedrec.errors import ProtocolError
from fedrec.federation.dp_sum import DPSumClient, dp_on
from fedrec.federation.runtime import PartyContext, PartyLogic, cohort_seeds
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import (
    STEP_MASK,
    SecureSumSteps,
    SparseUpload,
)
from fedrec.federation.steps import step
from fedrec.models.lightgcn import LightGCNConv, bipartite_propagate
from fedrec.models.mf import sample_negatives

#: Client state: ``e0`` (e_u^0), ``latent`` ([K, d], e_u^1..e_u^K as last refreshed), ``sent``
#: ([K, d] float64, the sources e_u^0..e_u^{K-1} of the latent contribution the server holds),
#: ``pending`` (a contribution uploaded but not yet known to be in a sum), ``contributions``
#: (how many sums this client's latent contribution went into).
PENDING = "pending"


@dataclass
class Tables:
    """The item tables a cohort downloaded: the whole tables (``keys`` None: row ``t`` is item
    ``t``) or, with ``download: rows``, each client's own rows (row of ``(client i, item t)`` at
    ``searchsorted(keys, i * N + t)``)."""

    item_emb: torch.Tensor  # [R, d] e_t^0
    latent: torch.Tensor  # [K, R, d] e_t^1..e_t^K
    degrees: torch.Tensor  # [R] |N_t|
    num_items: int
    keys: torch.Tensor | None = None

    def index(self, local: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        if self.keys is None:
            return items
        at = torch.searchsorted(self.keys, local * self.num_items + items)
        if len(at) and (bool((at >= len(self.keys)).any())
                        or bool((self.keys[at.clamp(max=len(self.keys) - 1)]
                                 != local * self.num_items + items).any())):
            raise ProtocolError("a downloaded row the client did not ask for is missing")
        return at

    def item_layers(self, rows: torch.Tensor) -> list[torch.Tensor]:
        """``[e_t^0, ..., e_t^K]`` at table rows ``rows``."""
        return [self.item_emb[rows], *(self.latent[k][rows] for k in range(len(self.latent)))]


def full_tables(payload: Payload, device: torch.device) -> Tables:
    return Tables(torch.as_tensor(payload["item_emb"], device=device).float(),
                  torch.as_tensor(payload["latent"], device=device).float(),
                  torch.as_tensor(payload["degrees"], device=device).float(),
                  int(payload["item_emb"].shape[0]))


@dataclass
class LocalRound:
    """What a cohort's Steps 2-3 leave for Step 4 (:meth:`FedGRecClient.local_round`):
    whether the round refreshes, the cohort's training rows and their weights ``1 /
    sqrt(|N_u| |N_t|)``, each client's loss, and the item rows each client trained (its
    positives and negatives, ``pair_item[pair_segs[i]]``) with their change ``delta_q``."""

    refresh: bool
    rows: CohortRows
    w: torch.Tensor
    client_loss: torch.Tensor
    pair_item: torch.Tensor
    delta_q: torch.Tensor  # [pairs, d] float64, e_t^0 after Step 3 minus as downloaded
    pair_segs: list[slice]
    row_segs: list[slice]

    def item_rows(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Client ``i``'s trained item rows and their change."""
        seg = self.pair_segs[i]
        return self.pair_item[seg], self.delta_q[seg]


class FedGRecClient(SecureSumSteps, PartyLogic):
    """A device: e_u^0, its latent user embeddings and its contribution record (state), its
    interactions (data)."""

    def __init__(self, cfg: FedGRecConfig, num_items: int, num_clients: int = 0) -> None:
        """``num_clients``: how many clients the run has (public; needed under ``dp``, whose
        sampling rate it sets)."""
        self.cfg = cfg
        self.num_items = num_items
        self.conv = LightGCNConv(cfg.num_layers)
        self.secure = cfg.sum_client()
        self.layout = DPLayout.of(cfg, num_items)
        self.dp = DPSumClient(cfg, num_clients, self.layout.size) if dp_on(cfg) else None

    def init_state(self, party: Any, data: Any, secret: PartySecret) -> dict[str, Any]:
        """e_u^0 ~ N(0, 0.1^2) from the client's own secret (LightGCN's initialisation)."""
        k, d = self.cfg.num_layers, self.cfg.dim
        e0 = torch.randn(d, generator=secret.generator("fedgrec-init-user")) * 0.1
        state = {"e0": e0, "latent": torch.zeros(k, d), "sent": torch.zeros(k, d,
                 dtype=torch.float64), "contributions": 0}
        if self.dp is not None:
            state[DEGREE_SENT] = 0.0
        return state

    # -- the upload ---------------------------------------------------------------------------
    def upload(self, ctx: PartyContext, x: SparseUpload, request: Payload,
               pending: torch.Tensor | None) -> Payload:
        """Step 4's message for the vector ``x`` (built from its nonzero entries): the secure
        sum's keys (of ``x`` dense), or (plain sum) ``x`` clipped and fixed-point encoded
        exactly as the secure sum would, in the ``plain_upload`` form. ``pending``: the latent
        sources this upload contributes, recorded once the upload is in the sum."""
        ctx.state[PENDING] = pending
        if self.cfg.secure_aggregation:
            return self.secure.advertise(ctx, x, request)
        out = self.secure.plain(ctx, x, request, self.cfg.plain_upload)
        commit(ctx.state)
        return out

    @step(STEP_MASK)
    def secagg_mask(self, ctx: PartyContext, payload: Payload) -> Payload:
        """The secure sum's masking step; the masked input is in the sum from here on (fewer
        than ``t`` survivors abort the whole run), so the pending contribution is recorded."""
        out = self.secure.mask(ctx, payload)
        commit(ctx.state)
        return out

    # -- warm-up ------------------------------------------------------------------------------
    @step(WARMUP_DEGREES, cohort=True, broadcast=True)
    def warmup_degrees(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """Algorithm 1's degree count: each client's indicator of its items, dense."""
        out = []
        for c in ctxs:
            items = np.asarray(c.data.train_items, dtype=np.int64)
            # A count of 1 is sent as secagg_clip, the largest value the sum carries exactly.
            x = SparseUpload(self.num_items, items, np.full(len(items), self.cfg.secagg_clip))
            out.append(self.upload(c, x, payload, None))
        return out

    @step(WARMUP_LATENT, cohort=True, broadcast=True)
    def warmup_latent(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """Warm-up pass for item layer ``k = payload["layer"]``: the client computes e_u^{k-1}
        (its own e_u^0, or one propagation from the downloaded e_t^{k-2}) and uploads its
        contribution e_u^{k-1} / sqrt(|N_u| |N_t|) on its items' rows, dense."""
        layer = int(payload["layer"])
        tables = full_tables(payload, ctxs[0].device)
        rows = cohort_rows(ctxs)
        w = edge_weights(rows, tables, tables.index(rows.local, rows.items))
        if layer == 1:
            source = torch.stack([c.state["e0"] for c in ctxs]).double()
        else:
            item_rows = tables.item_layers(tables.index(rows.local, rows.items))[layer - 2]
            source = propagate_to_users(rows, item_rows, w, len(ctxs)).double()
            source = source.cpu()
            for i, c in enumerate(ctxs):
                c.state["latent"][layer - 2] = source[i].float()
        out = []
        for i, (c, seg) in enumerate(zip(ctxs, segments(rows.counts), strict=True)):
            sent = c.state["sent"].clone()
            delta, capped = self.capped_change(source[i][None] - sent[layer - 1][None], w[seg])
            sent[layer - 1] = sent[layer - 1] + delta[0] if bool(capped[0]) else source[i]
            at, values = contribution_rows(rows.items[seg], w[seg], delta, self.num_items)
            out.append(self.upload(c, SparseUpload(self.num_items * self.cfg.dim, at, values),
                                   payload, sent))
        return out

    # -- a round ------------------------------------------------------------------------------
    @step(REQUEST_ROWS, cohort=True, broadcast=True)
    def request_rows(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """``download: rows``: the rows this client will read this round (its items and its
        sampled negatives), which the server then learns."""
        rows = cohort_rows(ctxs, num_items=self.num_items)
        neg_local, neg_items = self.negatives(ctxs, rows)
        local = torch.cat([rows.local, neg_local])
        items = torch.cat([rows.items, neg_items])
        keys = torch.unique(local * self.num_items + items)
        per = torch.bincount(keys // self.num_items, minlength=len(ctxs)).tolist()
        return [{"rows": part % self.num_items} for part in keys.split(per)]

    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        return self.round(ctxs, full_tables(payload, ctxs[0].device), [payload] * len(ctxs))

    @step(TRAIN_ROWS, cohort=True)
    def train_rows(self, ctxs: Sequence[PartyContext],
                   payloads: Sequence[Payload]) -> list[Payload]:
        dev = ctxs[0].device
        rows = [torch.as_tensor(p["rows"], device=dev).long() for p in payloads]
        keys = torch.cat([r + i * self.num_items for i, r in enumerate(rows)])
        if len(keys) > 1 and bool((keys[1:] <= keys[:-1]).any()):
            raise ProtocolError("downloaded rows are not sorted and distinct")

        def cat(name: str, dim: int = 0) -> torch.Tensor:
            return torch.cat([torch.as_tensor(p[name], device=dev).float() for p in payloads],
                             dim)

        tables = Tables(cat("item_emb"), cat("latent", 1), cat("degrees"), self.num_items, keys)
        return self.round(ctxs, tables, payloads)

    def negatives(self, ctxs: Sequence[PartyContext],
                  rows: CohortRows) -> tuple[torch.Tensor, torch.Tensor]:
        """``num_negatives`` uniform negatives per positive, keyed by (client secret, round,
        row): private to the client, the same in ``request_rows`` and the training step."""
        n_neg = self.cfg.num_negatives
        if len(rows.items) == 0:
            empty = torch.zeros(0, dtype=torch.int64, device=rows.items.device)
            return empty, empty
        seeds = cohort_seeds(ctxs, ctxs[0].round, "fedgrec-negatives").to(rows.items.device)
        local = rows.local.repeat_interleave(n_neg)
        users = rows.users.repeat_interleave(n_neg)
        position = rows.position.repeat_interleave(n_neg) * n_neg + torch.arange(
            n_neg, device=local.device).repeat(len(rows.items))
        return local, sample_negatives(seeds[local], users, position, self.num_items, rows.keys)

    def round(self, ctxs: Sequence[PartyContext], tables: Tables,
              requests: Sequence[Payload]) -> list[Payload]:
        """Steps 2-4 for the cohort (module doc of :mod:`fedrec.algorithms.methods.fedgrec`)."""
        local = self.local_round(ctxs, tables, requests)
        return [self.client_upload(c, requests[i], local, i) for i, c in enumerate(ctxs)]

    def local_round(self, ctxs: Sequence[PartyContext], tables: Tables,
                    requests: Sequence[Payload]) -> LocalRound:
        """Steps 2-3 for the cohort: the latent user embeddings refreshed, ``e_u^0`` trained
        (both kept in each client's state), and what Step 4 uploads from; nothing is sent."""
        cfg, n_items, m = self.cfg, self.num_items, len(ctxs)
        k_layers, d = cfg.num_layers, cfg.dim
        refresh = bool(int(requests[0]["refresh"])) if m else False
        rows = cohort_rows(ctxs, num_items=n_items)
        pos_at = tables.index(rows.local, rows.items)
        w = edge_weights(rows, tables, pos_at)
        # Step 2: e_u^k = sum_{t in N_u} e_t^{k-1} / sqrt(|N_u| |N_t|), k = 1..K.
        item_layers = tables.item_layers(pos_at)
        user_latent = [propagate_to_users(rows, item_layers[k], w, m) for k in range(k_layers)]
        for i, c in enumerate(ctxs):
            c.state["latent"] = torch.stack([u[i] for u in user_latent]).cpu() if k_layers else (
                torch.zeros(0, d))
        # Step 3: E local Adam steps on e_u^0 and each client's own copy of its item rows.
        neg_local, neg_items = self.negatives(ctxs, rows)
        n_pos = len(rows.items)
        local = torch.cat([rows.local, neg_local])
        items = torch.cat([rows.items, neg_items])
        pair_keys, pair_of = torch.unique(local * n_items + items, return_inverse=True)
        pair_local, pair_item = pair_keys // n_items, pair_keys % n_items
        at = tables.index(pair_local, pair_item)
        q0 = tables.item_emb[at].clone()
        q_fixed = sum((tables.latent[k][at] for k in range(k_layers)),
                      torch.zeros_like(q0))
        dev = q0.device
        own = cfg.own_edge_gradient and k_layers > 0
        # own_edge_gradient: e_u^1 and the positives' e_t^1 are recomputed from the client's
        # own copies (their other terms stay fixed), so the gradient also takes LightGCN's
        # layer-1 paths along the client's own edges.
        u_fixed = sum(user_latent[1:] if own else user_latent, torch.zeros(m, d, device=dev))
        p = torch.stack([c.state["e0"] for c in ctxs]).to(q0.device)
        if cfg.user_fit_train_steps:
            p = self.fit_users(ctxs, rows, p, sum(user_latent, torch.zeros_like(p)),
                               tables.item_layers(torch.arange(n_items, device=dev)),
                               cfg.user_fit_train_steps, "fedgrec-user-fit-train")
        p = p.requires_grad_(True)
        q = q0.clone().requires_grad_(True)
        if own:
            sent0 = torch.stack([c.state["sent"][0] for c in ctxs]).to(q0)
        opt = torch.optim.Adam([p, q], lr=cfg.client_lr(ctxs[0].round if m else 1))
        alpha = 1.0 / (k_layers + 1)
        client_loss = torch.zeros(m, device=dev)
        for _ in range(cfg.local_steps):
            opt.zero_grad()
            user = alpha * (p + u_fixed)
            item = alpha * (q + q_fixed)
            if own:
                user_1, item_1 = own_edge_layer1(p, q, sent0, rows.local, pair_of[:n_pos], w)
                user, item = user + alpha * user_1, item + alpha * item_1
            per, per_local = self.per_row_loss(user, item, p, q, local, pair_of, n_pos)
            counts = torch.bincount(per_local, minlength=m).clamp(min=1).float()
            # Each client's mean loss; their sum has each client's own gradient.
            client_loss = torch.zeros(m, device=dev).index_add_(0, per_local, per) / counts
            client_loss.sum().backward()
            opt.step()
        for i, c in enumerate(ctxs):
            c.state["e0"] = p[i].detach().cpu().clone()
        return LocalRound(refresh, rows, w, client_loss.detach().cpu(), pair_item.cpu(),
                          (q.detach() - q0).double().cpu(),
                          segments(np.bincount(pair_local.cpu().numpy(), minlength=m)),
                          segments(rows.counts))

    def client_upload(self, ctx: PartyContext, request: Payload, local: LocalRound, i: int,
                      items: tuple[torch.Tensor, torch.Tensor] | None = None,
                      clip: bool = True) -> Payload:
        """Step 4 for the cohort's client ``i`` of ``local``: the dense upload ``[loss | delta
        e_t^0 | rows trained | latent deltas]`` built from its rows (under ``dp``,
        :meth:`dp_upload`'s vector), sent in the run's mode. ``items``: ``(rows, their
        change)`` sent as its item-row block instead of what it trained (a malicious client's,
        :mod:`fedrec.algorithms.methods.fedgrec.poisoning`); every other block is its own.
        ``clip`` False: the DP aggregate's clip skipped, as a malicious client may."""
        cfg, n_items = self.cfg, self.num_items
        k_layers, d = cfg.num_layers, cfg.dim
        mine, delta = items if items is not None else local.item_rows(i)
        rseg = local.row_segs[i]
        if self.dp is not None:
            return self.dp_upload(ctx, request, local.refresh, mine, delta,
                                  local.rows.items[rseg].cpu(), clip=clip)
        at = [np.zeros(1, dtype=np.int64), row_positions(mine, d, 1),
              1 + n_items * d + mine.numpy()]
        values = [np.array([float(local.client_loss[i])]), delta.numpy().ravel(),
                  np.full(len(mine), cfg.secagg_clip)]
        pending = None
        if local.refresh and k_layers:
            sources = torch.stack([ctx.state["e0"], *ctx.state["latent"][: k_layers - 1]])
            w = local.w[rseg]
            change, capped = self.capped_change(sources.double() - ctx.state["sent"], w)
            # Exactly the sources where the whole change is sent.
            pending = torch.where(capped[:, None], ctx.state["sent"] + change, sources.double())
            lat_at, lat_values = contribution_rows(local.rows.items[rseg], w, change, n_items)
            at.append(1 + n_items * (d + 1) + lat_at)
            values.append(lat_values)
        size = 1 + n_items * (d + 1) + (k_layers * n_items * d if local.refresh else 0)
        x = SparseUpload(size, np.concatenate(at), np.concatenate(values))
        return self.upload(ctx, x, request, pending)

    def dp_upload(self, ctx: PartyContext, request: Payload, refresh: bool,
                  trained: torch.Tensor, delta_rows: torch.Tensor,
                  items: torch.Tensor, clip: bool = True) -> Payload:
        """Under ``dp``: Step 4's one vector ``[delta e_t^0 | degree change | latent change]``
        (:mod:`fedrec.algorithms.methods.fedgrec.dp`; no degree block with ``dp_degree``, the
        whole latent contribution with ``dp_latent: estimate``, none with ``none``), bounded
        to ``dp_clip`` as a whole or per block
        (:class:`~fedrec.algorithms.methods.fedgrec.dp.DPBudget`) and handed to the DP
        aggregate; the clipped share of each change is recorded once it is in the sum.
        ``trained``/``delta_rows``: the item rows it trained and their change; ``items``: its
        own items."""
        assert self.dp is not None
        cfg, lay, k = self.cfg, self.layout, self.cfg.num_layers
        whole = cfg.dp_latent == "estimate"  # the whole contribution, not a change
        at, values = [row_positions(trained, lay.dim)], [delta_rows.numpy().ravel()]
        if lay.degrees is not None:  # a public degree needs no degree block
            at.append(lay.degrees + items.numpy())
            values.append(np.full(len(items), 1.0 - ctx.state[DEGREE_SENT]))
        change = None
        if refresh and lay.latent is not None and len(items):
            sources = torch.stack([ctx.state["e0"], *ctx.state["latent"][: k - 1]]).double()
            change = sources if whole else sources - ctx.state["sent"]
            w = torch.full((len(items),), len(items) ** -0.5, dtype=torch.float64)
            lat_at, lat_values = contribution_rows(items, w, change, lay.num_items)
            at.append(lay.latent + lat_at)
            values.append(lat_values)
        x, f_head, f_latent = DPBudget.of(cfg).bound(
            SparseUpload(lay.size, np.concatenate(at), np.concatenate(values)).dense(), lay)
        f_degree = f_head if lay.degrees is not None else 0.0
        ctx.state[PENDING] = recorded(ctx.state, f_degree, f_latent, change, whole)
        out = self.dp.upload(ctx, x, request, clip=clip)
        if not self.dp.masked:  # a plain upload is in the sum once sent
            commit(ctx.state)
        return out

    def capped_change(self, delta: torch.Tensor,
                      w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The part of the change ``delta`` ([L, d]) of a client's latent sources that it sends
        now, given the weights ``w`` of its training rows: all of it, unless a row
        ``delta[l] / sqrt(|N_u| |N_t|)`` would leave ``[-secagg_clip, secagg_clip]``; then that
        layer's change scaled down to fit, the rest left for its next refresh (so the server's
        tables stay sums of what each client recorded as sent, never clipped behind its back).
        Also returns which layers were scaled down."""
        w_max = float(w.max()) if len(w) else 0.0
        peak = delta.abs().amax(dim=1) * w_max
        room = self.cfg.secagg_clip * (1 - 1e-9)  # the scaled rows stay inside the clip
        scale = torch.where(peak > self.cfg.secagg_clip, room / peak.clamp(min=1e-300),
                            torch.ones((), dtype=peak.dtype))
        return delta * scale.to(delta)[:, None], peak > self.cfg.secagg_clip

    def per_row_loss(self, user: torch.Tensor, item: torch.Tensor, p: torch.Tensor,
                     q: torch.Tensor, local: torch.Tensor, pair_of: torch.Tensor,
                     n_pos: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The loss of each training row and its client: BPR on (positive, negative) triples
        (LightGCN's L2 on the layer-0 rows, halved, per triple) or MSE on positives (label 1)
        and negatives (label 0)."""
        cfg = self.cfg
        n_neg = cfg.num_negatives
        u_rows = user[local]
        scores = (u_rows * item[pair_of]).sum(-1)
        if cfg.loss == "bpr":
            pos = scores[:n_pos].repeat_interleave(n_neg)
            pos_pair = pair_of[:n_pos].repeat_interleave(n_neg)
            neg_pair = pair_of[n_pos:]
            trip_local = local[n_pos:]
            l2 = (p[trip_local].square().sum(-1) + q[pos_pair].square().sum(-1)
                  + q[neg_pair].square().sum(-1))
            return -F.logsigmoid(pos - scores[n_pos:]) + 0.5 * cfg.reg * l2, trip_local
        labels = torch.cat([torch.ones(n_pos), torch.zeros(len(scores) - n_pos)]).to(scores)
        l2 = p[local].square().sum(-1) + q[pair_of].square().sum(-1)
        return (scores - labels).square() + 0.5 * cfg.reg * l2, local

    # -- evaluation ---------------------------------------------------------------------------
    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """Each client ranks every item but its known ones with its representation (its e_u^0
        and latent user embeddings propagated from the downloaded tables, not stored) against
        the items' (``alpha``-combined e_t^0..e_t^K) and reports its own metrics and, when the
        request names targets, their exposure in that ranking
        (:func:`~fedrec.algorithms.mf_common.with_exposure`)."""
        user_layers, item_layers = self.ranking_layers(ctxs, full_tables(payload,
                                                                          ctxs[0].device))
        p = self.conv.combine(user_layers)
        q = self.conv.combine(item_layers)
        split = split_of(payload)
        replies = evaluate_clients_ranking(ctxs, p, q, self.cfg.topk, split=split)
        return with_exposure(replies, ctxs, lambda start, stop: p[start:stop] @ q.T, payload,
                             split)

    def ranking_layers(self, ctxs: Sequence[PartyContext],
                       tables: Tables) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """``([e_u^0, ..., e_u^K], [e_t^0, ..., e_t^K])`` a cohort ranks with: its e_u^0 (fitted
        to ``tables`` for ``user_fit_steps`` steps, never kept) and its latent user embeddings
        propagated from ``tables`` (the whole downloaded tables), not stored."""
        rows = cohort_rows(ctxs, num_items=self.num_items if self.cfg.user_fit_steps else None)
        w = edge_weights(rows, tables, rows.items)
        item_layers = tables.item_layers(torch.arange(self.num_items, device=w.device))
        user_layers = [torch.stack([c.state["e0"] for c in ctxs]).to(w.device)]
        user_layers += [propagate_to_users(rows, item_layers[k][rows.items], w, len(ctxs))
                        for k in range(self.cfg.num_layers)]
        if self.cfg.user_fit_steps:
            user_layers[0] = self.fit_users(ctxs, rows, user_layers[0],
                                            sum(user_layers[1:], torch.zeros_like(
                                                user_layers[0])), item_layers,
                                            self.cfg.user_fit_steps, "fedgrec-user-fit-rank")
        return user_layers, item_layers

    def fit_users(self, ctxs: Sequence[PartyContext], rows: CohortRows, e0: torch.Tensor,
                  user_latent: torch.Tensor, item_layers: Sequence[torch.Tensor],
                  steps: int, tag: str) -> torch.Tensor:
        """Each client's ``e_u^0`` ([m, d]) fitted to the downloaded tables (``user_fit_steps``
        before ranking, ``user_fit_train_steps`` before Step 3; not the paper's): ``steps`` Adam
        steps (``user_fit_lr``, a fresh optimizer) on ``e_u^0`` alone, every item row and latent
        embedding fixed, on the client's mean BPR loss of its training positives, each against
        a fresh uniform negative every step (keyed by its own secret, the round, ``tag`` and the
        step), plus LightGCN's L2 on ``e_u^0``.
        ``user_latent``: the sum of its latent user embeddings ``e_u^1..e_u^K``;
        ``item_layers``: the whole tables ``[e_t^0, ..., e_t^K]``. A client trained only when
        sampled (once an epoch on Gowalla) keeps an ``e_u^0`` fitted to the tables of that
        round and limited by ``local_steps``; this brings it up to date with the current ones."""
        cfg, m = self.cfg, len(ctxs)
        n_pos = len(rows.items)
        if n_pos == 0:
            return e0
        dev = e0.device
        alpha = 1.0 / (cfg.num_layers + 1)
        item = self.conv.combine(list(item_layers))
        fixed = alpha * user_latent.detach()
        seeds = cohort_seeds(ctxs, ctxs[0].round, tag).to(dev)[rows.local]
        counts = torch.bincount(rows.local, minlength=m).clamp(min=1).to(item.dtype)
        p = e0.detach().clone().requires_grad_(True)
        opt = torch.optim.Adam([p], lr=cfg.user_fit_lr)
        pos_item = item[rows.items]
        for s in range(steps):
            neg = sample_negatives(seeds, rows.users, rows.position * steps + s,
                                   self.num_items, rows.keys)
            user = (alpha * p + fixed)[rows.local]
            x = (user * (pos_item - item[neg])).sum(-1)
            per = torch.zeros(m, device=dev, dtype=x.dtype).index_add_(0, rows.local,
                                                                       -F.logsigmoid(x))
            loss = (per / counts).sum() + 0.5 * cfg.reg * p.square().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return p.detach()


def commit(state: dict[str, Any]) -> None:
    """Record the pending latent contribution as the one the server now holds (under ``dp``,
    a mapping of what it records: :func:`~fedrec.algorithms.methods.fedgrec.dp.recorded`)."""
    pending = state.pop(PENDING, None)
    if isinstance(pending, Mapping):
        state["contributions"] += int("sent" in pending)
        state.update(pending)
    elif pending is not None:
        state["sent"] = pending
        state["contributions"] += 1


def edge_weights(rows: CohortRows, tables: Tables, at: torch.Tensor) -> torch.Tensor:
    """``1 / sqrt(|N_u| |N_t|)`` per training row (``|N_t|`` from the downloaded degrees; an
    item the degrees miss, which cannot be one of the client's own, would get weight 0)."""
    deg_u = torch.from_numpy(rows.counts).double().to(at.device)[rows.local]
    prod = deg_u * tables.degrees[at].double()
    return torch.where(prod > 0, prod.clamp(min=1e-12).rsqrt(), torch.zeros(()))


def own_edge_layer1(p: torch.Tensor, q: torch.Tensor, sent0: torch.Tensor, local: torch.Tensor,
                    pos_pair: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer-1 terms that depend on what the clients train (``own_edge_gradient``): each
    client's ``e_u^1 = sum_{t in N_u} w_ut q_t`` ([m, d], from its copies ``q`` of its item
    rows) and, on each client's own item pairs, the change ``w_ut (e_u^0 - s_u^{0, sent})`` of
    ``e_t^1`` from making its share of the server's sum current ([pairs, d], zero elsewhere).
    ``local``/``pos_pair``/``w``: each positive's client, pair row and ``1 / sqrt(|N_u| |N_t|)``.
    """
    wt = w.to(q.dtype)[:, None]
    user_1 = torch.zeros_like(p).index_add(0, local, wt * q[pos_pair])
    item_1 = torch.zeros_like(q).index_add(0, pos_pair, wt * (p[local] - sent0[local]))
    return user_1, item_1


def propagate_to_users(rows: CohortRows, item_rows: torch.Tensor, w: torch.Tensor,
                       num_clients: int) -> torch.Tensor:
    """``[num_clients, d]``: each client's sum of ``w * item_rows`` over its training rows."""
    idx = torch.arange(len(rows.local), device=item_rows.device)
    return bipartite_propagate(item_rows, idx, rows.local, w, num_clients).float()


def segments(counts: np.ndarray) -> list[slice]:
    """The slice of each client's entries in rows concatenated client by client."""
    ends = np.cumsum(counts).tolist()
    return [slice(e - int(n), e) for e, n in zip(ends, counts.tolist(), strict=True)]


def row_positions(items: torch.Tensor, dim: int, offset: int = 0) -> np.ndarray:
    """Flat positions of rows ``items`` of a ``[N, dim]`` block starting at ``offset``."""
    return (offset + items.cpu().numpy()[:, None] * dim + np.arange(dim)).ravel()


def contribution_rows(items: torch.Tensor, w: torch.Tensor, sources: torch.Tensor,
                      num_items: int) -> tuple[np.ndarray, np.ndarray]:
    """A client's contribution ``[L, N, d]`` of ``sources`` ``[L, d]``, as the flat positions
    and float64 values of its nonzero rows: row ``t`` of layer ``l`` is ``sources[l] /
    sqrt(|N_u| |N_t|)`` for the client's items ``items`` (weights ``w``), 0 elsewhere."""
    layers, d = sources.shape
    wt = w.double().cpu()
    values = wt[None, :, None] * sources.double().cpu()[:, None, :]  # [L, n, d]
    at = [row_positions(items, d, layer * num_items * d) for layer in range(layers)]
    return (np.concatenate(at) if at else np.zeros(0, dtype=np.int64),
            values.numpy().ravel())
