"""Figures that the ranking reproductions compute themselves, from the data alone."""

from __future__ import annotations

import numpy as np

from fedrec.algorithms.ncf_common import ImplicitSplitConfig, implicit_split
from fedrec.data.types import Dataset
from fedrec.metrics import evaluate_topk


def most_popular(ds: Dataset, cfg: ImplicitSplitConfig) -> dict[str, float]:
    """Recall/NDCG@``cfg.topk`` of ranking every user's untrained items by their training
    count, on the split ``cfg`` describes: the floor every model must beat."""
    import torch

    split = implicit_split(ds, cfg)
    shape = (split.num_users, split.num_items)
    train = split.train.to_csr(*shape)
    pop = torch.from_numpy(np.asarray(train.sum(0)).ravel().astype(np.float32))
    return evaluate_topk(lambda users: pop.expand(len(users), -1), train,
                         split.test.to_csr(*shape), ks=(cfg.topk,))
