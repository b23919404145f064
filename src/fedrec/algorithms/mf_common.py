"""Pieces shared by the matrix-factorisation algorithms (PMF, FCF): config, cohort batching and
client-side evaluation (each client scores its own rows of the evaluated split, validation or
test, and sends back only sums).

A server asks for an evaluation with :func:`eval_request` (the split travels in the metered
``evaluate`` message) and each client reads it back with :func:`requested_split`: one
mechanism for every client-side evaluation (FCF, FedMF, FedGNN, PTF-FedRec, FedAvg-NeuMF).
A model held in one place (PMF, the centralized ranking baselines, PTF-FedRec's hidden server
model) is ranked on a split by :class:`SplitRanking`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.config import RunConfig, check_range, option
from fedrec.core.codec import Payload
from fedrec.data.types import (
    EVAL_SPLITS,
    KNOWN_SPLITS,
    InteractionDataset,
    RatingDataset,
    check_split,
)
from fedrec.federation.aggregation import sum_rows
from fedrec.federation.runtime import PartyContext
from fedrec.metrics.exposure import (
    EXPOSURE_TARGETS,
    exposure_sums,
    is_exposure_share,
    reduce_exposure,
)
from fedrec.metrics.ranking import ScoreFn, evaluate_topk, per_user_topk_metrics
from fedrec.models.mf import predict_ratings


def implicit_option() -> Any:
    """The ``implicit`` field of the matrix-factorisation baselines (pmf, fcf), declared alike:
    :func:`fedrec.data.implicit.as_implicit` applies it."""
    return option("no", "no: the data as loaded | per-user: every rating an implicit positive, "
                        "on the per-user 80/20 split (seed 0) of lightgcn, PTF-FedRec and "
                        "FedGRec, trained with BPR")


@dataclass
class MFConfig(RunConfig):
    """The options of the matrix-factorisation algorithms (PMF, FCF, FedMF); each algorithm's
    class gives the defaults it differs in."""

    dim: int = option(32, "latent factors per user and item")
    lr: float = option(0.01, "learning rate of the item factors")
    reg: float = option(0.1, "L2 weight on the factors")
    topk: int = option(20, "K of Recall@K / NDCG@K (implicit datasets)")

    def validate(self) -> None:
        super().validate()
        check_range("dim", self.dim, 1)
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("reg", self.reg, 0.0)
        check_range("topk", self.topk, 1)


def scale_midpoint(ds: RatingDataset) -> float:
    """The public offset ``mu``: the middle of the rating scale (not a statistic of the data)."""
    return (ds.rating_min + ds.rating_max) / 2.0


def rating_unit(rating_range: tuple[float, float]) -> float:
    """A quarter of the public rating range: the models' unit of rating (1 on a 1..5 scale,
    24.75 on YahooMusic's 1..100). Models that learn ratings divided by it share one set of
    learning rates across scales (a step sized for 1..5 diverges on 1..100)."""
    lo, hi = rating_range
    return (hi - lo) / 4.0 if hi > lo else 1.0


@dataclass
class CohortRows:
    """The training rows of a cohort, concatenated; ``local`` is the client's cohort position."""

    local: torch.Tensor
    users: torch.Tensor
    items: torch.Tensor
    values: torch.Tensor
    position: torch.Tensor
    counts: np.ndarray
    keys: torch.Tensor  # sorted user * num_items + item, for negative sampling


