"""LightGCN adjacency-list loader: Gowalla, Yelp2018, Amazon-Book (train.txt missing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedrec.data import InteractionDataset, load_dataset
from fedrec.errors import DataError

CASES = [
    ("gowalla", 29_858, 40_981, 810_128, 217_242),
    ("yelp2018", 31_668, 38_048, 1_237_259, 324_147),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_staged_counts(data_root: Path, need, case) -> None:
    name, n_users, n_items, n_train, n_test = case
    need(data_root / name, "train.txt", "test.txt", "user_list.txt", "item_list.txt")
    ds = load_dataset(name, data_root, val_fraction=0.0)  # the loader's own split
    assert isinstance(ds, InteractionDataset)
    assert (ds.num_users, ds.num_items) == (n_users, n_items)
    assert (len(ds.train), len(ds.test)) == (n_train, n_test)
    assert len(np.unique(ds.train.users)) == n_users and np.all(ds.train.values == 1)
    assert ds.train.items.max() == n_items - 1


def test_amazon_book_missing_train_names_file_and_place(data_root: Path, need) -> None:
    need(data_root / "amazon-book", "test.txt")
    if (data_root / "amazon-book/train.txt").exists():
        pytest.skip("amazon-book train.txt is staged")
    with pytest.raises(DataError) as err:
        load_dataset("amazon-book", data_root)
    msg = str(err.value)
    assert msg.startswith("amazon-book: missing train.txt in ")
    assert str(data_root / "amazon-book" / "train.txt") in msg
    assert "LightGCN-PyTorch/master/data/amazon-book/train.txt" in msg and "\n" not in msg


def write(root: Path, train: str, test: str, n_items: int | None = None) -> Path:
    d = root / "gowalla"
    d.mkdir(parents=True, exist_ok=True)
    (d / "train.txt").write_text(train)
    (d / "test.txt").write_text(test)
    if n_items is not None:
        (d / "item_list.txt").write_text(
            "org_id remap_id\n" + "".join(f"{i} {i}\n" for i in range(n_items))
        )
    return root


def test_format_empty_user_line_and_universe(tmp_path: Path) -> None:
    write(tmp_path, "0 1 2 3\n1\n2 0\n", "0 4\n1 2\n\n", n_items=6)
    ds = load_dataset("gowalla", tmp_path, val_fraction=0.0)
    assert (ds.num_users, ds.num_items) == (3, 6)
    assert ds.train.users.tolist() == [0, 0, 0, 2] and ds.train.items.tolist() == [1, 2, 3, 0]
    assert ds.test.users.tolist() == [0, 1] and ds.test.items.tolist() == [4, 2]
    no_lists = write(tmp_path / "b", "0 1\n", "1 7\n")
    assert load_dataset("gowalla", no_lists).num_items == 8


@pytest.mark.parametrize(
    ("train", "test", "message"),
    [
        ("0 1 x\n", "0 1\n", r"train\.txt line 1: 'x' is not an integer id"),
        ("0 1\n1 -2\n", "0 1\n", r"train\.txt line 2: negative id -2"),
        ("0 1\n", "0 1\n\n1 6\n", r"test\.txt line 3: item id 6 out of range 0\.\.5"),
    ],
)
def test_malformed(tmp_path: Path, train: str, test: str, message: str) -> None:
    write(tmp_path, train, test, n_items=6)
    with pytest.raises(DataError, match=message):
        load_dataset("gowalla", tmp_path)
