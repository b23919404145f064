"""per_user_topk_metrics (what a federated client reports about itself) agrees with the
centralized topk_metrics_from_hits once averaged over the users that have test items."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedrec.metrics import RANKING_METRICS, per_user_topk_metrics, topk_metrics_from_hits


def _random_case(rng: np.random.Generator, users: int, length: int):
    num_test = rng.integers(0, 12, size=users)
    hits = np.zeros((users, length), dtype=bool)
    for u in range(users):
        k = min(num_test[u], rng.integers(0, length + 1))
        hits[u, rng.choice(length, size=k, replace=False)] = True  # never more hits than tests
    return hits, num_test


@pytest.mark.parametrize("seed", range(5))
def test_mean_over_users_with_test_items_equals_the_central_metrics(seed: int) -> None:
    rng = np.random.default_rng(seed)
    hits, num_test = _random_case(rng, users=300, length=50)
    assert (num_test == 0).any() and (num_test > 0).any()
    ks = (1, 5, 20, 50)
    per_user = per_user_topk_metrics(hits, num_test, ks)
    central = topk_metrics_from_hits(hits, num_test, ks)
    assert set(per_user) == set(central) == {f"{m}@{k}" for k in ks for m in RANKING_METRICS}
    has_test = num_test > 0
    for name, values in per_user.items():
        assert values.shape == (300,)
        assert np.all(values[~has_test] == 0.0)  # users without test items report zeros
        assert float(values[has_test].mean()) == pytest.approx(central[name], rel=1e-12)


def test_hand_computed_user() -> None:
    # One user, 3 test items, hits at ranks 1 and 3 of 4.
    hits = np.array([[True, False, True, False], [False, False, False, False]])
    out = per_user_topk_metrics(hits, np.array([3, 0]), (2, 4))
    disc = [1 / math.log2(r + 2) for r in range(4)]
    assert out["Recall@2"][0] == pytest.approx(1 / 3)
    assert out["Precision@2"][0] == pytest.approx(1 / 2)
    assert out["NDCG@2"][0] == pytest.approx(disc[0] / (disc[0] + disc[1]))
    assert out["Recall@4"][0] == pytest.approx(2 / 3)
    assert out["NDCG@4"][0] == pytest.approx((disc[0] + disc[2]) / sum(disc[:3]))
    assert out["HitRate@4"][0] == 1.0
    assert all(v[1] == 0.0 for v in out.values())


def test_accepts_torch_inputs_like_a_client_sends() -> None:
    rng = np.random.default_rng(9)
    hits, num_test = _random_case(rng, users=40, length=20)
    a = per_user_topk_metrics(torch.from_numpy(hits), torch.from_numpy(num_test), (10,))
    b = per_user_topk_metrics(hits, num_test, (10,))
    for name in a:
        assert np.array_equal(a[name], b[name])
