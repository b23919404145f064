"""Tests for fedrec.metrics.classification (hand-computed cases + naive cross-checks)."""

import random

import numpy as np
import pytest
import torch

from fedrec.errors import ConfigError
from fedrec.metrics import (
    PRF,
    auc,
    f1_micro,
    mean_set_precision_recall_f1,
    set_precision_recall_f1,
)

# ----------------------------------------------------------------------------------------- AUC


def test_auc_hand_computed():
    # Positives 0.35 and 0.8, negatives 0.1 and 0.4. Pairs (pos, neg):
    # (0.35, 0.1) win, (0.35, 0.4) loss, (0.8, 0.1) win, (0.8, 0.4) win -> 3/4.
    # Rank form: ranks 0.1->1, 0.35->2, 0.4->3, 0.8->4; positives 2 + 4 = 6; 6 - 2*3/2 = 3; 3/4.
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)


def test_auc_ties():
    # Scores 0.5 (neg), 0.5 (pos), 0.5 (neg), 0.9 (pos).
    # Pos 0.5 ties both negatives: 1/2 + 1/2 = 1; pos 0.9 beats both: 2. Total 3 / (2*2) = 0.75.
    # Rank form: the three 0.5 share ranks 1,2,3 -> 2 each; 0.9 -> 4; 2 + 4 - 3 = 3; 3/4.
    assert auc([0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1]) == pytest.approx(0.75)
    # All scores tied: every pair counts 1/2.
    assert auc([1.0] * 5, [0, 1, 1, 0, 1]) == pytest.approx(0.5)
    # Perfectly wrong ordering.
    assert auc([3.0, 2.0, 1.0], [0, 1, 1]) == 0.0


def test_auc_input_types():
    s = torch.tensor([0.1, 0.4, 0.35, 0.8], requires_grad=True)
    assert auc(s, torch.tensor([False, False, True, True])) == pytest.approx(0.75)
    assert auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0.0, 0.0, 1.0, 1.0])) == 0.75