def cohort_rows(
    ctxs: Sequence[PartyContext], split: str = "train", num_items: int | None = None
) -> CohortRows:
    """Concatenate the cohort's ``split`` rows (``num_items`` also builds the sorted keys), as
    tensors on the cohort's device."""
    items_list = [getattr(c.data, f"{split}_items") for c in ctxs]
    values_list = [getattr(c.data, f"{split}_values") for c in ctxs]
    counts = np.fromiter((len(x) for x in items_list), dtype=np.int64, count=len(ctxs))
    users_np = np.fromiter((c.party for c in ctxs), dtype=np.int64, count=len(ctxs))
    local = torch.from_numpy(np.repeat(np.arange(len(ctxs)), counts))
    items = torch.from_numpy(np.concatenate(items_list).astype(np.int64)) if len(ctxs) else (
        torch.zeros(0, dtype=torch.int64))
    values = torch.from_numpy(np.concatenate(values_list).astype(np.float32))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = torch.from_numpy(np.arange(counts.sum()) - np.repeat(starts, counts))
    users = torch.from_numpy(users_np)[local]
    keys = (
        torch.sort(users * num_items + items).values
        if num_items is not None else torch.empty(0, dtype=torch.int64)
    )
    dev = ctxs[0].device if ctxs else torch.device("cpu")
    return CohortRows(local.to(dev), users.to(dev), items.to(dev), values.to(dev),
                      position.to(dev), counts, keys.to(dev))


def eval_request(payload: Payload, split: str, targets: torch.Tensor | None = None) -> Payload:
    """The server's ``evaluate`` message: ``payload`` (e.g. the model) plus the split to score
    and, in a poisoning experiment, the target items whose exposure each client measures
    (:mod:`fedrec.metrics.exposure`; the experimenter's, handed to the server as an
    instrument)."""
    request = {**payload, "split": check_split(split)}
    if targets is not None:
        request[EXPOSURE_TARGETS] = targets
    return request


def exposure_targets(payload: Payload) -> torch.Tensor | None:
    """The target items an ``evaluate`` message asks the exposure of (None: not asked)."""
    targets = payload.get(EXPOSURE_TARGETS)
    return None if targets is None else torch.as_tensor(targets, dtype=torch.int64)


def with_exposure(replies: list[Payload], ctxs: Sequence[PartyContext],
                  scores: Callable[[int, int], torch.Tensor], payload: Payload, split: str,
                  batch: int = 2048) -> list[Payload]:
    """``replies`` (one client's evaluation each) with each client's exposure shares of the
    targets the request asks for (:func:`fedrec.metrics.exposure.exposure_sums`), ranked by
    ``scores(start, stop)``: the scores of every item for clients ``ctxs[start:stop]``."""
    targets = exposure_targets(payload)
    if targets is None:
        return replies
    out = []
    for start in range(0, len(ctxs), batch):
        chunk = ctxs[start : start + batch]
        known_local, known_items = known_rows(chunk, split)
        with torch.no_grad():
            rows = scores(start, start + len(chunk))
            shares = exposure_sums(rows, known_local, known_items, targets.to(rows.device))
        out += [{**r, **s} for r, s in zip(replies[start:start + len(chunk)], shares,
                                           strict=True)]
    return out


def requested_split(payload: Payload) -> str:
    """The split an ``evaluate`` message asks a client to score."""
    return check_split(str(payload["split"]))


