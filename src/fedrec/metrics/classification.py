"""Classification metrics: ROC AUC, micro-F1, and set precision/recall/F1 for attack evaluation.

* ``auc`` -- area under the ROC curve via the Mann-Whitney U statistic. With ``n+`` positives,
  ``n-`` negatives and ``R_i`` the rank (1-based, ascending score; tied scores share the average
  of their ranks) of sample ``i``::

      AUC = ( sum_{i positive} R_i - n+ (n+ + 1) / 2 ) / (n+ * n-)

  i.e. the probability that a random positive outscores a random negative, ties counting 1/2.
  This equals ``sklearn.metrics.roc_auc_score`` for binary labels.
* ``f1_micro`` -- micro-averaged F1 over all (sample, class) decisions::

      F1_micro = 2 TP / (2 TP + FP + FN)

  For multi-class (1-D class ids, one label per sample) every error is one FP and one FN, so
  ``F1_micro = accuracy``. For multi-label (2-D 0/1 indicator matrices) TP, FP and FN are counted
  over all entries.
* ``set_precision_recall_f1`` -- a predicted set ``P`` against a true set ``T`` (for example the
  items an attacker infers a client interacted with, vs the client's real items)::

      precision = |P ∩ T| / |P|,  recall = |P ∩ T| / |T|,
      F1 = 2 precision recall / (precision + recall)

  and ``mean_set_precision_recall_f1`` averages these per client (macro average).

Undefined ratios (0/0) take the value ``zero_division`` (default 0.0, as in scikit-learn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch

from fedrec.errors import ConfigError
from fedrec.metrics._inputs import ArrayLike, check_same_shape, to_float64, to_numpy


class PRF(NamedTuple):
    """Precision, recall and F1 (a tuple, so ``p, r, f = ...`` works)."""

    precision: float
    recall: float
    f1: float


# --------------------------------------------------------------------------------------------
# AUC
# --------------------------------------------------------------------------------------------


def auc(scores: ArrayLike, labels: ArrayLike) -> float:
    """ROC AUC of ``scores`` (higher = more positive) for binary ``labels`` (0/1 or bool).

    Mann-Whitney U with average ranks for ties (formula in the module docstring); matches
    ``sklearn.metrics.roc_auc_score``. Both inputs are 1-D of the same length. Raises
    :class:`~fedrec.errors.ConfigError` if only one class is present, labels are not 0/1, shapes
    differ or scores contain NaN.
    """
    s = to_float64(scores, "scores")
    y = to_float64(labels, "labels")
    if s.ndim != 1:
        raise ConfigError(f"scores must be 1-D, got shape {s.shape}")
    check_same_shape(s, y, "scores", "labels")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ConfigError("labels must be binary (0/1)")
    pos = y == 1.0
    n_pos = int(pos.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        raise ConfigError("AUC is undefined: labels contain only one class")
    from scipy.stats import rankdata  # imported here: scipy.stats costs ~1 s at CLI start

    ranks = rankdata(s, method="average")
    u = float(ranks[pos].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


# --------------------------------------------------------------------------------------------
# Micro-F1
# --------------------------------------------------------------------------------------------


def _int_labels(x: ArrayLike, name: str) -> np.ndarray:
    arr = to_float64(x, name)
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        raise ConfigError(f"{name} must hold integer labels")
    return arr.astype(np.int64)


def f1_micro(pred: ArrayLike, target: ArrayLike, zero_division: float = 0.0) -> float:
    """Micro-averaged F1 ``2 TP / (2 TP + FP + FN)``.

    * 1-D integer ``pred``/``target`` (multi-class, one class id per sample): equals accuracy.
    * 2-D 0/1 ``pred``/``target`` of shape ``(N, C)`` (multi-label): TP/FP/FN counted over all
      ``N * C`` entries. Threshold scores or logits before calling.

    Returns ``zero_division`` when ``2 TP + FP + FN == 0`` (no positive predicted or true).
    Raises :class:`~fedrec.errors.ConfigError` on mismatched shapes, empty or non-integer input.
    """
    p = _int_labels(pred, "pred")
    t = _int_labels(target, "target")
    check_same_shape(p, t, "pred", "target")
    if p.ndim == 1:
        return float(np.mean(p == t))
    if p.ndim != 2:
        raise ConfigError(f"pred must be 1-D (multi-class) or 2-D (multi-label), got {p.ndim}-D")
    if not (np.isin(p, (0, 1)).all() and np.isin(t, (0, 1)).all()):
        raise ConfigError("multi-label pred and target must be 0/1 indicator matrices")
    pb = p.astype(bool)
    tb = t.astype(bool)
    tp = int(np.count_nonzero(pb & tb))
    fp = int(np.count_nonzero(pb & ~tb))
    fn = int(np.count_nonzero(~pb & tb))
    denom = 2 * tp + fp + fn
    return float(zero_division) if denom == 0 else 2.0 * tp / denom


# --------------------------------------------------------------------------------------------
# Set precision / recall / F1 (attack evaluation)
# --------------------------------------------------------------------------------------------

SetLike = set | frozenset | Sequence | np.ndarray | torch.Tensor


def _as_set(x: SetLike | Iterable, name: str) -> set:
    """A Python set of ids. Arrays/tensors of ids are taken as ids; a bool array is a mask."""
    if isinstance(x, set | frozenset):
        return set(x)
    if isinstance(x, np.ndarray | torch.Tensor):
        arr = to_numpy(x, name)
        if arr.dtype == np.bool_:
            return set(np.flatnonzero(arr.ravel()).tolist())
        return set(arr.ravel().tolist())
    if isinstance(x, str | bytes):
        raise ConfigError(f"{name} must be a collection of ids, not a string")
    try:
        return set(x)
    except TypeError:
        kind = type(x).__name__
        raise ConfigError(f"{name} must be a set or an array of ids, got {kind}") from None


def set_precision_recall_f1(
    pred: SetLike | Iterable, true: SetLike | Iterable, zero_division: float = 0.0
) -> PRF:
    """Precision ``|P∩T|/|P|``, recall ``|P∩T|/|T|`` and their harmonic mean F1.

    ``pred`` and ``true`` are sets, lists, NumPy arrays or tensors of ids (duplicates ignored); a
    boolean array is read as a mask and its ``True`` positions are the ids. A 0/0 ratio (empty
    ``P``, empty ``T``, or precision + recall == 0 for F1) gives ``zero_division``.
    """
    p = _as_set(pred, "pred")
    t = _as_set(true, "true")
    inter = len(p & t)
    zd = float(zero_division)
    precision = inter / len(p) if p else zd
    recall = inter / len(t) if t else zd
    denom = precision + recall
    f1 = 2.0 * precision * recall / denom if denom > 0 else zd
    return PRF(precision, recall, f1)


def mean_set_precision_recall_f1(
    preds: Sequence | Mapping, trues: Sequence | Mapping, zero_division: float = 0.0
) -> PRF:
    """Mean over clients of :func:`set_precision_recall_f1` (macro average).

    ``preds`` and ``trues`` are equally long sequences of per-client sets, aligned by position, or
    mappings ``client_id -> set`` with the same keys. Each of precision, recall and F1 is averaged
    separately, so the mean F1 is not the F1 of the mean precision and recall.
    """
    if isinstance(preds, Mapping) or isinstance(trues, Mapping):
        if not (isinstance(preds, Mapping) and isinstance(trues, Mapping)):
            raise ConfigError("preds and trues must both be mappings or both be sequences")
        if set(preds) != set(trues):
            raise ConfigError("preds and trues have different client ids")
        keys = list(trues)
        pairs = [(preds[k], trues[k]) for k in keys]
    else:
        if len(preds) != len(trues):
            raise ConfigError(f"preds has {len(preds)} clients but trues has {len(trues)}")
        pairs = list(zip(preds, trues, strict=True))
    if not pairs:
        raise ConfigError("no clients to average over")
    vals = np.array([set_precision_recall_f1(p, t, zero_division) for p, t in pairs])
    m = vals.mean(axis=0)
    return PRF(float(m[0]), float(m[1]), float(m[2]))