def test_auc_errors():
    with pytest.raises(ConfigError, match="only one class"):
        auc([0.1, 0.2, 0.3], [1, 1, 1])
    with pytest.raises(ConfigError, match="only one class"):
        auc([0.1, 0.2], [0, 0])
    with pytest.raises(ConfigError, match="binary"):
        auc([0.1, 0.2, 0.3], [0, 1, 2])
    with pytest.raises(ConfigError, match="mismatched"):
        auc([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ConfigError, match="NaN"):
        auc([0.1, float("nan")], [0, 1])
    with pytest.raises(ConfigError, match="1-D"):
        auc(np.zeros((2, 2)), np.zeros((2, 2)))


def _naive_auc(scores, labels):
    pos = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    total = 0.0
    for p in pos:
        for n in neg:
            total += 1.0 if p > n else 0.5 if p == n else 0.0
    return total / (len(pos) * len(neg))


def test_auc_random_against_naive():
    rng = random.Random(1)
    for trial in range(100):
        n = rng.randint(2, 60)
        labels = [rng.randint(0, 1) for _ in range(n)]
        labels[0], labels[1] = 0, 1
        rng.shuffle(labels)
        # Few distinct values on half the trials, to force many ties.
        scores = (
            [float(rng.randint(0, 3)) for _ in range(n)]
            if trial % 2
            else [rng.random() for _ in range(n)]
        )
        assert auc(scores, labels) == pytest.approx(_naive_auc(scores, labels), abs=1e-12)


# ------------------------------------------------------------------------------------ micro-F1


def test_f1_micro_multiclass_hand_computed():
    # 2 of 4 correct: each error is one FP (predicted class) and one FN (true class):
    # TP = 2, FP = 2, FN = 2 -> 4 / (4 + 2 + 2) = 0.5 = accuracy.
    assert f1_micro([0, 1, 2, 2], [0, 2, 2, 1]) == pytest.approx(0.5)
    assert f1_micro(torch.tensor([1, 1]), np.array([1, 1])) == 1.0


def test_f1_micro_multilabel_hand_computed():
    pred = [[1, 0, 1], [0, 1, 0]]
    target = [[1, 1, 0], [0, 1, 0]]
    # TP: (0,0), (1,1) = 2; FP: (0,2) = 1; FN: (0,1) = 1 -> 2*2 / (2*2 + 1 + 1) = 4/6.
    assert f1_micro(pred, target) == pytest.approx(4 / 6)
    assert f1_micro(torch.tensor(pred), torch.tensor(target, dtype=torch.float32)) == 4 / 6
    # Nothing predicted and nothing true: 0/0 -> zero_division.
    assert f1_micro([[0, 0]], [[0, 0]]) == 0.0
    assert f1_micro([[0, 0]], [[0, 0]], zero_division=1.0) == 1.0


def test_f1_micro_errors():
    with pytest.raises(ConfigError, match="mismatched"):
        f1_micro([0, 1], [0, 1, 1])
    with pytest.raises(ConfigError, match="0/1"):
        f1_micro([[0, 2]], [[0, 1]])
    with pytest.raises(ConfigError, match="integer"):
        f1_micro([0.5, 1.0], [0, 1])
    with pytest.raises(ConfigError, match="empty"):
        f1_micro([], [])


def _naive_f1_micro(pred, target):
    tp = fp = fn = 0
    if isinstance(pred[0], list):  # multi-label
        for pr, tr in zip(pred, target, strict=True):
            for p, t in zip(pr, tr, strict=True):
                tp += p and t
                fp += p and not t
                fn += t and not p
    else:  # multi-class: one-vs-rest counts per class, summed
        for c in set(pred) | set(target):
            for p, t in zip(pred, target, strict=True):
                tp += p == c and t == c
                fp += p == c and t != c
                fn += p != c and t == c
    return 0.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def test_f1_micro_random_against_naive():
    rng = random.Random(2)
    for _ in range(50):
        n, c = rng.randint(1, 40), rng.randint(2, 6)
        pred = [rng.randrange(c) for _ in range(n)]
        target = [rng.randrange(c) for _ in range(n)]
        assert f1_micro(pred, target) == pytest.approx(_naive_f1_micro(pred, target))
        pl = [[rng.randint(0, 1) for _ in range(c)] for _ in range(n)]
        tl = [[int(rng.random() < 0.3) for _ in range(c)] for _ in range(n)]
        assert f1_micro(np.array(pl), np.array(tl)) == pytest.approx(_naive_f1_micro(pl, tl))


# ------------------------------------------------------------------------- set precision/recall


def test_set_prf_hand_computed():
    # P = {1,2,3,4}, T = {3,4,5}: |P∩T| = 2 -> precision 2/4, recall 2/3,
    # F1 = 2 * (1/2)(2/3) / (1/2 + 2/3) = (2/3) / (7/6) = 4/7.
    got = set_precision_recall_f1({1, 2, 3, 4}, {3, 4, 5})
    assert isinstance(got, PRF)
    assert got == pytest.approx((0.5, 2 / 3, 4 / 7))
    assert got.f1 == pytest.approx(4 / 7)


def test_set_prf_arrays_and_masks():
    # Duplicates are ignored: P = {1, 2}, T = {2} -> 1/2, 1, F1 = 2*(1/2)/(3/2) = 2/3.
    assert set_precision_recall_f1(np.array([1, 1, 2]), [2]) == pytest.approx((0.5, 1.0, 2 / 3))
    assert set_precision_recall_f1(torch.tensor([1, 2]), torch.tensor([2])) == pytest.approx(
        (0.5, 1.0, 2 / 3)
    )
    # A boolean array is a mask: [T, F, T] -> {0, 2}; T = {0} -> 1/2, 1, 2/3.
    assert set_precision_recall_f1(np.array([True, False, True]), {0}) == pytest.approx(
        (0.5, 1.0, 2 / 3)
    )


def test_set_prf_zero_division():
    assert set_precision_recall_f1(set(), {1, 2}) == (0.0, 0.0, 0.0)
    assert set_precision_recall_f1({3}, {1, 2}) == (0.0, 0.0, 0.0)
    assert set_precision_recall_f1(set(), set(), zero_division=1.0) == (1.0, 1.0, 1.0)
    with pytest.raises(ConfigError, match="string"):
        set_precision_recall_f1("abc", {1})


def test_mean_set_prf_hand_computed():
    # Client a: (1/2, 2/3, 4/7) as above; client b: P = T = {1} -> (1, 1, 1).
    # Means: precision 3/4, recall 5/6, F1 (4/7 + 1)/2 = 11/14.
    want = (0.75, 5 / 6, 11 / 14)
    preds, trues = [{1, 2, 3, 4}, np.array([1])], [{3, 4, 5}, {1}]
    assert mean_set_precision_recall_f1(preds, trues) == pytest.approx(want)
    got = mean_set_precision_recall_f1({"b": {1}, "a": {1, 2, 3, 4}}, {"a": {3, 4, 5}, "b": [1]})
    assert got == pytest.approx(want)
    with pytest.raises(ConfigError, match="clients"):
        mean_set_precision_recall_f1([{1}], [{1}, {2}])
    with pytest.raises(ConfigError, match="client ids"):
        mean_set_precision_recall_f1({"a": {1}}, {"b": {1}})
    with pytest.raises(ConfigError, match="no clients"):
        mean_set_precision_recall_f1([], [])


def test_set_prf_random_against_naive():
    rng = random.Random(3)
    preds, trues, rows = [], [], []
    for _ in range(40):
        p = [rng.randrange(20) for _ in range(rng.randint(0, 10))]
        t = [rng.randrange(20) for _ in range(rng.randint(1, 10))]
        inter = len([x for x in set(p) if x in set(t)])
        prec = inter / len(set(p)) if p else 0.0
        rec = inter / len(set(t))
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        assert set_precision_recall_f1(np.array(p, dtype=np.int64), t) == pytest.approx(
            (prec, rec, f1)
        )
        preds.append(p)
        trues.append(t)
        rows.append((prec, rec, f1))
    want = tuple(sum(r[i] for r in rows) / len(rows) for i in range(3))
    assert mean_set_precision_recall_f1(preds, trues) == pytest.approx(want)