def known_rows(ctxs: Sequence[PartyContext], split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cohort position, item)`` of the items each client's ranking on ``split`` excludes
    (:data:`fedrec.data.types.KNOWN_SPLITS`: training items; for test also validation ones)."""
    parts = [cohort_rows(ctxs, s) for s in KNOWN_SPLITS[check_split(split)]]
    return torch.cat([r.local for r in parts]), torch.cat([r.items for r in parts])


class SplitRanking:
    """Full-ranking top-K metrics (:func:`fedrec.metrics.evaluate_topk`) of a model held in one
    place, on a split of ``ds``: ``split="valid"`` ranks every item not trained on and scores
    the validation items; ``split="test"`` also excludes the validation items and scores the
    test items (:data:`fedrec.data.types.KNOWN_SPLITS`). The matrices are built once."""

    def __init__(self, ds: RatingDataset | InteractionDataset, ks: tuple[int, ...],
                 **options: object) -> None:
        shape = (ds.num_users, ds.num_items)
        self.matrices = {}
        for split in EVAL_SPLITS:
            known, target = ds.known_and_target(split)
            self.matrices[split] = (known.to_csr(*shape), target.to_csr(*shape))
        self.ks, self.options = ks, options

    def __call__(self, score_fn: ScoreFn, split: str = "test", **options: object
                 ) -> dict[str, float]:
        """The metrics of ``score_fn`` on ``split``; ``{}`` when the split has no rows."""
        known, target = self.matrices[check_split(split)]
        if target.nnz == 0:
            return {}
        return evaluate_topk(score_fn, known, target, ks=self.ks,
                             **{**self.options, **options})  # type: ignore[arg-type]


def evaluate_clients_explicit(
    ctxs: Sequence[PartyContext], p: torch.Tensor, b_u: torch.Tensor, q: torch.Tensor,
    b_i: torch.Tensor, mu: float, rating_range: tuple[float, float], split: str = "test",
) -> list[Payload]:
    """Each client predicts its own ``split`` ratings (clamped to the scale) and returns error
    sums; the parameters are in rating units (:func:`rating_unit`), ``mu`` on the rating
    scale."""
    rows = cohort_rows(ctxs, check_split(split))
    lo, hi = rating_range
    unit = rating_unit(rating_range)
    with torch.no_grad():
        pred = predict_ratings(p[rows.local], b_u[rows.local], q[rows.items], b_i[rows.items],
                               mu, unit)
        err = pred.clamp(lo, hi) - rows.values
    sq = sum_rows(rows.local, err.double() ** 2, len(ctxs)).cpu()
    ab = sum_rows(rows.local, err.double().abs(), len(ctxs)).cpu()
    return [
        {"sq_err": float(sq[i]), "abs_err": float(ab[i]), "count": int(rows.counts[i])}
        for i in range(len(ctxs))
    ]


def evaluate_clients_ranking(
    ctxs: Sequence[PartyContext], p: torch.Tensor, q: torch.Tensor, k: int,
    batch: int = 2048, split: str = "test",
) -> list[Payload]:
    """Each client ranks all items but its known ones (:func:`known_rows`) and returns its own
    Recall/NDCG@k on its ``split`` items."""
    out: list[Payload] = []
    num_items = q.shape[0]
    for start in range(0, len(ctxs), batch):
        chunk = ctxs[start : start + batch]
        known_local, known_items = known_rows(chunk, split)
        test = cohort_rows(chunk, split)
        with torch.no_grad():
            scores = p[start : start + len(chunk)] @ q.T
            scores[known_local, known_items] = -torch.inf
            top = torch.topk(scores, min(k, num_items), dim=1).indices
        test_keys = torch.sort(test.local * num_items + test.items).values
        keys = torch.arange(len(chunk), device=top.device).unsqueeze(1) * num_items + top
        pos = torch.searchsorted(test_keys, keys).clamp(max=max(len(test_keys) - 1, 0))
        hits = (test_keys[pos] == keys) if len(test_keys) else torch.zeros_like(keys, dtype=bool)
        metrics = per_user_topk_metrics(hits.cpu().numpy(), test.counts, (k,))
        for i in range(len(chunk)):
            msg: Payload = {name: float(v[i]) for name, v in metrics.items()}
            msg["count"] = int(test.counts[i] > 0)
            out.append(msg)
    return out


def reduce_client_metrics(replies: Iterable[Payload], explicit: bool) -> dict[str, float]:
    """Combine the clients' evaluation sums into RMSE/MAE or mean ranking metrics."""
    replies = list(replies)
    exposure = reduce_exposure(replies)
    if explicit:
        n = sum(r["count"] for r in replies)
        if n == 0:
            return exposure
        return {
            "rmse": float(np.sqrt(sum(r["sq_err"] for r in replies) / n)),
            "mae": float(sum(r["abs_err"] for r in replies) / n),
            "eval_clients": float(len(replies)),
            **exposure,
        }
    counted = [r for r in replies if r["count"]]
    if not counted:
        return exposure
    names = [k for k in counted[0] if k != "count" and not is_exposure_share(k)]
    out = {name: float(np.mean([r[name] for r in counted])) for name in names}
    out["eval_clients"] = float(len(counted))
    return {**out, **exposure}
