"""The floor FL-MV-DSSM is measured against: a most-popular ranking on the same split."""

from __future__ import annotations

import numpy as np
import torch

from fedrec.algorithms.mf_common import SplitRanking
from fedrec.data.multiview import MultiViewData


def most_popular_metrics(mv: MultiViewData, topk: int = 10,
                         split: str = "test") -> dict[str, float]:
    """Precision/Recall/NDCG/HitRate@``topk`` on ``split`` of ranking every item a user has not
    trained on by its number of training positives (the same for every user)."""
    task = mv.task
    counts = np.bincount(task.train.items, minlength=task.num_items).astype(np.float32)
    scores = torch.from_numpy(counts)
    ranking = SplitRanking(task, (topk,))
    return ranking(lambda users: scores.expand(len(users), -1), split)
