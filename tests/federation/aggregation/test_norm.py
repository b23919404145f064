"""L2 norm bounding (:mod:`fedrec.federation.aggregation.norm`): exact scaling, a whole sparse
update bounded together, the bounded influence of attackers, and the bound's check."""

from __future__ import annotations

import pytest
import torch

from fedrec.errors import ConfigError
from fedrec.federation.aggregation import RowUpdates, norm_bound, norm_bounded_sum


def test_norm_bound_scales_above_and_keeps_below():
    out = norm_bound(torch.tensor([3.0, 4.0]), 1.0)
    assert torch.allclose(out, torch.tensor([0.6, 0.8])) and float(out.norm()) <= 1.0
    small = torch.tensor([0.3, 0.4])
    assert torch.equal(norm_bound(small, 1.0), small)


def test_a_sparse_update_is_bounded_as_one_vector():
    # Client 0's rows [3, 0] and [0, 4] have norm 5 together: both scaled by 1/5, not each to 1.
    ids = [torch.tensor([0, 1]), torch.tensor([1])]
    rows = [torch.tensor([[3.0, 0.0], [0.0, 4.0]]), torch.tensor([[0.5, 0.0]])]
    u = RowUpdates.of(ids, rows, 2)
    out = norm_bounded_sum(u, 1.0)
    assert torch.allclose(out, torch.tensor([[0.6, 0.0], [0.5, 0.8]]))
    assert torch.allclose(out.reshape(-1), norm_bounded_sum(u.dense(), 1.0))


def test_f_attackers_move_the_bounded_sum_by_at_most_f_bound(cohort):
    ids, rows = cohort(30, 10, 3, seed=6)
    bound, f = 2.0, 3
    honest = norm_bounded_sum(RowUpdates.of(ids, rows, 10), bound)
    attacked = norm_bounded_sum(RowUpdates.of(
        [*ids, *[torch.arange(10)] * f], [*rows, *[torch.full((10, 3), 1e5)] * f], 10), bound)
    assert float((attacked - honest).norm()) <= f * bound * (1 + 1e-6)


def test_a_bad_bound_is_a_one_line_config_error():
    for bound in (0.0, -1.0, float("inf")):
        with pytest.raises(ConfigError, match="finite number > 0"):
            norm_bound(torch.ones(2), bound)
