"""Tests for fedrec.metrics.ranking (hand-computed cases + a naive pure-Python reference)."""

import math
import random

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from fedrec.errors import ConfigError
from fedrec.metrics import (
    RANKING_METRICS,
    evaluate_topk,
    ranked_hits,
    topk_metrics_from_hits,
    topk_metrics_from_ranked,
)

L2, L3, L5 = 1 / math.log2(2), 1 / math.log2(3), 1 / math.log2(5)  # discounts at ranks 1, 2, 4


def _csr(sets, num_items):
    rows = [u for u, s in enumerate(sets) for _ in s]
    cols = [i for s in sets for i in s]
    return sp.csr_matrix(
        (np.ones(len(rows), np.float32), (rows, cols)), shape=(len(sets), num_items)
    )


def _table_score_fn(table, calls=None):
    t = torch.tensor(table, dtype=torch.float32)

    def score_fn(user_ids):
        assert user_ids.dtype == torch.int64
        if calls is not None:
            calls.append(user_ids.tolist())
        return t[user_ids]

    return score_fn


# 3 users x 5 items.
SCORES = [
    [5.0, 4.0, 3.0, 2.0, 1.0],  # u0: train {0}, test {2, 4}
    [1.0, 2.0, 3.0, 4.0, 5.0],  # u1: no test items -> skipped
    [3.0, 5.0, 4.0, 1.0, 2.0],  # u2: train {1}, test {2}
]
TRAIN = [{0}, {1}, {1}]
TEST = [{2, 4}, set(), {2}]


def test_hand_computed_k2_and_k4():
    # u0: item 0 excluded -> ranking [1, 2, 3, 4].  u2: item 1 excluded -> ranking [2, 0, 4, 3].
    # K=2:
    #   u0 top [1, 2], rel [0, 1]: recall 1/2, precision 1/2, DCG = 1/log2(3),
    #       IDCG(min(2,2)=2) = 1 + 1/log2(3) -> NDCG = L3 / (1 + L3) = 0.38685; hit 1.
    #   u2 top [2, 0], rel [1, 0]: recall 1/1, precision 1/2, DCG = IDCG = 1 -> NDCG 1; hit 1.
    #   means over u0, u2 (u1 skipped): recall 0.75, precision 0.5, NDCG (0.38685 + 1)/2, HR 1.
    # K=4:
    #   u0 rel [0, 1, 0, 1]: recall 1, precision 2/4, DCG = L3 + L5, IDCG = 1 + L3; hit 1.
    #   u2 rel [1, 0, 0, 0]: recall 1, precision 1/4, NDCG 1; hit 1.
    #   means: recall 1, precision 3/8, NDCG ((L3 + L5)/(1 + L3) + 1)/2, HR 1.
    calls = []
    got = evaluate_topk(
        _table_score_fn(SCORES, calls), _csr(TRAIN, 5), _csr(TEST, 5), ks=(2, 4), batch_size=8
    )
    assert calls == [[0, 2]]  # u1 has no test items: never scored
    want = {
        "Recall@2": 0.75,
        "Precision@2": 0.5,
        "NDCG@2": (L3 / (1 + L3) + 1) / 2,
        "HitRate@2": 1.0,
        "Recall@4": 1.0,
        "Precision@4": 3 / 8,
        "NDCG@4": ((L3 + L5) / (1 + L3) + 1) / 2,
        "HitRate@4": 1.0,
    }
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key
    assert want["NDCG@2"] == pytest.approx((0.386853 + 1) / 2, abs=1e-6)


def test_without_exclusion_train_items_are_ranked():
    # train_csr=None: u0 ranking [0, 1, 2, 3, 4] -> top2 [0, 1] has no hit;
    # u2 ranking [1, 2, 0, 4, 3] -> top2 [1, 2], rel [0, 1]: recall 1, NDCG L3 / 1, precision 1/2.
    # means: recall 0.5, precision 0.25, NDCG L3 / 2, HR 0.5.
    got = evaluate_topk(_table_score_fn(SCORES), None, _csr(TEST, 5), ks=2)
    assert got == pytest.approx(
        {"Recall@2": 0.5, "Precision@2": 0.25, "NDCG@2": L3 / 2, "HitRate@2": 0.5}
    )


def test_top_scored_train_item_that_is_also_a_test_item_never_counts():
    # One user, 3 items, scores [9, 1, 2]; train {0}, test {0, 1} (item 0 in both).
    # K=1: item 0 excluded -> top [2] -> no hit: everything 0 (without exclusion it would hit).
    # K=3: ranking [2, 1, 0 (-inf, excluded)]: rel [0, 1, 0] -> hits 1, |T| = 2:
    #   recall 1/2, precision 1/3, NDCG = L3 / (1 + L3) (IDCG over min(2, 3) = 2 positions).
    fn = _table_score_fn([[9.0, 1.0, 2.0]])
    train, test = _csr([{0}], 3), _csr([{0, 1}], 3)
    got = evaluate_topk(fn, train, test, ks=(1, 3))
    assert got == pytest.approx(
        {
            "Recall@1": 0.0,
            "Precision@1": 0.0,
            "NDCG@1": 0.0,
            "HitRate@1": 0.0,
            "Recall@3": 0.5,
            "Precision@3": 1 / 3,
            "NDCG@3": L3 / (1 + L3),
            "HitRate@3": 1.0,
        }
    )


