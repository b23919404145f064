"""The aggregation arithmetic (:mod:`fedrec.federation.aggregation.sums`) on hand-computed cases:
values, summation order, dtypes, and a clear error on empty or mismatched input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.errors import ProtocolError
from fedrec.federation.aggregation import fedavg, sum_rows, weighted_mean


def test_sum_rows_adds_rows_into_their_ids_and_repeats_add_up():
    ids = torch.tensor([2, 0, 2])
    rows = torch.tensor([[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]])
    out = sum_rows(ids, rows, 4)
    assert torch.equal(out, torch.tensor([[10.0, 20.0], [0.0, 0.0], [101.0, 202.0], [0.0, 0.0]]))
    assert out.dtype == torch.float32


def test_sum_rows_one_dimensional_keeps_dtype():
    out = sum_rows(torch.tensor([1, 1, 0]), torch.tensor([0.5, 0.25, 2.0], dtype=torch.float64), 3)
    assert out.dtype == torch.float64
    assert out.tolist() == [2.0, 0.75, 0.0]


def test_sum_rows_into_a_running_total_in_place():
    total = torch.tensor([1.0, 1.0, 1.0])
    out = sum_rows(torch.tensor([0, 2]), torch.tensor([5.0, 7.0]), out=total)
    assert out is total
    assert total.tolist() == [6.0, 1.0, 8.0]


def test_sum_rows_adds_in_the_order_of_the_ids():
    # 1 + 2^-24 rounds back to 1 in float32; adding the small rows first keeps them.
    big, small = 1.0, 2.0 ** -24
    first_small = sum_rows(torch.tensor([0, 0, 0]), torch.tensor([small, small, big]), 1)
    first_big = sum_rows(torch.tensor([0, 0, 0]), torch.tensor([big, small, small]), 1)
    assert first_small.item() == 1.0 + 2 * small
    assert first_big.item() == 1.0


def test_sum_rows_of_no_rows_is_zeros():
    out = sum_rows(torch.empty(0, dtype=torch.int64), torch.empty(0, 3), 2)
    assert torch.equal(out, torch.zeros(2, 3))


def test_sum_rows_refuses_mismatched_or_unsized_input():
    with pytest.raises(ValueError, match="2 ids for 3 rows"):
        sum_rows(torch.tensor([0, 1]), torch.ones(3), 4)
    with pytest.raises(ValueError, match="num_rows or out"):
        sum_rows(torch.tensor([0]), torch.ones(1))


def test_weighted_mean_hand_computed():
    out = weighted_mean([torch.tensor([0.0, 4.0]), np.array([4.0, 0.0])], [1, 3])
    assert out.dtype == torch.float64
    assert out.tolist() == [3.0, 1.0]


def test_weighted_mean_of_three_with_exact_weights():
    values = [torch.tensor([8.0, -4.0]), torch.tensor([4.0, 4.0]), torch.tensor([2.0, 1.0])]
    # Weights 0.25, 0.25, 0.5 after normalising: every product and sum is exact.
    assert weighted_mean(values, [2, 2, 4]).tolist() == [4.0, 0.5]
    assert torch.equal(weighted_mean(values, [1, 1, 2]), weighted_mean(values, [2, 2, 4]))


def test_weighted_mean_refuses_empty_and_bad_weights():
    with pytest.raises(ValueError, match="no values"):
        weighted_mean([], [])
    with pytest.raises(ValueError, match="2 values for 1 weights"):
        weighted_mean([torch.zeros(1), torch.zeros(1)], [1.0])
    with pytest.raises(ValueError, match="sum to zero"):
        weighted_mean([torch.ones(1)], [0.0])


def test_fedavg_weights_by_training_rows_and_returns_float32():
    ups = [{"n": 1, "w": torch.tensor([0.0, 4.0]), "b": torch.tensor(2.0)},
           {"n": 3, "w": torch.tensor([4.0, 0.0]), "b": torch.tensor(6.0)}]
    out = fedavg(ups, ["w", "b"])
    assert set(out) == {"w", "b"}
    assert out["w"].dtype == torch.float32
    assert out["w"].tolist() == [3.0, 1.0]
    assert out["b"].item() == 5.0


def test_fedavg_is_the_float32_weighted_mean():
    gen = torch.Generator().manual_seed(0)
    ups = [{"n": n, "w": torch.randn(5, generator=gen)} for n in (3, 1, 7)]
    expected = weighted_mean([u["w"] for u in ups], [3, 1, 7]).float()
    assert torch.equal(fedavg(ups, ["w"])["w"], expected)


def test_fedavg_needs_an_upload_with_rows():
    with pytest.raises(ProtocolError, match="at least one upload"):
        fedavg([], ["w"])
    with pytest.raises(ProtocolError, match="at least one upload"):
        fedavg([{"n": 0, "w": torch.ones(2)}], ["w"])
