"""Evaluation metrics: rating errors, full-ranking top-K metrics and classification metrics."""

from fedrec.metrics.classification import (
    PRF,
    auc,
    f1_micro,
    mean_set_precision_recall_f1,
    set_precision_recall_f1,
)
from fedrec.metrics.ranking import (
    RANKING_METRICS,
    evaluate_topk,
    per_user_topk_metrics,
    ranked_hits,
    topk_metrics_from_hits,
    topk_metrics_from_ranked,
)
from fedrec.metrics.rating import mae, rmse

__all__ = [
    "PRF",
    "RANKING_METRICS",
    "auc",
    "evaluate_topk",
    "f1_micro",
    "mae",
    "mean_set_precision_recall_f1",
    "per_user_topk_metrics",
    "ranked_hits",
    "rmse",
    "set_precision_recall_f1",
    "topk_metrics_from_hits",
    "topk_metrics_from_ranked",
]
