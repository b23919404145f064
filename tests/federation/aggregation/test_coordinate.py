"""The coordinate-wise rules (:mod:`fedrec.federation.aggregation.coordinate`): hand-computed
medians and trimmed means, their breakdown under huge attackers, the sparse rules against the
densified cohort, the per-item rule against a loop over items, and the row-norm bound."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.errors import ConfigError
from fedrec.federation.aggregation import RowUpdates, coordinate_median, per_item, trimmed_mean
from fedrec.federation.aggregation.coordinate import row_norm_bound


def test_median_times_n_hand_computed():
    x = torch.tensor([[1.0, 10.0], [2.0, 20.0], [100.0, -5.0]])
    assert coordinate_median(x).tolist() == [6.0, 30.0]  # 3 · (2, 10)
    # Even n: the mean of the two middle values, 4 · (3 + 10) / 2.
    assert coordinate_median(torch.tensor([[20.0], [1.0], [10.0], [3.0]])).tolist() == [26.0]


def test_trimmed_mean_times_n_hand_computed():
    x = torch.tensor([[4.0], [100.0], [1.0], [3.0], [2.0]])
    assert trimmed_mean(x, 0.2).tolist() == [15.0]  # k = 1: 5 · mean(2, 3, 4)
    assert trimmed_mean(x, 0.0).tolist() == [110.0]  # the plain sum
    assert trimmed_mean(x, 0.49).tolist() == [15.0]  # k = floor(2.45) = 2: 5 · 3
    assert trimmed_mean(x, 0.1).tolist() == [110.0]  # k = floor(0.5) = 0


def test_median_and_trimmed_mean_agree_with_numpy():
    x = np.random.default_rng(3).normal(size=(9, 5))
    t = torch.from_numpy(x)
    assert np.allclose(coordinate_median(t).numpy(), 9 * np.median(x, axis=0))
    kept = np.sort(x, axis=0)[2:7]  # beta 0.25 of 9: k = 2
    assert np.allclose(trimmed_mean(t, 0.25).numpy(), 9 * kept.mean(axis=0))


@pytest.mark.parametrize("f", [1, 4])
def test_breakdown_median_and_trimmed_mean_stay_near_the_benign_sum(f):
    n, gen = 12, torch.Generator().manual_seed(f)
    benign = 1.0 + 0.1 * torch.randn(n - f, 4, generator=gen)
    x = torch.cat([benign, torch.full((f, 4), 1e6)])
    lo, hi = n * benign.min(0).values, n * benign.max(0).values
    for estimate in (coordinate_median(x), trimmed_mean(x, f / n + 1e-9)):
        assert bool(((estimate >= lo) & (estimate <= hi)).all())
    assert float(x.sum(0).min()) > 1e5  # the plain sum is the attackers'


def test_sparse_rules_equal_the_rules_on_the_densified_cohort(cohort):
    ids, rows = cohort(25, 8, 3, seed=2)
    u = RowUpdates.of(ids, rows, 8)
    dense = u.dense()
    for beta in (0.0, 0.1, 0.3, 0.45):
        assert torch.allclose(trimmed_mean(u, beta).reshape(-1), trimmed_mean(dense, beta),
                              atol=1e-5)
    assert torch.allclose(coordinate_median(u).reshape(-1), coordinate_median(dense), atol=1e-6)
    # Most rows are sent by few of the 25: their median is zero, the implicit zeros' value.
    assert int((coordinate_median(u).abs().sum(1) == 0).sum()) >= 4


def _loop_over_items(ids, rows, num_rows, rule) -> torch.Tensor:
    out = torch.zeros(num_rows, rows[0].shape[1])
    for r in range(num_rows):
        sent = [v[i == r][0] for i, v in zip(ids, rows, strict=True) if bool((i == r).any())]
        if sent:
            out[r] = rule(torch.stack(sent))
    return out


@pytest.mark.parametrize("seed", [0, 5])
def test_per_item_equals_a_loop_over_items(cohort, seed):
    ids, rows = cohort(60, 15, 4, seed=seed)
    u = RowUpdates.of(ids, rows, 15)
    assert torch.allclose(per_item(u, "median"),
                          _loop_over_items(ids, rows, 15, coordinate_median), atol=1e-5)
    assert torch.allclose(per_item(u, "trimmed_mean", 0.25),
                          _loop_over_items(ids, rows, 15, lambda v: trimmed_mean(v, 0.25)),
                          atol=1e-5)


def test_per_item_hand_computed_and_untouched_rows_stay_zero():
    ids = [torch.tensor([0, 1]), torch.tensor([0]), torch.tensor([0, 1])]
    rows = [torch.tensor([1.0, 5.0]), torch.tensor([9.0]), torch.tensor([2.0, 7.0])]
    out = per_item(RowUpdates.of(ids, rows, 3), "median")
    assert out.tolist() == [6.0, 12.0, 0.0]  # 3 · median(1, 9, 2); 2 · (5 + 7) / 2; nobody


def test_per_item_resists_a_minority_of_each_rows_contributors(cohort):
    ids, rows = cohort(60, 10, 3, seed=4)
    honest = per_item(RowUpdates.of(ids, rows, 10), "median")
    hot = 0  # the most popular row: sent by many
    sent = [bool((i == hot).any()) for i in ids]
    attacked = [torch.where((i == hot)[:, None], 1e6, v) if s and k % 5 == 0 else v
                for k, (i, v, s) in enumerate(zip(ids, rows, sent, strict=True))]
    out = per_item(RowUpdates.of(ids, attacked, 10), "median")
    assert sum(sent) >= 20 and float((out[hot] - honest[hot]).abs().max()) < 0.5 * sum(sent)


def test_cold_item_weakness_and_the_row_norm_bound():
    """A cold row sent by one benign client and three attackers: the per-item median is the
    attackers' value times 4; with ``bound_rows`` each contribution is first scaled to the
    cohort's median row norm, so the row moves by at most ``sqrt(D) · 4 · nu``."""
    gen = torch.Generator().manual_seed(7)
    width, cold = 4, 19
    ids = [torch.randperm(cold, generator=gen)[:5] for _ in range(50)]
    rows = [torch.randn(5, width, generator=gen) for _ in ids]
    ids[0] = torch.cat([ids[0], torch.tensor([cold])])
    rows[0] = torch.cat([rows[0], -torch.ones(1, width)])
    ids += [torch.tensor([cold])] * 3
    rows += [torch.full((1, width), 1e3)] * 3
    u = RowUpdates.of(ids, rows, cold + 1)
    nu = row_norm_bound(u)
    plain = per_item(u, "median")[cold]
    bounded = per_item(u, "median", bound_rows=True)[cold]
    assert torch.allclose(plain, torch.full((width,), 4e3))  # the attackers decide
    assert float(bounded.norm()) <= width ** 0.5 * 4 * nu * (1 + 1e-6)
    assert float(plain.norm()) / float(bounded.norm()) > 100
    # nu is a benign row's norm (the median of a chi with 4 degrees of freedom is about 1.8).
    assert 1.0 < nu < 3.0


def test_bad_input_is_a_one_line_config_error():
    x = torch.ones(3, 2)
    for beta in (-0.1, 0.5, 0.7):
        with pytest.raises(ConfigError, match=r"beta must lie in \[0, 0.5\)"):
            trimmed_mean(x, beta)
    with pytest.raises(ConfigError, match="n >= 1 clients"):
        coordinate_median(torch.empty(0, 2))
    with pytest.raises(ConfigError, match="n >= 1 clients"):
        trimmed_mean(torch.ones(3), 0.1)
    with pytest.raises(ConfigError, match="per-item rule must be one of median, trimmed_mean"):
        per_item(RowUpdates.of([torch.tensor([0])], [torch.ones(1, 2)], 1), "mean")