def test_k_equal_to_num_items_and_too_large():
    train, test = _csr(TRAIN, 5), _csr(TEST, 5)
    # K=5 = num_items is allowed: u0 ranking [1, 2, 3, 4, 0(-inf)], rel [0, 1, 0, 1, 0];
    # u2 ranking [2, 0, 4, 3, 1(-inf)], rel [1, 0, 0, 0, 0]. Precision = (2/5 + 1/5) / 2 = 0.3.
    got = evaluate_topk(_table_score_fn(SCORES), train, test, ks=5)
    assert got["Precision@5"] == pytest.approx(0.3)
    assert got["Recall@5"] == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="larger than the number of items"):
        evaluate_topk(_table_score_fn(SCORES), train, test, ks=(2, 6))
    for bad in (0, -1, (), (2.5,), True):
        with pytest.raises(ConfigError):
            evaluate_topk(_table_score_fn(SCORES), train, test, ks=bad)


def test_batching_input_types_and_caller_tensor_untouched():
    table = torch.tensor(SCORES)
    before = table.clone()

    def fn(user_ids):
        return table[user_ids] if len(user_ids) > 1 else table[user_ids[0]].view(1, -1)

    ref = evaluate_topk(fn, _csr(TRAIN, 5), _csr(TEST, 5), ks=(2, 4), batch_size=64)
    one = evaluate_topk(fn, _csr(TRAIN, 5), _csr(TEST, 5), ks=[4, 2, 2], batch_size=1)
    assert one == pytest.approx(ref)
    assert torch.equal(table, before)  # the view handed out for batch size 1 is not modified
    # csr_array and coo inputs, integer scores
    arr = evaluate_topk(
        lambda u: table[u].to(torch.int64) * 10,
        sp.csr_array(_csr(TRAIN, 5)),
        _csr(TEST, 5).tocoo(),
        ks=(2, 4),
    )
    assert arr == pytest.approx(ref)


def test_evaluate_topk_errors():
    train, test = _csr(TRAIN, 5), _csr(TEST, 5)
    fn = _table_score_fn(SCORES)
    with pytest.raises(ConfigError, match="shape"):
        evaluate_topk(fn, _csr(TRAIN, 6), test)
    with pytest.raises(ConfigError, match="expected"):
        evaluate_topk(lambda u: torch.zeros(len(u), 4), train, test, ks=2)
    with pytest.raises(ConfigError, match=r"torch\.Tensor"):
        evaluate_topk(lambda u: np.zeros((len(u), 5)), train, test, ks=2)
    nan = torch.tensor(SCORES)
    nan[2, 3] = float("nan")
    with pytest.raises(ConfigError, match="NaN"):
        evaluate_topk(lambda u: nan[u], train, test, ks=2)
    with pytest.raises(ConfigError, match="no user has test items"):
        evaluate_topk(fn, train, _csr([set(), set(), set()], 5), ks=2)
    with pytest.raises(ConfigError, match="batch_size"):
        evaluate_topk(fn, train, test, ks=2, batch_size=0)
    with pytest.raises(ConfigError, match=r"scipy\.sparse"):
        evaluate_topk(fn, train, np.zeros((3, 5)), ks=2)


# ------------------------------------------------------------------------------ array helpers


def test_array_helpers_hand_computed():
    # Row 0: ranked [3, 1, 4], test {1, 4, 9}: rel [0, 1, 1] -> K=2: recall 1/3, prec 1/2,
    #        NDCG = L3 / (1 + L3); K=3: recall 2/3, prec 2/3, NDCG = (L3 + 1/2) / (1 + L3 + 1/2).
    # Row 1: ranked [0, 2, -1 (padding)], test {} -> skipped.
    # Row 2: ranked [7, 8, 5], test {5}: rel [0, 0, 1] -> K=2: all 0; K=3: recall 1, prec 1/3,
    #        NDCG = (1/log2(4)) / 1 = 1/2.
    ranked = np.array([[3, 1, 4], [0, 2, -1], [7, 8, 5]])
    tests = [{1, 4, 9}, set(), [5]]
    assert ranked_hits(ranked, tests).tolist() == [
        [False, True, True],
        [False, False, False],
        [False, False, True],
    ]
    got = topk_metrics_from_ranked(ranked, tests, ks=(2, 3))
    want = {
        "Recall@2": (1 / 3 + 0) / 2,
        "Precision@2": (1 / 2 + 0) / 2,
        "NDCG@2": (L3 / (1 + L3) + 0) / 2,
        "HitRate@2": 0.5,
        "Recall@3": (2 / 3 + 1) / 2,
        "Precision@3": (2 / 3 + 1 / 3) / 2,
        "NDCG@3": ((L3 + 0.5) / (1 + L3 + 0.5) + 0.5) / 2,
        "HitRate@3": 1.0,
    }
    assert got == pytest.approx(want)
    assert topk_metrics_from_ranked(torch.tensor(ranked), _csr(tests, 10), ks=(2, 3)) == (
        pytest.approx(want)
    )
    hits = ranked_hits(ranked, tests)
    assert topk_metrics_from_hits(hits, [3, 0, 1], ks=(2, 3)) == pytest.approx(want)


