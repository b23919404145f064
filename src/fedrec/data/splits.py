"""Train/test splitting and filtering of interaction triples (all vectorised, seeded)."""

from __future__ import annotations

import numpy as np

from fedrec.data.types import Interactions
from fedrec.errors import ConfigError


def _check_fraction(test_fraction: float) -> None:
    if not 0.0 <= float(test_fraction) < 1.0:
        raise ConfigError(f"test_fraction must be in [0, 1), got {test_fraction}")


def random_split(
    inter: Interactions, test_fraction: float = 0.1, seed: int = 0
) -> tuple[Interactions, Interactions]:
    """Global random split: exactly ``round(test_fraction * n)`` rows go to test.

    Rows keep their original relative order inside each part.
    """
    _check_fraction(test_fraction)
    n = len(inter)
    n_test = round(test_fraction * n)
    perm = np.random.default_rng(seed).permutation(n)
    test_mask = np.zeros(n, dtype=bool)
    test_mask[perm[:n_test]] = True
    return inter.select(~test_mask), inter.select(test_mask)


def per_user_split(
    inter: Interactions, test_fraction: float = 0.2, seed: int = 0
) -> tuple[Interactions, Interactions]:
    """Split every user's rows separately: ``floor(test_fraction * n_u)`` rows (at least one when
    ``n_u >= 2`` and ``test_fraction > 0``) go to test; a user with a single row keeps it in train.
    """
    _check_fraction(test_fraction)
    n = len(inter)
    if n == 0:
        return inter, inter
    rng = np.random.default_rng(seed)
    key = rng.random(n)
    order = np.lexsort((key, inter.users))
    users_sorted = inter.users[order]
    _, start, counts = np.unique(users_sorted, return_index=True, return_counts=True)
    n_test = np.floor(test_fraction * counts).astype(np.int64)
    if test_fraction > 0:
        n_test = np.where(counts >= 2, np.maximum(n_test, 1), 0)
    rank = np.arange(n) - np.repeat(start, counts)
    test_sorted = rank < np.repeat(n_test, counts)
    test_mask = np.zeros(n, dtype=bool)
    test_mask[order] = test_sorted
    return inter.select(~test_mask), inter.select(test_mask)


def k_core(users: np.ndarray, items: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the rows of the ``k``-core: iteratively drop users and items with fewer
    than ``k`` rows until every remaining user and item has at least ``k``."""
    if k < 1:
        raise ConfigError(f"k_core must be a positive integer, got {k}")
    keep = np.ones(len(users), dtype=bool)
    while True:
        u_counts = np.bincount(users[keep], minlength=int(users.max(initial=-1)) + 1)
        i_counts = np.bincount(items[keep], minlength=int(items.max(initial=-1)) + 1)
        new_keep = keep & (u_counts[users] >= k) & (i_counts[items] >= k)
        if new_keep.sum() == keep.sum():
            return new_keep
        keep = new_keep
