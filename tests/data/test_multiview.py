"""FL-MV-DSSM's data on the real ML-100K: task split, held-aside slice, views, item features."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from fedrec.data import Interactions, RatingDataset, load_dataset
from fedrec.data.multiview import MultiViewData, build_multiview, load_multiview
from fedrec.errors import ConfigError

NUM_ITEMS = 1682


def pairs(x: Interactions) -> np.ndarray:
    return x.users * NUM_ITEMS + x.items


@pytest.fixture(scope="module")
def every(data_root: Path) -> RatingDataset:
    """All of ML-100K's ratings in file order (train), none in test: what build_multiview
    starts from."""
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ML-100K not available")
    return load_dataset("ml-100k", data_root, split="random", test_fraction=0.0, val_fraction=0.0)


@pytest.fixture(scope="module")
def mv(every: RatingDataset) -> MultiViewData:
    return build_multiview(every)


def test_shapes_and_dimensions(mv: MultiViewData) -> None:
    task = mv.task
    assert (task.num_users, task.num_items) == (943, 1682)
    assert (len(mv.held_aside), len(task.train), len(task.valid), len(task.test)) == (
        19_633, 58_295, 5_999, 16_073)
    assert mv.view_names == ("demographics", "svd") and mv.view_dims == (23, 30)
    assert all(v.shape[0] == 943 and v.dtype == np.float32 for v in mv.user_views)
    assert mv.item_features.shape == (1682, 3188) and mv.item_features.dtype == np.float32
    assert [len(n) for n in mv.view_feature_names] == [23, 30]
    assert len(mv.item_feature_names) == 3188
    for part in (task.train, task.valid, task.test, mv.held_aside):
        assert (part.values == 1.0).all()  # implicit: every rated pair a positive
    assert task.meta["split"] == "random 80%/20%, seed 0"
    assert task.meta["held_aside"] == {"fraction": 0.2, "seed": 0, "rows": 19_633}


def test_held_aside_rows_are_in_no_part_of_the_task(mv: MultiViewData) -> None:
    held = pairs(mv.held_aside)
    parts = [pairs(getattr(mv.task, p)) for p in ("train", "valid", "test")]
    for part in parts:
        assert np.intersect1d(held, part).size == 0
    assert np.intersect1d(parts[0], parts[2]).size == 0
    everything = np.concatenate([held, *parts])
    assert len(np.unique(everything)) == len(everything) == 100_000
    # every user has other-app data, and its view-2 row is not zero
    assert len(np.unique(mv.held_aside.users)) == 943
    assert (np.abs(mv.user_views[1]).sum(1) > 0).all()


def test_changing_test_rows_changes_no_feature(every: RatingDataset, mv: MultiViewData) -> None:
    # Give every row that became a test row another item (one its user never rated) and
    # another rating; the held-aside slice, training and validation rows and every feature
    # stay as they were: no test row reaches a feature.
    rows = every.train
    is_test = np.isin(pairs(rows), pairs(mv.task.test))
    rated = {u: set(rows.items[rows.users == u].tolist()) for u in np.unique(rows.users)}
    items = rows.items.copy()
    for k in np.flatnonzero(is_test):
        user = int(rows.users[k])
        fresh = next(i for i in range(NUM_ITEMS) if i not in rated[user])
        rated[user].add(fresh)
        items[k] = fresh
    values = np.where(is_test, 6.0 - rows.values, rows.values).astype(np.float32)
    changed = dataclasses.replace(every, train=Interactions(rows.users, items, values))
    other = build_multiview(changed)
    assert not np.array_equal(np.sort(pairs(other.task.test)), np.sort(pairs(mv.task.test)))
    assert len(other.task.test) == len(mv.task.test)
    for part in ("train", "valid"):
        assert np.array_equal(pairs(getattr(other.task, part)), pairs(getattr(mv.task, part)))
    assert np.array_equal(pairs(other.held_aside), pairs(mv.held_aside))
    for mine, theirs in zip(mv.user_views, other.user_views, strict=True):
        assert np.array_equal(mine, theirs)
    assert np.array_equal(other.item_features, mv.item_features)


def test_held_aside_rows_do_reach_view_2(every: RatingDataset, mv: MultiViewData) -> None:
    # the converse, so that the test above could fail: dropping one held-aside row of user 0
    # changes view 2
    rows = every.train
    first_held = np.flatnonzero(np.isin(pairs(rows), pairs(mv.held_aside)) & (rows.users == 0))
    items = rows.items.copy()
    items[first_held[0]] = next(i for i in range(NUM_ITEMS)
                                if i not in set(rows.items[rows.users == 0].tolist()))
    other = build_multiview(dataclasses.replace(
        every, train=Interactions(rows.users, items, rows.values)))
    assert not np.array_equal(other.user_views[1][0], mv.user_views[1][0])
    assert np.array_equal(other.user_views[0], mv.user_views[0])


def test_load_multiview_from_either_source(data_root: Path, mv: MultiViewData, need) -> None:
    need(data_root / "ml-100k", "recbole/ml-100k.inter", "recbole/ml-100k.user",
         "recbole/ml-100k.item")
    for source in ("grouplens", "recbole"):
        loaded = load_multiview("ml-100k", data_root, source=source)
        for part in ("train", "valid", "test"):
            assert np.array_equal(pairs(getattr(loaded.task, part)),
                                  pairs(getattr(mv.task, part)))
        assert all(np.array_equal(a, b) for a, b in zip(loaded.user_views, mv.user_views,
                                                        strict=True))
        assert np.array_equal(loaded.item_features, mv.item_features)


def test_per_user_split_and_seeds(every: RatingDataset, mv: MultiViewData) -> None:
    per_user = build_multiview(every, split="per-user")
    assert (len(per_user.task.train), len(per_user.task.valid), len(per_user.task.test)) == (
        58_627, 6_033, 15_707)
    assert np.array_equal(pairs(per_user.held_aside), pairs(mv.held_aside))
    assert per_user.task.meta["split"] == "per-user 80%/20%, seed 0"
    reseeded = build_multiview(every, seed=1, svd_dim=8)
    assert reseeded.view_dims == (23, 8)
    assert not np.array_equal(pairs(reseeded.held_aside), pairs(mv.held_aside))


@pytest.mark.parametrize(("options", "message"), [
    ({"svd_dim": 1683}, "svd_dim 1683 is above the item count 1682"),
    ({"split": "u1"}, "split must be one of random, per-user"),
    ({"test_fraction": 0.0}, r"test_fraction must be in \(0, 1\)"),
    ({"held_aside_fraction": 1.0}, r"held_aside_fraction must be in \(0, 1\)"),
])
def test_bad_options(every: RatingDataset, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        build_multiview(every, **options)
    assert "\n" not in str(err.value)


def test_datasets_without_side_information(every: RatingDataset, data_root: Path) -> None:
    with pytest.raises(ConfigError, match="ml-1m: multi-view data needs item titles"):
        load_multiview("ml-1m", data_root)
    bare = dataclasses.replace(every, meta={})
    with pytest.raises(ConfigError, match="ml-100k: no user demographics"):
        build_multiview(bare)


def test_a_user_with_a_single_rating(every: RatingDataset) -> None:
    rows = every.train
    keep = (rows.users != 0) | (np.cumsum(rows.users == 0) == 1)  # user 0 keeps one rating
    with pytest.raises(ConfigError, match=r"^user 0 \(and 0 more\) has no held-aside"):
        build_multiview(dataclasses.replace(every, train=rows.select(keep)))
