"""Split and filter helpers."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.data import Interactions
from fedrec.data.splits import k_core, per_user_split, random_split
from fedrec.errors import ConfigError


def inter(users: list[int], items: list[int]) -> Interactions:
    return Interactions(np.array(users), np.array(items), np.ones(len(users), np.float32))


def test_random_split_sizes_and_seed() -> None:
    x = inter(list(range(1000)), list(range(1000)))
    tr, te = random_split(x, 0.1, seed=4)
    assert (len(tr), len(te)) == (900, 100)
    assert np.array_equal(te.users, random_split(x, 0.1, seed=4)[1].users)
    assert np.all(np.diff(tr.users) > 0)  # original order kept
    with pytest.raises(ConfigError):
        random_split(x, 1.0)


def test_per_user_split() -> None:
    x = inter([0] * 10 + [1] + [2, 2], list(range(13)))
    tr, te = per_user_split(x, 0.2, seed=0)
    assert np.bincount(te.users, minlength=3).tolist() == [2, 0, 1]
    assert np.bincount(tr.users, minlength=3).tolist() == [8, 1, 1]


def test_k_core() -> None:
    # user 2 has one row; removing it leaves item 9 with one row, which goes too
    users = np.array([0, 0, 1, 1, 2, 0, 1])
    items = np.array([5, 6, 5, 6, 9, 9, 7])
    keep = k_core(users, items, 2)
    assert keep.tolist() == [True, True, True, True, False, False, False]
