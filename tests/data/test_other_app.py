"""View 2: the held-aside slice ("another app's data") and its SVD user factors."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.data import Interactions
from fedrec.data.other_app import (
    check_everyone_held_aside,
    fit_item_factors,
    hold_aside,
    project_users,
    svd_view,
)
from fedrec.errors import ConfigError


def _random_rows(num_users: int, num_items: int, per_user: int, seed: int) -> Interactions:
    rng = np.random.default_rng(seed)
    items = np.concatenate([rng.choice(num_items, per_user, replace=False)
                            for _ in range(num_users)])
    users = np.repeat(np.arange(num_users), per_user)
    return Interactions(users, items.astype(np.int64), np.ones(len(users), np.float32))


def test_hold_aside_takes_a_seeded_share_of_each_user_out() -> None:
    rows = _random_rows(20, 50, 10, 0)
    task, held = hold_aside(rows, 0.2, seed=3)
    assert len(held) == 40 and np.bincount(held.users).tolist() == [2] * 20
    def keys(x: Interactions) -> set[int]:
        return set((x.users * 50 + x.items).tolist())

    assert keys(task).isdisjoint(keys(held)) and keys(task) | keys(held) == keys(rows)
    _, held_again = hold_aside(rows, 0.2, seed=3)
    assert np.array_equal(held_again.items, held.items)
    assert not np.array_equal(hold_aside(rows, 0.2, seed=4)[1].items, held.items)
    # the draw reads the users column and the row count, not the items
    other_items = Interactions(rows.users, (rows.items + 1) % 50, rows.values)
    assert np.array_equal(hold_aside(other_items, 0.2, seed=3)[1].users, held.users)
    assert np.array_equal(hold_aside(other_items, 0.2, seed=3)[1].items, (held.items + 1) % 50)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1])
def test_hold_aside_fraction_out_of_range(fraction: float) -> None:
    with pytest.raises(ConfigError, match=r"held_aside_fraction must be in \(0, 1\)"):
        hold_aside(_random_rows(2, 5, 2, 0), fraction)


def test_a_user_with_one_interaction_has_no_view_2() -> None:
    rows = Interactions(np.array([0, 0, 1]), np.array([0, 1, 2]), np.ones(3, np.float32))
    _, held = hold_aside(rows, 0.5)
    with pytest.raises(ConfigError, match=r"^user 1 \(and 0 more\) has no held-aside"):
        check_everyone_held_aside(held, np.array([0, 1]))


def test_projection_equals_the_svd_user_factors() -> None:
    held = _random_rows(30, 40, 6, 1)
    factors = fit_item_factors(held, 30, 40, dim=5)
    matrix = np.zeros((30, 40))
    matrix[held.users, held.items] = 1.0
    u, sigma, _ = np.linalg.svd(matrix, full_matrices=False)
    projected = project_users(held, 30, factors)
    assert projected.shape == (30, 5) and projected.dtype == np.float32
    np.testing.assert_allclose(np.abs(projected), np.abs(u[:, :5] * sigma[:5] ** 0.5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(factors.singular_values, sigma[:5])
    # signs fixed: each item factor's largest-magnitude entry is positive
    v = factors.projection
    assert (v[np.argmax(np.abs(v), axis=0), np.arange(5)] > 0).all()


def test_a_device_needs_only_its_own_rows_and_the_public_factors() -> None:
    held = _random_rows(10, 20, 4, 2)
    factors = fit_item_factors(held, 10, 20, dim=3)
    alone = project_users(held.select(held.users == 4), 10, factors)
    assert np.array_equal(alone[4], project_users(held, 10, factors)[4])
    assert not alone[np.arange(10) != 4].any()


def test_rank_below_dim_gives_zero_columns() -> None:
    held = Interactions(np.array([0, 1]), np.array([0, 0]), np.ones(2, np.float32))
    features, names = svd_view(held, 2, 3, dim=2)
    assert names == ("svd0", "svd1") and np.isfinite(features).all()
    assert not features[:, 1].any() and features[:, 0].tolist() == [np.float32(2 ** -0.25)] * 2


@pytest.mark.parametrize(("dim", "message"), [(4, "svd_dim 4 is above the item count 3"),
                                              (0, "svd_dim must be a positive integer"),
                                              (2.5, "svd_dim must be a positive integer")])
def test_bad_svd_dim(dim, message: str) -> None:
    held = Interactions(np.array([0, 1, 2]), np.array([0, 1, 2]), np.ones(3, np.float32))
    with pytest.raises(ConfigError, match=message):
        svd_view(held, 3, 3, dim=dim)
