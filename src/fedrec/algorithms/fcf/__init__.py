"""FCF: federated collaborative filtering (Ammad-ud-din et al., 2019).

User factors never leave the device; the server holds the item factors. One round:

1. ``train`` (server -> selected clients): the current item factors ``Q`` (and item biases for
   explicit ratings).
2. Each client takes ``local_steps`` gradient steps on its own user factor ``p_u`` (and bias)
   with ``Q`` fixed, then computes the gradient of its loss with respect to the item rows it
   touched (its rated items; for implicit feedback, its positives and sampled negatives) and
   uploads ``(item ids, gradient rows, loss)``.
3. The server sums the gradients and takes one Adam step on ``Q``.

Losses are those of :mod:`fedrec.models.mf`. The original FCF targets implicit feedback with an
ALS user step; we take gradient steps (of the client's mean loss) on the user side so that one
code path serves explicit ratings (MSE) and implicit feedback (BPR).

What the server learns: the uploaded rows name the items each client touched (for explicit
ratings, exactly the rated items). FCF has no defence against this; FedGNN's pseudo items and
LDP (:mod:`fedrec.algorithms.fedgnn`) exist because of it.

``secure_aggregation: true`` closes that channel against an honest-but-curious server: each
client's upload becomes its gradient *dense over all items* (factors then biases, so that the
shape reveals nothing), fixed-point encoded, and the cohort's uploads are summed with Bonawitz
et al.'s secure aggregation (:mod:`fedrec.federation.secure_sum`): the ``train`` step ends by
advertising the client's keys, then ``secagg_share`` / ``secagg_mask`` / ``secagg_unmask``.
The server receives only public keys, encrypted shares, masked vectors (uniform in
Z_{2^secagg_bits}) and the sum; it learns the cohort's summed gradient and who survived, nothing
about any one client, as long as fewer than ``t = ceil(secagg_threshold · n)`` clients collude
with it. Clients that drop after sharing keys are left out of the sum and their masks removed;
fewer than ``t`` survivors abort the round. The model then equals plain FCF's up to the
fixed-point rounding (per coordinate and client at most ``0.5 · secagg_clip · n /
(2^(secagg_bits-1) - 1)``) and clipping to ``[-secagg_clip, secagg_clip]``. Costs: dense
uploads, three more round trips, ``O(n)`` mask expansions per client.

The cohort step is vectorised: every client's gradient is taken on its *own copy* of the item
rows it touched (one leaf tensor holding all ``(client, item)`` pairs), so one backward pass over
the cohort's summed loss yields each client's exact individual gradient.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import FederatedJob, FederatedTrainer, ServerLogic
from fedrec.algorithms.mf_common import (
    MFConfig,
    cohort_rows,
    eval_request,
    evaluate_clients_explicit,
    evaluate_clients_ranking,
    rating_unit,
    reduce_client_metrics,
    requested_split,
    scale_midpoint,
)
from fedrec.config import check_range, option
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset, InteractionDataset, RatingDataset
from fedrec.errors import ProtocolError
from fedrec.federation.aggregation import sum_rows
from fedrec.federation.runtime import PartyContext, PartyLogic, Runtime, cohort_seeds
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import (
    SECAGG_STEPS,
    SecureSumClient,
    run_secure_sum,
    secure_sum_config,
    secure_sum_request,
    validate_secure_sum_options,
)
from fedrec.models.mf import bpr_loss, init_factors, rating_loss, sample_negatives
from fedrec.privacy.report import no_guarantee


@dataclass
class FCFConfig(MFConfig):
    rounds: int = option(100)
    eval_every: int = option(10)
    lr: float = option(0.01, "server Adam learning rate on the item factors")
    local_steps: int = option(5, "client steps on its user factor per round")
    lr_user: float = option(0.5, "client step size on its own user factor (mean loss)")
    # Secure aggregation (Bonawitz et al. 2017): the server sees only masked, dense uploads and
    # their sum; gradient coordinates are clipped and fixed-point encoded in a ring.
    secure_aggregation: bool = option(False, "true: the server sees only masked, dense uploads "
                                             "and their sum (Bonawitz et al. 2017)")
    secagg_threshold: float = option(0.6, "t = ceil(secagg_threshold * cohort) clients must "
                                          "survive each step, in (0.5, 1]")
    secagg_clip: float = option(10.0, "gradient coordinates are clipped to [-secagg_clip, "
                                      "secagg_clip]")
    secagg_bits: int = option(32, "fixed-point encoding in the ring Z_{2^secagg_bits} of the "
                                  "masked sums")

    def validate(self) -> None:
        super().validate()
        check_range("local_steps", self.local_steps, 1)
        check_range("lr_user", self.lr_user, 0.0, low_open=True)
        validate_secure_sum_options(self.secagg_threshold, self.secagg_clip, self.secagg_bits)


class FCFClient(PartyLogic):
    """A device: its user factor (state) and its own rows (data)."""

    def __init__(self, cfg: FCFConfig, dataset: Dataset) -> None:
        self.cfg = cfg
        self.explicit = isinstance(dataset, RatingDataset)
        self.num_items = dataset.num_items
        # Public facts only: the scale, never statistics of other users' ratings.
        self.rating_range = (
            (dataset.rating_min, dataset.rating_max) if self.explicit else (0.0, 0.0)
        )
        self.mu = scale_midpoint(dataset) if self.explicit else 0.0
        self.unit = rating_unit(self.rating_range) if self.explicit else 1.0
        self.secure = SecureSumClient(cfg.secagg_threshold, cfg.secagg_clip, cfg.secagg_bits)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        gen = secret.generator("init-user")
        return {"p": init_factors(1, self.cfg.dim, gen)[0], "b": torch.zeros(())}

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Payload:
        return self.handle_cohort(step, [ctx], [payload])[0]

    def item_parameters(
        self, payload: Payload, ctx: PartyContext
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The broadcast item factors and (explicit ratings only) item biases, on ``ctx``'s
        device. Subclasses that ship the item table differently (FedMF: encrypted) override
        this."""
        q = torch.as_tensor(payload["item_factors"], device=ctx.device)
        b_i = torch.as_tensor(payload["item_bias"], device=ctx.device) if self.explicit else None
        return q, b_i

    def handle_cohort(
        self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload]
    ) -> list[Payload]:
        if step in SECAGG_STEPS:
            return [self.secure.handle(step, c, p) for c, p in zip(ctxs, payloads, strict=True)]
        if any(p is not payloads[0] for p in payloads):
            raise ValueError("FCF expects the same broadcast for the whole cohort")
        # Decoded once per cohort: every client received the same broadcast.
        q, b_i = self.item_parameters(payloads[0], ctxs[0])
        if step == "train":
            out = self._train(ctxs, q, b_i)
            if self.cfg.secure_aggregation:
                return [self.secure.advertise(c, self.dense_upload(o), payloads[0])
                        for c, o in zip(ctxs, out, strict=True)]
            return out
        if step == "evaluate":
            p = torch.stack([c.state["p"] for c in ctxs]).to(ctxs[0].device)
            b_u = torch.stack([c.state["b"] for c in ctxs]).to(ctxs[0].device)
            split = requested_split(payloads[0])
            if self.explicit:
                return evaluate_clients_explicit(ctxs, p, b_u, q, b_i, self.mu, self.rating_range,
                                                 split)
            return evaluate_clients_ranking(ctxs, p, q, self.cfg.topk, split=split)
        raise ValueError(f"FCF clients have no step {step!r}")

    def _train(
        self, ctxs: Sequence[PartyContext], q: torch.Tensor, b_i: torch.Tensor | None
    ) -> list[Payload]:
        cfg = self.cfg
        rows = cohort_rows(ctxs, num_items=None if self.explicit else self.num_items)
        dev = ctxs[0].device
        p = torch.stack([c.state["p"] for c in ctxs]).to(dev).requires_grad_(True)
        b_u = torch.stack([c.state["b"] for c in ctxs]).to(dev).requires_grad_(True)
        local, items = rows.local, rows.items
        if not self.explicit:
            # Negatives keyed by (client secret, round, row position): private to the client and
            # independent of the cohort.
            seeds = cohort_seeds(ctxs, ctxs[0].round, "fcf-negatives").to(dev)[local]
            neg = sample_negatives(seeds, rows.users, rows.position, self.num_items, rows.keys)
            local = torch.cat([local, local])
            items = torch.cat([items, neg])
        # Each client's own copy of each item row it touches: unique (client, item) pairs.
        pair_key = local * self.num_items + items
        pairs, pair_of_row = torch.unique(pair_key, return_inverse=True)
        pair_item = pairs % self.num_items
        pair_client = pairs // self.num_items

        n = len(rows.items)

        def loss_of(p_rows: torch.Tensor, bu_rows: torch.Tensor, q_rows: torch.Tensor,
                    bi_rows: torch.Tensor | None, item_penalty: bool) -> torch.Tensor:
            if self.explicit:
                return rating_loss(p_rows, bu_rows, q_rows, bi_rows, rows.values / self.unit,
                                   self.mu / self.unit,
                                   cfg.reg, item_penalty=item_penalty)
            return bpr_loss(p_rows, q_rows[:n], q_rows[n:], cfg.reg, item_penalty=item_penalty)

        q_rows = q[items]
        bi_rows = b_i[items] if b_i is not None else None
        # Step size per row: a client with many rows takes the same-size step as one with few.
        step = cfg.lr_user / torch.from_numpy(rows.counts).clamp(min=1).float().to(dev)
        for _ in range(cfg.local_steps):
            # Item rows are fixed here, so their penalty is a constant and is left out.
            loss = loss_of(p[local[:n]], b_u[local[:n]], q_rows, bi_rows, False)
            gp, gb = torch.autograd.grad(loss, [p, b_u], allow_unused=True)
            with torch.no_grad():
                p -= step[:, None] * gp
                if gb is not None:
                    b_u -= step * gb
        # The item gradient is taken on each client's own copy of each row it touched.
        q_pairs = q[pair_item].requires_grad_(True)
        leaves = [q_pairs]
        bi_pairs = None
        if b_i is not None:
            bi_pairs = b_i[pair_item].requires_grad_(True)
            leaves.append(bi_pairs)
        p_fixed, bu_fixed = p.detach()[local[:n]], b_u.detach()[local[:n]]
        per_row_loss = loss_of(
            p_fixed, bu_fixed, q_pairs[pair_of_row],
            bi_pairs[pair_of_row] if bi_pairs is not None else None, True,
        )
        grads = torch.autograd.grad(per_row_loss, leaves)
        counts = torch.bincount(pair_client, minlength=len(ctxs)).tolist()
        items_split = pair_item.split(counts)
        gq_split = grads[0].split(counts)
        gb_split = grads[1].split(counts) if len(grads) > 1 else [None] * len(ctxs)
        out: list[Payload] = []
        for i, ctx in enumerate(ctxs):
            ctx.state["p"] = p[i].detach().clone()
            ctx.state["b"] = b_u[i].detach().clone()
            msg: Payload = {"items": items_split[i], "grad_q": gq_split[i]}
            if gb_split[i] is not None:
                msg["grad_b"] = gb_split[i]
            out.append(msg)
        return out


    def dense_upload(self, msg: Payload) -> np.ndarray:
        """A client's sparse upload as one dense float64 vector over all items: the item-factor
        gradient (``num_items x dim``, row-major) then, for explicit ratings, the item-bias
        gradient. Its length is the same for every client."""
        items = msg["items"].cpu()
        names = ("grad_q", "grad_b") if self.explicit else ("grad_q",)
        return np.concatenate([
            sum_rows(items, msg[name].detach().cpu().double(), self.num_items).numpy().ravel()
            for name in names])


