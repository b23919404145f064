"""Pieces shared by the methods on FL-MV-DSSM's multi-view data (FL-MV-DSSM, FED-MVMF): the
multi-view build of a loaded dataset (one split for every method, reusable within a process),
what a deployment's server may build from (:func:`deployment_facts`) and the federated
evaluation of one device's scores (Precision/Recall/NDCG@K and AUC)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.data.fingerprint import fingerprint
from fedrec.data.multiview import (
    COLD_START,
    TASK_SPLITS,
    MultiViewData,
    build_multiview,
    cold_start,
)
from fedrec.data.types import KNOWN_SPLITS, Dataset, Interactions, no_rows, public_facts
from fedrec.errors import ConfigError
from fedrec.metrics.classification import auc
from fedrec.metrics.ranking import per_user_topk_metrics


@dataclasses.dataclass
class MultiViewSplitConfig(RunConfig):
    """The split of FL-MV-DSSM's multi-view data (:func:`multiview_split`): one definition for
    every method on it, so equal options mean equal rows and features."""

    split: str = option("random", "random: FL-MV-DSSM's random 80/20 of all positives | "
                                  "per-user: 80/20 of each user's")
    test_fraction: float = option(0.2, "share of the task's positives in the test set")
    split_seed: int = option(0, "seed of the split and of the held-aside (SVD view) slice")
    held_aside_fraction: float = option(0.2, "share of each user's positives held aside as "
                                             "the other app's data (the SVD view's input)")
    cold_start: str = option("none", "none | users | items | users-items: hold a random "
                                     "cold_fraction of them out of training, test on them "
                                     "(CS-Users, CS-Items, CS-Users-Items)")
    cold_fraction: float = option(0.1, "share of users / items held out (cold_start)")

    def validate(self) -> None:
        super().validate()
        check_choice("split", self.split, TASK_SPLITS)
        check_range("test_fraction", self.test_fraction, 0.0, 1.0, low_open=True)
        check_range("held_aside_fraction", self.held_aside_fraction, 0.0, 1.0, low_open=True)
        check_choice("cold_start", self.cold_start, COLD_START)
        check_range("cold_fraction", self.cold_fraction, 0.0, 1.0, low_open=True)
        if self.cold_fraction == 1.0:
            raise ConfigError("cold_fraction must be below 1: something must stay to train on")


def multiview_of(cfg: MultiViewSplitConfig, dataset: Dataset) -> MultiViewData:
    """The multi-view data of all of ``dataset``'s ratings on ``cfg``'s split and cold-start
    scenario (:func:`multiview_split`; reused within :func:`reuse_multiviews`)."""
    return multiview_split(dataset, cfg.split, cfg.test_fraction, cfg.split_seed,
                           cfg.held_aside_fraction, cfg.cold_start, cfg.cold_fraction)


#: Inside :func:`reuse_multiviews`: each split built so far, by data and split options.
_BUILT: dict[tuple[object, ...], MultiViewData] | None = None


@contextlib.contextmanager
def reuse_multiviews() -> Iterator[None]:
    """Within the block, :func:`multiview_split` builds the multi-view data of each (data, split
    options) once and reuses it (a build is seconds of CPU, most of it the SVD view; it is
    deterministic, so a reused one equals a new one); the cold-start re-split is applied to it
    each time. For a process that runs many settings on one split (``fedrec reproduce
    fl-mv-dssm``); outside the block every call builds anew."""
    global _BUILT
    outer = _BUILT
    _BUILT = {} if outer is None else outer
    try:
        yield
    finally:
        _BUILT = outer


def multiview_split(dataset: Dataset, split: str, test_fraction: float, split_seed: int,
                    held_aside_fraction: float, cold: str = "none",
                    cold_fraction: float = 0.1) -> MultiViewData:
    """The multi-view data of all of ``dataset``'s ratings, taken in (user, item) order so that
    it does not depend on how the loader split them, re-split for cold start ``cold``."""
    if _BUILT is None:
        mv = _build_multiview(dataset, split, test_fraction, split_seed, held_aside_fraction)
    else:
        key = (dataset.name, fingerprint(dataset), split, test_fraction, split_seed,
               held_aside_fraction)
        if key not in _BUILT:
            _BUILT[key] = _build_multiview(dataset, split, test_fraction, split_seed,
                                           held_aside_fraction)
        mv = _BUILT[key]
    return cold_start(mv, cold, cold_fraction, split_seed)


def _build_multiview(dataset: Dataset, split: str, test_fraction: float, split_seed: int,
                     held_aside_fraction: float) -> MultiViewData:
    rows = Interactions.concat(dataset.train, dataset.valid, dataset.test)
    order = np.argsort(rows.users.astype(np.int64) * dataset.num_items + rows.items,
                       kind="stable")
    every = dataclasses.replace(dataset, train=rows.select(order), valid=no_rows(),
                                test=no_rows())
    return build_multiview(every, split, test_fraction, split_seed, held_aside_fraction)


def deployment_facts(method: str, cfg: MultiViewSplitConfig, dataset: Dataset) -> dict[str, Any]:
    """The public facts a multi-view method's server is built from on a deployment: those the
    client nodes reported beside the metadata-only ``dataset`` (``{}`` on the probe). The data
    (features, rows, the split) stays on the nodes, so the server never builds the multi-view
    data itself. Cold start is refused: the server would have to know which clients are warm
    (have training positives), and that is each client's own data, not a public fact."""
    facts = public_facts(dataset)
    if facts is None:
        raise ConfigError(f"{method}: a metadata-only dataset without the nodes' public facts")
    if cfg.cold_start != "none":
        raise ConfigError(f"{method}: cold start is not deployable yet (the server would need "
                          "the warm clients)")
    return facts


def items_by_user(rows: Interactions, num_users: int) -> list[np.ndarray]:
    """Each user's items in ``rows`` (int64, in row order), by dense user id."""
    order = np.argsort(rows.users, kind="stable")
    users, items = rows.users[order], rows.items[order].astype(np.int64)
    bounds = np.searchsorted(users, np.arange(num_users + 1))
    return [items[bounds[u]: bounds[u + 1]] for u in range(num_users)]


def device_ranking_metrics(scores: torch.Tensor, items: dict[str, np.ndarray], split: str,
                           num_items: int, k: int) -> Payload:
    """One device's evaluation message: ``scores`` (float64, one per item) rank every item it
    has not trained on (:data:`~fedrec.data.types.KNOWN_SPLITS`); its Precision/Recall/NDCG@k
    on its ``split`` items and the AUC of those items against every other unknown item, with
    ``count`` 1; ``{"count": 0}`` when it has nothing to rank on. ``items`` holds the device's
    own items of each split (``train``, ``valid``, ``test``). ``scores`` is changed in place."""
    target = np.asarray(items[split], dtype=np.int64)
    known = np.concatenate([np.asarray(items[s], dtype=np.int64) for s in KNOWN_SPLITS[split]])
    candidates = np.setdiff1d(np.arange(num_items), known)
    labels = np.isin(candidates, target).astype(np.float64)
    if not 0 < labels.sum() < len(labels):  # nothing to rank it on
        return {"count": 0}
    scores[torch.from_numpy(known)] = -torch.inf
    top = torch.topk(scores, min(k, num_items)).indices.numpy()
    hits = np.isin(top, target)[None, :]
    metrics = per_user_topk_metrics(hits, np.array([len(target)]), (k,))
    msg: Payload = {name: float(v[0]) for name, v in metrics.items()}
    msg["AUC"] = auc(scores.numpy()[candidates], labels)
    msg["count"] = 1
    return msg
