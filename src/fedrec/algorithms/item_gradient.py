"""The client step of FCF (:mod:`fedrec.algorithms.methods.fcf`), which FedMF
(:mod:`fedrec.algorithms.methods.fedmf`) runs unchanged under encryption: user factors never leave
the
device, the item rows a client touched go back as gradients.

Each client takes ``local_steps`` gradient steps (``lr_user``, on its mean loss) on its own user
factor ``p_u`` (and bias) with the received item factors ``Q`` fixed, then computes the gradient of
its loss with respect to the item rows it touched (its rated items; for implicit feedback, its
positives and negatives keyed by its secret). Losses are those of :mod:`fedrec.models.mf`.

The cohort step is vectorised: every client's gradient is taken on its *own copy* of the item
rows it touched (one leaf tensor holding all ``(client, item)`` pairs), so one backward pass over
the cohort's summed loss yields each client's exact individual gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from fedrec.algorithms.mf_common import (
    MFConfig,
    cohort_rows,
    evaluate_clients_explicit,
    evaluate_clients_ranking,
    rating_unit,
    requested_split,
    scale_midpoint,
    with_exposure,
)
from fedrec.config import check_range, option
from fedrec.core.codec import Payload
from fedrec.data.types import Dataset, RatingDataset
from fedrec.federation.runtime import PartyContext, cohort_seeds
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import SecureSumOptions
from fedrec.models.mf import bpr_loss, init_factors, rating_loss, sample_negatives


@dataclass
class ItemGradientConfig(MFConfig, SecureSumOptions):
    """FCF's options, which FedMF shares (it reads ``lr`` as its SGD step on the item table and
    runs no secure aggregation: the ``secagg_*`` options are FCF's)."""

    rounds: int = option(100)
    eval_every: int = option(10)
    lr: float = option(0.01, "server Adam learning rate on the item factors")
    local_steps: int = option(5, "client steps on its user factor per round")
    lr_user: float = option(0.5, "client step size on its own user factor (mean loss)")
    # Without secure aggregation the (sparse) uploads go in clear, unclipped: the plain sum of
    # SecureSumOptions is not used here.
    PLAIN_SUM_ENCODED: ClassVar[bool] = False
    secure_aggregation: bool = option(False, "true: the server sees only masked, dense uploads "
                                             "and their sum (secagg_variant); false: every "
                                             "upload in clear")
    secagg_clip: float = option(10.0)

    def validate(self) -> None:
        super().validate()
        check_range("local_steps", self.local_steps, 1)
        check_range("lr_user", self.lr_user, 0.0, low_open=True)


class LocalMF:
    """The device side of a cohort: its rows' model (explicit ratings or implicit feedback) from
    public facts of the dataset, the local step and the client-side evaluation."""

    def __init__(self, dataset: Dataset) -> None:
        self.explicit = isinstance(dataset, RatingDataset)
        self.num_items = dataset.num_items
        # Public facts only: the scale, never statistics of other users' ratings.
        self.rating_range = (
            (dataset.rating_min, dataset.rating_max) if self.explicit else (0.0, 0.0)
        )
        self.mu = scale_midpoint(dataset) if self.explicit else 0.0
        self.unit = rating_unit(self.rating_range) if self.explicit else 1.0

    def init_state(self, cfg: ItemGradientConfig, secret: PartySecret) -> dict[str, Any]:
        """A new client's user factor and bias."""
        gen = secret.generator("init-user")
        return {"p": init_factors(1, cfg.dim, gen)[0], "b": torch.zeros(())}

    def train(
        self, cfg: ItemGradientConfig, ctxs: Sequence[PartyContext], q: torch.Tensor,
        b_i: torch.Tensor | None
    ) -> list[Payload]:
        """The local step (module doc) of a cohort that received ``q`` (and ``b_i``): updates
        each client's user factor and bias in its state; returns each client's plaintext upload
        ``{"items", "grad_q"[, "grad_b"]}``."""
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

    def evaluate(self, cfg: ItemGradientConfig, ctxs: Sequence[PartyContext], q: torch.Tensor,
                 b_i: torch.Tensor | None, request: Payload) -> list[Payload]:
        """Each client's error sums (explicit) or ranking metrics on the ``request``'s split,
        and the exposure of the targets it names (:func:`~fedrec.algorithms.mf_common.
        with_exposure`), ranking by ``p . q_i + b_i`` (the predicted rating's order)."""
        split = requested_split(request)
        p = torch.stack([c.state["p"] for c in ctxs]).to(ctxs[0].device)
        b_u = torch.stack([c.state["b"] for c in ctxs]).to(ctxs[0].device)
        if self.explicit:
            assert b_i is not None
            replies = evaluate_clients_explicit(ctxs, p, b_u, q, b_i, self.mu,
                                                self.rating_range, split)
        else:
            replies = evaluate_clients_ranking(ctxs, p, q, cfg.topk, split=split)

        def scores(start: int, stop: int) -> torch.Tensor:
            rows = p[start:stop] @ q.T
            return rows if b_i is None else rows + b_i

        return with_exposure(replies, ctxs, scores, request, split)
