"""Steam-200K loader: staged counts, which rows count, per-user split, k-core, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedrec.data import InteractionDataset, load_dataset
from fedrec.data.loaders.steam import read_steam_csv
from fedrec.errors import ConfigError, DataError


@pytest.fixture(scope="module")
def steam(data_root: Path) -> Path:
    if not (data_root / "steam-200k/steam-200k.csv").is_file():
        pytest.skip("staged steam-200k.csv not available")
    return data_root


@pytest.fixture(scope="module")
def purchases(steam: Path) -> InteractionDataset:
    return load_dataset("steam-200k", steam, val_fraction=0.0)  # the loader's own split


def test_raw_counts(steam: Path) -> None:
    users, titles, behaviors, _ = read_steam_csv(steam / "steam-200k/steam-200k.csv")
    assert len(users) == 200_000
    assert (len(np.unique(users)), len(np.unique(titles.astype(str)))) == (12_393, 5_155)
    assert ((behaviors == "purchase").sum(), (behaviors == "play").sum()) == (129_511, 70_489)


def test_purchase_dataset_and_split(purchases: InteractionDataset) -> None:
    ds = purchases
    assert (ds.num_users, ds.num_items) == (12_393, 5_155)
    assert len(ds.train) + len(ds.test) == 128_804  # 129,511 purchase rows, deduplicated
    n_tr = np.bincount(ds.train.users, minlength=ds.num_users)
    n_te = np.bincount(ds.test.users, minlength=ds.num_users)
    total = n_tr + n_te
    assert np.all(n_tr >= 1)  # every user keeps training rows
    assert np.all(n_te[total == 1] == 0) and np.all(n_te[total >= 2] >= 1)
    assert np.all(n_te == np.where(total >= 2, np.maximum(np.floor(0.2 * total), 1), 0))
    keys = np.concatenate([ds.train.users * 10_000 + ds.train.items,
                           ds.test.users * 10_000 + ds.test.items])  # fmt: skip
    assert len(np.unique(keys)) == len(keys)
    assert ds.meta["item_ids"][0] < ds.meta["item_ids"][1]  # titles sorted


def test_seed_and_options(steam: Path, purchases: InteractionDataset) -> None:
    same = load_dataset("steam-200k", steam, seed=0, val_fraction=0.0)
    other = load_dataset("steam-200k", steam, seed=1, val_fraction=0.0)
    assert np.array_equal(same.test.items, purchases.test.items)
    assert not np.array_equal(other.test.items, purchases.test.items)
    play = load_dataset("steam-200k", steam, behavior="play", val_fraction=0.0)
    assert (play.num_users, play.num_items, len(play.train) + len(play.test)) == (
        11_350,
        3_600,
        70_477,
    )
    core = load_dataset("steam-200k", steam, k_core=5, val_fraction=0.0)
    both = _all_pairs(core)
    assert np.bincount(both[0]).min() >= 5 and np.bincount(both[1]).min() >= 5
    with pytest.raises(ConfigError, match="behavior"):
        load_dataset("steam-200k", steam, behavior="wishlist")


def _all_pairs(ds: InteractionDataset) -> tuple[np.ndarray, np.ndarray]:
    return (np.concatenate([ds.train.users, ds.test.users]),
            np.concatenate([ds.train.items, ds.test.items]))  # fmt: skip


def write_csv(root: Path, text: str) -> Path:
    (root / "steam-200k").mkdir(parents=True, exist_ok=True)
    (root / "steam-200k/steam-200k.csv").write_text(text)
    return root


def test_rows_that_count(tmp_path: Path) -> None:
    rows = [
        '5,"Game, The",purchase,1.0,0',
        '5,"Game, The",play,3.5,0',
        '5,"Game, The",purchase,1.0,0',
        '9,"B",play,1.0,0',
        '9,"C",purchase,1.0,0',
    ]
    root = write_csv(tmp_path, "\n".join(rows) + "\n")
    ds = load_dataset("steam-200k", root)
    assert (ds.num_users, ds.num_items, len(ds.train), len(ds.test)) == (2, 2, 2, 0)
    assert list(ds.meta["item_ids"]) == ["C", "Game, The"]
    play = load_dataset("steam-200k", root, behavior="play")
    assert list(play.meta["item_ids"]) == ["B", "Game, The"]
    assert list(play.meta["user_ids"]) == [5, 9]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '1,"A",purchase,1.0,0\n1,"B",purchase,1.0\n',
            "line 2: expected 5 comma-separated fields, got 4",
        ),
        ('1,"A",purchase,1.0,0\n\n1,"B",wishlist,1.0,0\n', "line 3: behavior 'wishlist'"),
        ('x1,"A",purchase,1.0,0\n', "line 1: user id 'x1' is not an integer"),
        ('1,"A",play,many,0\n', "line 1: value 'many' is not a number"),
    ],
)
def test_malformed(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DataError) as err:
        load_dataset("steam-200k", write_csv(tmp_path, text))
    assert "steam-200k.csv" in str(err.value) and message in str(err.value)
