"""The validation split: carved from the training rows only, per user (per training node of a
graph), seeded, sized by ``val_fraction``, applied to every dataset by ``load_dataset``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from fedrec.data import Interactions, RatingDataset, load_dataset, partition_by_user
from fedrec.data.splits import carve_validation
from fedrec.errors import ConfigError


def _pairs(x: Interactions) -> set[tuple[int, int]]:
    return set(zip(x.users.tolist(), x.items.tolist(), strict=True))


def _rows(x: Interactions) -> list[tuple[int, int, float]]:
    return sorted(zip(x.users.tolist(), x.items.tolist(), x.values.tolist(), strict=True))


@pytest.fixture(scope="module")
def raw_ml100k(data_root: Path) -> RatingDataset:
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    ds = load_dataset("ml-100k", data_root, val_fraction=0.0)
    assert isinstance(ds, RatingDataset) and len(ds.valid) == 0
    return ds


def test_sizes_per_user_and_the_one_row_rule(raw_ml100k: RatingDataset) -> None:
    # ML-100K users have >= 20 ratings; add users with one and two training rows to see the rule.
    tr = raw_ml100k.train
    lone = Interactions(np.array([0, 1, 1]), np.array([0, 0, 1]), np.ones(3, np.float32))
    shifted = Interactions(lone.users + raw_ml100k.num_users, lone.items, lone.values)
    ds = dataclasses.replace(raw_ml100k, num_users=raw_ml100k.num_users + 2,
                             train=Interactions.concat(tr, shifted))
    out = carve_validation(ds, 0.1, seed=0)
    n_train = np.bincount(ds.train.users, minlength=ds.num_users)
    n_valid = np.bincount(out.valid.users, minlength=ds.num_users)
    want = np.where(n_train >= 2, np.maximum(np.floor(0.1 * n_train), 1), 0)
    assert np.array_equal(n_valid, want)
    assert n_valid[-2:].tolist() == [0, 1]  # one row: kept for training; two rows: one held out
    assert (np.bincount(out.train.users, minlength=ds.num_users) >= 1)[n_train > 0].all()
    assert out.meta["validation"] == {"fraction": 0.1, "seed": 0, "rows": int(want.sum())}
    assert len(carve_validation(ds, 0.3, seed=0).valid) > len(out.valid)


def test_carved_from_training_rows_only(raw_ml100k: RatingDataset) -> None:
    out = carve_validation(raw_ml100k, 0.1, seed=0)
    # Train and validation partition the old training rows; the test rows are untouched.
    assert _rows(Interactions.concat(out.train, out.valid)) == _rows(raw_ml100k.train)
    assert not _pairs(out.valid) & _pairs(out.train)
    assert not _pairs(out.valid) & _pairs(out.test)
    assert out.test is raw_ml100k.test


def test_seeded(raw_ml100k: RatingDataset) -> None:
    a = carve_validation(raw_ml100k, 0.1, seed=3)
    b = carve_validation(raw_ml100k, 0.1, seed=3)
    c = carve_validation(raw_ml100k, 0.1, seed=4)
    assert _rows(a.valid) == _rows(b.valid)
    assert _pairs(a.valid) != _pairs(c.valid)
    assert len(a.valid) == len(c.valid)  # the sizes depend on the counts only


def test_load_dataset_applies_it_with_its_options(data_root: Path,
                                                  raw_ml100k: RatingDataset) -> None:
    ds = load_dataset("ml-100k", data_root)
    assert _rows(ds.valid) == _rows(carve_validation(raw_ml100k, 0.1, 0).valid)
    assert len(ds.train) + len(ds.valid) == len(raw_ml100k.train) == 80000
    # The validation seed follows the dataset's seed option unless val_seed is given.
    seeded = load_dataset("ml-100k", data_root, split="random", seed=5)
    assert seeded.meta["validation"]["seed"] == 5
    assert load_dataset("ml-100k", data_root, val_seed=7).meta["validation"]["seed"] == 7
    for bad in (1.0, -0.1, "0.1", True):
        with pytest.raises(ConfigError, match="val_fraction"):
            load_dataset("ml-100k", data_root, val_fraction=bad)
    with pytest.raises(ConfigError, match="val_seed"):
        load_dataset("ml-100k", data_root, val_seed=1.5)


def test_clients_get_their_validation_rows_privately(data_root: Path) -> None:
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    ds = load_dataset("ml-100k", data_root)
    clients = partition_by_user(ds)
    assert sum(c.num_valid for c in clients.values()) == len(ds.valid)
    for u in (0, 17, 942):
        c = clients[u]
        mine = ds.valid.users == u
        assert sorted(c.valid_items.tolist()) == sorted(ds.valid.items[mine].tolist())
        assert c.valid_items.base is None and not c.valid_items.flags.writeable
        assert not set(c.valid_items.tolist()) & set(c.train_items.tolist())
        # Known interactions of a ranking: training items for validation, both for test.
        assert sorted(c.known_items("valid").tolist()) == sorted(c.train_items.tolist())
        assert sorted(c.known_items("test").tolist()) == sorted(
            c.train_items.tolist() + c.valid_items.tolist())


def test_graphs_keep_a_given_val_mask_and_get_one_otherwise(data_root: Path) -> None:
    if not (data_root / "planetoid/ind.cora.x").is_file():
        pytest.skip("staged cora not available")
    raw = load_dataset("cora", data_root, val_fraction=0.0)
    given = load_dataset("cora", data_root)
    for mask in ("train_mask", "val_mask", "test_mask"):
        assert np.array_equal(getattr(given, mask), getattr(raw, mask))
    bare = dataclasses.replace(raw, val_mask=np.zeros_like(raw.val_mask))
    out = carve_validation(bare, 0.1, seed=0)
    n_train = int(raw.train_mask.sum())
    assert int(out.val_mask.sum()) == round(0.1 * n_train)
    assert not (out.val_mask & out.train_mask).any() and not (out.val_mask & out.test_mask).any()
    assert np.array_equal(out.val_mask | out.train_mask, raw.train_mask)
    assert np.array_equal(out.test_mask, raw.test_mask)
    assert np.array_equal(carve_validation(bare, 0.1, seed=0).val_mask, out.val_mask)