def test_array_helper_errors():
    ranked = np.array([[3, 1, 4]])
    with pytest.raises(ConfigError, match="ranked list length"):
        topk_metrics_from_ranked(ranked, [{1}], ks=4)
    with pytest.raises(ConfigError, match="repeats"):
        topk_metrics_from_ranked(np.array([[1, 2, 1]]), [{1}], ks=2)
    with pytest.raises(ConfigError, match="entries"):
        topk_metrics_from_ranked(ranked, [{1}, {2}], ks=2)
    with pytest.raises(ConfigError, match="no user has test items"):
        topk_metrics_from_ranked(ranked, [set()], ks=2)
    with pytest.raises(ConfigError, match="more hits"):
        topk_metrics_from_hits(np.array([[True, True]]), [1], ks=2)
    with pytest.raises(ConfigError, match="2-D"):
        topk_metrics_from_ranked(np.array([1, 2]), [{1}], ks=1)


# ------------------------------------------------------------------- naive reference, random


def _naive_user(ranked, test, k):
    """Metrics of one user's ranked list (training items already removed) at cut-off k."""
    rel = [1 if item in test else 0 for item in ranked[:k]]
    hits = sum(rel)
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel))
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(test), k)))
    return {
        "Recall": hits / len(test),
        "Precision": hits / k,
        "NDCG": dcg / idcg,
        "HitRate": 1.0 if hits else 0.0,
    }


def _naive_evaluate(scores, train, test, ks):
    totals = {f"{m}@{k}": 0.0 for k in ks for m in RANKING_METRICS}
    n = 0
    for u, row in enumerate(scores):
        if not test[u]:
            continue
        n += 1
        candidates = [i for i in range(len(row)) if i not in train[u]]
        ranked = sorted(candidates, key=lambda i: -row[i])
        for k in ks:
            for m, v in _naive_user(ranked, test[u], k).items():
                totals[f"{m}@{k}"] += v
    return {key: v / n for key, v in totals.items()}


@pytest.mark.parametrize("seed", range(6))
def test_evaluate_topk_random_against_naive(seed):
    rng = random.Random(seed)
    num_users, num_items = rng.randint(1, 40), rng.randint(3, 30)
    # Distinct scores (a permutation per user), so the ranking has no ties.
    scores = [rng.sample(range(num_items), num_items) for _ in range(num_users)]
    # Train and test drawn independently: they may overlap and may leave < K candidates.
    train = [set(rng.sample(range(num_items), rng.randint(0, num_items - 1))) for _ in scores]
    test = [set(rng.sample(range(num_items), rng.randint(0, 4))) for _ in scores]
    test[0] = test[0] or {0}
    ks = sorted({rng.randint(1, num_items) for _ in range(3)})
    want = _naive_evaluate(scores, train, test, ks)
    for batch_size in (1, 7, 1000):
        got = evaluate_topk(
            _table_score_fn(scores),
            _csr(train, num_items),
            _csr(test, num_items),
            ks=ks,
            batch_size=batch_size,
        )
        assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_topk_metrics_from_ranked_random_against_naive(seed):
    rng = random.Random(100 + seed)
    num_users, num_items, length = rng.randint(1, 30), 25, 10
    ranked = [rng.sample(range(num_items), length) for _ in range(num_users)]
    test = [set(rng.sample(range(num_items), rng.randint(0, 6))) for _ in range(num_users)]
    test[-1] = test[-1] or {ranked[-1][0]}
    ks = (1, 5, 10)
    totals = {f"{m}@{k}": 0.0 for k in ks for m in RANKING_METRICS}
    users = [u for u in range(num_users) if test[u]]
    for u in users:
        for k in ks:
            for m, v in _naive_user(ranked[u], test[u], k).items():
                totals[f"{m}@{k}"] += v
    want = {key: v / len(users) for key, v in totals.items()}
    got = topk_metrics_from_ranked(np.array(ranked), [sorted(s) for s in test], ks=ks)
    assert got == pytest.approx(want, abs=1e-12)
    got_csr = topk_metrics_from_ranked(np.array(ranked), _csr(test, num_items), ks=ks)
    assert got_csr == pytest.approx(want, abs=1e-12)