class FCFServer(ServerLogic):
    """Holds the item factors; sums client gradients; one Adam step per round."""

    def __init__(
        self, cfg: FCFConfig, num_items: int, explicit: bool, device: torch.device
    ) -> None:
        self.cfg = cfg
        self.explicit = explicit
        gen = torch_generator(cfg.seed, "init-items")
        self.q = init_factors(num_items, cfg.dim, gen).to(device).requires_grad_(True)
        self.b_i = torch.zeros(num_items, device=device, requires_grad=True)
        params = [self.q, self.b_i] if explicit else [self.q]
        self.opt = torch.optim.Adam(params, lr=cfg.lr)

    def _broadcast(self) -> Payload:
        msg: Payload = {"item_factors": self.q.detach()}
        if self.explicit:
            msg["item_bias"] = self.b_i.detach()
        return msg

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        n = self.cfg.clients_per_round or len(rt.client_ids)
        selected = rt.sample_clients(n)
        if self.cfg.secure_aggregation:
            return self._secure_round(rt, selected)
        replies = rt.broadcast("train", selected, self._broadcast())
        if not replies:
            rejected = sum(r["round"] == rnd for r in rt.ledger.rejected)
            raise ProtocolError(
                f"round {rnd}: no client update arrived ({rejected} rejected as non-finite, "
                "the rest dropped out); if updates diverge, lower lr_user or lr"
            )
        dev = self.q.device

        def gathered(name: str) -> torch.Tensor:
            return torch.cat([torch.as_tensor(r[name], device=dev) for r in replies.values()])

        items = gathered("items")
        self.opt.zero_grad()
        # The cohort's gradient: each upload's rows summed into the rows of its item ids.
        self.q.grad = sum_rows(items, gathered("grad_q"), out=torch.zeros_like(self.q))
        if self.explicit:
            self.b_i.grad = sum_rows(items, gathered("grad_b"), out=torch.zeros_like(self.b_i))
        self.opt.step()
        return {"clients": len(replies)}

    def _secure_round(self, rt: Runtime, selected: list[int]) -> dict[str, float]:
        """One round with secure aggregation: the server sees keys, ciphertexts, masked vectors
        and the cohort's summed gradient, never one client's gradient."""
        cfg = self.cfg
        num_items, dim = self.q.shape
        size = num_items * (dim + (1 if self.explicit else 0))
        sa_cfg = secure_sum_config(size, len(selected), cfg.secagg_threshold, cfg.secagg_clip,
                                   cfg.secagg_bits)
        adverts = rt.broadcast("train", selected,
                               dict(self._broadcast(), **secure_sum_request(len(selected))))
        result = run_secure_sum(rt, adverts, sa_cfg)
        total = torch.from_numpy(result.total).to(self.q.device, self.q.dtype)
        self.opt.zero_grad()
        self.q.grad = total[: num_items * dim].reshape(num_items, dim).clone()
        if self.explicit:
            self.b_i.grad = total[num_items * dim:].clone()
        self.opt.step()
        return {"clients": len(result.survivors), "dropped_after_keys": len(result.dropped)}

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.broadcast("evaluate", rt.client_ids, eval_request(self._broadcast(), split))
        return reduce_client_metrics(replies.values(), self.explicit)

    def privacy_report(self) -> dict[str, Any]:
        """No differential privacy: with secure aggregation the server learns only each
        cohort's sum (no formal bound on what a sum reveals); without it, every upload."""
        if self.cfg.secure_aggregation:
            return no_guarantee(
                protection="secure aggregation (Bonawitz et al. 2017): the server learns only "
                           "the cohort sum, against an honest-but-curious server and fewer "
                           f"than t = ceil({self.cfg.secagg_threshold} * cohort) colluding "
                           "clients",
                leakage="the server learns each round's summed (dense) item gradient of the "
                        "surviving clients and who survived; no individual upload",
                secure_aggregation=True)
        return no_guarantee(
            protection="none: user factors stay on the device, item gradients are sent in clear",
            leakage="each upload names the items the client rated (explicit) or touched "
                    "(implicit), and carries unnoised gradients",
            secure_aggregation=False)

    def state_dict(self) -> dict[str, Any]:
        return {"q": self.q.detach().clone(), "b_i": self.b_i.detach().clone(),
                "opt": copy.deepcopy(self.opt.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        with torch.no_grad():
            self.q.copy_(state["q"])
            self.b_i.copy_(state["b_i"])
        self.opt.load_state_dict(state["opt"])


def build_fcf_job(cfg: FCFConfig, dataset: Dataset, device: torch.device) -> FederatedJob:
    explicit = isinstance(dataset, RatingDataset)
    if not explicit and not isinstance(dataset, InteractionDataset):
        raise TypeError("FCF needs a rating or interaction dataset")
    return FederatedJob(
        server=FCFServer(cfg, dataset.num_items, explicit, device),
        client_logic=FCFClient(cfg, dataset),
        client_data=partition_by_user(dataset),
    )


def build_fcf(cfg: FCFConfig, dataset: Dataset, device: torch.device) -> FederatedTrainer:
    return FederatedTrainer(build_fcf_job(cfg, dataset, device), cfg, device)

