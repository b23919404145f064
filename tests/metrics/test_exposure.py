"""The targets' exposure (fedrec.metrics.exposure), checked by hand on small rankings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.metrics.exposure import ELIGIBLE, exposure_sums, is_exposure_share, reduce_exposure


def test_exposure_by_hand() -> None:
    # 3 users, 6 items; targets 4 and 5. User 0 knows item 4 (not eligible for it).
    scores = torch.tensor([
        [0.9, 0.1, 0.2, 0.3, 1.0, 0.0],   # top-2 without item 4: 0, 3
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],   # top-2: 5, 4
        [0.6, 0.5, 0.4, 0.3, 0.2, 0.55],  # top-2: 0, 5
    ])
    known_local, known_items = torch.tensor([0]), torch.tensor([4])
    shares = exposure_sums(scores, known_local, known_items, torch.tensor([4, 5]), ks=(1, 2))
    np.testing.assert_array_equal(shares[0][ELIGIBLE], [0, 1])
    np.testing.assert_array_equal(shares[1]["exposure_hits@1"], [0, 1])
    np.testing.assert_array_equal(shares[1]["exposure_hits@2"], [1, 1])
    np.testing.assert_array_equal(shares[2]["exposure_hits@2"], [0, 1])
    out = reduce_exposure(shares)
    # Target 4: users 1, 2 eligible, hit@2 by user 1 -> 1/2; target 5: 3 eligible, 2 hits.
    assert out["ER@2"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert out["ER@1"] == pytest.approx((0 + 1 / 3) / 2)
    assert out["target_HR@2"] == pytest.approx(2 / 3)
    assert out["target_HR@1"] == pytest.approx(1 / 3)


def test_replies_without_shares_are_skipped() -> None:
    assert reduce_exposure([{"rmse": 1.0}]) == {}
    assert is_exposure_share(ELIGIBLE) and is_exposure_share("exposure_hits@10")
    assert not is_exposure_share("Recall@20")
