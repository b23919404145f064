"""PTF-FedRec's client (:mod:`fedrec.algorithms.methods.ptf_fedrec`): local NeuMF training and the
privacy-preserving upload of (item, score) pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.methods.ptf_fedrec.config import PTFFedRecConfig
from fedrec.algorithms.methods.ptf_fedrec.steps import DISPERSE, EVALUATE, TRAIN
from fedrec.algorithms.methods.ptf_fedrec.upload_dp import release, sample_items, upload_plan
from fedrec.algorithms.mf_common import requested_split, with_exposure
from fedrec.algorithms.ncf_common import CohortFit, NeuMFCohort, rank_within
from fedrec.core.codec import Payload
from fedrec.core.rng import counter_uniform
from fedrec.errors import ProtocolError
from fedrec.federation.runtime import PartyContext, PartyLogic, cohort_chunks
from fedrec.federation.secrets import PartySecret
from fedrec.federation.steps import step


def _laplace(u: torch.Tensor, scale: float) -> torch.Tensor:
    c = u - 0.5
    return -scale * torch.sign(c) * torch.log1p(-2 * c.abs().clamp(max=0.5 - 1e-12))


def swap_top_scores(local: torch.Tensor, is_pos: torch.Tensor, scores: torch.Tensor,
                    n_swap: torch.Tensor) -> torch.Tensor:
    """Per client ``c``: the ``n_swap[c]`` highest-scored positives exchange scores with the
    ``n_swap[c]`` highest-scored negatives (i-th highest with i-th highest). Returns new scores."""
    out = scores.clone()
    if len(scores) == 0:
        return out
    num = int(local.max()) + 1
    width = int(torch.bincount(local, minlength=num).max())
    pos_idx = torch.nonzero(is_pos).squeeze(1)
    neg_idx = torch.nonzero(~is_pos).squeeze(1)
    _, rp = rank_within(local[pos_idx], -scores[pos_idx].double())
    _, rn = rank_within(local[neg_idx], -scores[neg_idx].double())
    sel_p = rp < n_swap[local[pos_idx]]
    sel_n = rn < n_swap[local[neg_idx]]
    table = torch.full((num * width,), -1, dtype=torch.int64)
    table[local[neg_idx][sel_n] * width + rn[sel_n]] = neg_idx[sel_n]
    p_rows = pos_idx[sel_p]
    n_rows = table[local[p_rows] * width + rp[sel_p]]
    if (n_rows < 0).any():
        raise ProtocolError("swap: fewer negatives than positives to swap")
    out[p_rows] = scores[n_rows]
    out[n_rows] = scores[p_rows]
    return out


class PTFClient(PartyLogic):
    """A device: its private NeuMF, its positives, its fixed negatives, the last soft labels."""

    def __init__(self, cfg: PTFFedRecConfig, num_items: int) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.cohort = NeuMFCohort(cfg, num_items)  # local training and evaluation
        self.plan = upload_plan(cfg, num_items)  # the formal mechanism (None: upload_dp none)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        return self.cohort.init_state(data, secret)

    @step(DISPERSE)
    def disperse(self, ctx: PartyContext, payload: Payload) -> None:
        items = torch.as_tensor(payload["items"]).to(torch.int64)
        # The server does not know the client's positives and may disperse one: the client
        # drops it, keeping its own label 1 (the authors' server_data_clean).
        keep = torch.from_numpy(~np.isin(items.numpy(), ctx.data.train_items))
        ctx.state["soft_items"] = items[keep]
        ctx.state["soft_scores"] = torch.as_tensor(payload["scores"]).float()[keep]

    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload | None]:
        # Groups of similar-sized clients bound the padded batches' memory (Gowalla's 30k
        # clients at once need more than 24 GiB); each client's training is its own.
        sizes = np.array([c.data.num_train + len(c.state["negatives"])
                          + len(c.state["soft_items"]) for c in ctxs])
        out: list[Payload | None] = [None] * len(ctxs)
        for idx in cohort_chunks(sizes, self.cfg.chunk_samples):
            for i, up in zip(idx.tolist(), self._train([ctxs[i] for i in idx]), strict=True):
                out[i] = up
        return out

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        """Each client's ranking metrics of its own NeuMF (what PTF-FedRec recommends with,
        trained on the server's dispersed soft labels) and, in a poisoning experiment, its
        exposure shares of the targets ranked by the same scores
        (:func:`~fedrec.algorithms.mf_common.with_exposure`)."""
        split = requested_split(payload)
        return with_exposure(self.cohort.evaluate(ctxs, split), ctxs,
                             lambda start, stop: self.cohort.scores(ctxs[start:stop]),
                             payload, split, batch=128)

    # -- model state -----------------------------------------------------------------------
    def _train(self, ctxs: Sequence[PartyContext]) -> list[Payload]:
        return self._uploads(ctxs, self.cohort.fit(ctxs))

    def _uploads(self, ctxs: Sequence[PartyContext], fit: CohortFit) -> list[Payload]:
        """Each client's upload after its local training (module doc: ``defense``)."""
        if self.plan is not None:
            return self._dp_uploads(ctxs, fit)
        cfg, num = self.cfg, len(ctxs)
        clients, pos, rnd = fit.clients, fit.positives, fit.round
        rnd_c = torch.tensor(rnd)
        # The trained non-positives: the fixed negatives and this round's soft-labelled items.
        negs = [torch.unique(torch.cat([c.state["negatives"], c.state["soft_items"]]))
                for c in ctxs]
        p_items = torch.cat(pos)
        p_local = torch.repeat_interleave(torch.arange(num), torch.tensor([len(p) for p in pos]))
        n_items_ = torch.cat(negs)
        n_local = torch.repeat_interleave(torch.arange(num), torch.tensor([len(n) for n in negs]))
        n_pos = torch.bincount(p_local, minlength=num)
        n_neg = torch.bincount(n_local, minlength=num)
        sampling = cfg.defense in ("sampling", "sampling+swapping")
        if sampling:
            lo, hi = cfg.beta_range
            beta = lo + (hi - lo) * counter_uniform(clients, rnd_c, torch.tensor(1))
            lo, hi = cfg.gamma_range
            gamma = lo + (hi - lo) * counter_uniform(clients, rnd_c, torch.tensor(2))
            k_pos = torch.minimum(torch.floor(beta * n_pos).long().clamp(min=1), n_pos)
            k_neg = torch.minimum(torch.floor(gamma * k_pos).long().clamp(min=1), n_neg)
            _, rp = rank_within(p_local, counter_uniform(
                clients[p_local], rnd_c, torch.tensor(3), p_items))
            _, rn = rank_within(n_local, counter_uniform(
                clients[n_local], rnd_c, torch.tensor(4), n_items_))
            keep_p = rp < k_pos[p_local]
            keep_n = rn < k_neg[n_local]
        else:
            beta = torch.ones(num, dtype=torch.float64)
            gamma = n_neg / n_pos.clamp(min=1)
            k_pos, k_neg = n_pos, n_neg
            keep_p = torch.ones(len(p_items), dtype=torch.bool)
            keep_n = torch.ones(len(n_items_), dtype=torch.bool)
        up_local = torch.cat([p_local[keep_p], n_local[keep_n]])
        up_items = torch.cat([p_items[keep_p], n_items_[keep_n]])
        is_pos = torch.cat([torch.ones(int(keep_p.sum()), dtype=torch.bool),
                            torch.zeros(int(keep_n.sum()), dtype=torch.bool)])
        raw = torch.sigmoid(self.cohort.logits(fit.params, fit.table, fit.keys, up_local,
                                                  up_items, num))
        scores = raw
        n_swap = torch.zeros(num, dtype=torch.int64)
        if cfg.defense == "sampling+swapping":
            at_least = 1 if cfg.swap_rate > 0 else 0
            n_swap = torch.floor(cfg.swap_rate * k_pos).long().clamp(min=at_least)
            n_swap = torch.minimum(n_swap, k_neg)
            scores = swap_top_scores(up_local, is_pos, raw, n_swap)
        elif cfg.defense == "ldp":
            u = counter_uniform(clients[up_local], rnd_c, torch.tensor(5), up_items).float()
            scores = (raw + _laplace(u, cfg.ldp_scale)).clamp(0, 1)
        # Per client, sorted by item id: the order says nothing about which are positives.
        order = torch.sort(up_local * self.num_items + up_items).indices
        counts = torch.bincount(up_local, minlength=num).tolist()
        out: list[Payload] = []
        for i, o in enumerate(torch.split(order, counts)):
            ctxs[i].state["last_upload"] = {  # private bookkeeping, never sent
                "items": up_items[o], "raw_scores": raw[o], "scores": scores[o],
                "is_pos": is_pos[o], "beta": float(beta[i]), "gamma": float(gamma[i]),
                "n_swap": int(n_swap[i]), "non_positives": negs[i],
            }
            out.append({"items": up_items[o].clone(), "scores": scores[o].float().clone()})
        return out

    def _dp_uploads(self, ctxs: Sequence[PartyContext], fit: CohortFit) -> list[Payload]:
        """``upload_dp``: each client's noised scores on its own uniform item sample
        (:mod:`~fedrec.algorithms.methods.ptf_fedrec.upload_dp`, which states the guarantee)."""
        plan, num, n_items = self.plan, len(ctxs), self.num_items
        assert plan is not None
        local, items = sample_items(fit.clients, fit.round, n_items, plan.items)
        # Rows of the sampled items: the trained ones, else each client's initial rows.
        keys = torch.unique(torch.cat([fit.keys, local * n_items + items]))
        table = self.cohort.item_table(ctxs, keys, self.cohort.secret_rows)
        raw = torch.sigmoid(self.cohort.logits(fit.params, table, keys, local, items, num))
        scores = release(raw, fit.clients[local], fit.round, items, plan.sigma)
        out: list[Payload] = []
        for i, (it, rw, sc) in enumerate(zip(items.split(plan.items), raw.split(plan.items),
                                             scores.split(plan.items), strict=True)):
            ctxs[i].state["last_upload"] = {  # private bookkeeping, never sent
                "items": it, "raw_scores": rw, "scores": sc,
                "is_pos": torch.from_numpy(np.isin(it.numpy(), ctxs[i].data.train_items)),
            }
            out.append({"items": it.clone(), "scores": sc.clone()})
        return out

    # -- evaluation ------------------------------------------------------------------------
