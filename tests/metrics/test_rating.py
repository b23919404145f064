"""Tests for fedrec.metrics.rating (hand-computed cases + naive cross-checks)."""

import math
import random

import numpy as np
import pytest
import torch

from fedrec.errors import ConfigError
from fedrec.metrics import mae, rmse


def test_hand_computed():
    # pred - target = [-1, 0, -2]; squares 1, 0, 4 -> mean 5/3 -> rmse sqrt(5/3);
    # |diff| = 1, 0, 2 -> mae 3/3 = 1.
    pred, target = [1.0, 2.0, 3.0], [2.0, 2.0, 5.0]
    assert rmse(pred, target) == pytest.approx(math.sqrt(5 / 3))
    assert mae(pred, target) == pytest.approx(1.0)


def test_numpy_torch_and_mixed_inputs():
    p = np.array([3.5, 4.0, 1.0])
    t = np.array([4.0, 4.0, 2.0])
    # diff = [-0.5, 0, -1]: rmse = sqrt((0.25 + 0 + 1) / 3), mae = 1.5 / 3 = 0.5
    want_rmse, want_mae = math.sqrt(1.25 / 3), 0.5
    pt = torch.tensor(p, dtype=torch.float32, requires_grad=True)
    for a, b in [(p, t), (pt, torch.tensor(t)), (pt, t), (p.tolist(), torch.tensor(t))]:
        assert rmse(a, b) == pytest.approx(want_rmse, rel=1e-6)
        assert mae(a, b) == pytest.approx(want_mae, rel=1e-6)
    assert isinstance(rmse(pt, t), float)


def test_no_clamping_is_applied():
    # A prediction of 6 on a 1..5 scale is an error of 1 unless the caller clamps it.
    assert rmse([6.0], [5.0]) == pytest.approx(1.0)
    assert mae(torch.tensor([6.0]).clamp(1, 5), [5.0]) == 0.0


@pytest.mark.parametrize("fn", [rmse, mae])
def test_errors(fn):
    with pytest.raises(ConfigError, match="mismatched shapes"):
        fn([1.0, 2.0], [1.0])
    with pytest.raises(ConfigError, match="mismatched shapes"):
        fn(np.ones((3, 1)), np.ones(3))  # no silent broadcasting
    with pytest.raises(ConfigError, match="NaN"):
        fn([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ConfigError, match="NaN"):
        fn(torch.tensor([1.0, 2.0]), [float("nan"), 2.0])
    with pytest.raises(ConfigError, match="infinite"):
        fn([1.0, float("inf")], [1.0, 2.0])
    with pytest.raises(ConfigError, match="empty"):
        fn([], [])
    with pytest.raises(ConfigError, match="numeric"):
        fn(["a"], ["b"])


def _naive(pred, target):
    n = len(pred)
    se = sum((p - t) ** 2 for p, t in zip(pred, target, strict=True))
    ae = sum(abs(p - t) for p, t in zip(pred, target, strict=True))
    return math.sqrt(se / n), ae / n


def test_random_against_naive():
    rng = random.Random(0)
    for _ in range(50):
        n = rng.randint(1, 200)
        pred = [rng.uniform(0.0, 6.0) for _ in range(n)]
        target = [float(rng.randint(1, 5)) for _ in range(n)]
        want_rmse, want_mae = _naive(pred, target)
        assert rmse(np.array(pred), torch.tensor(target)) == pytest.approx(want_rmse, rel=1e-12)
        assert mae(pred, target) == pytest.approx(want_mae, rel=1e-12)
