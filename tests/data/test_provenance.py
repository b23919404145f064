"""What a run's data were (issue 41): the files ``load_dataset`` read, each with its size and
sha256, the loader, the split and the counts; data made in memory say so."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from fedrec.data import load_dataset
from fedrec.data.provenance import FILES_READ, IN_MEMORY, data_record, files_read
from fedrec.data.types import InteractionDataset, Interactions
from fedrec.errors import DataError

from .conftest import mirror, need


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_grouplens_files_are_recorded_relative_to_the_data_root(data_root: Path) -> None:
    need(data_root, "ml-100k/u.data", "ml-100k/u1.test")
    ds = load_dataset("ml-100k", data_root, split="u3")
    record = data_record(ds, "ml-100k", {"split": "u3"})
    paths = [f["path"] for f in record["files"]]
    # u3.base is read too: it is checked to hold exactly the other ratings.
    assert paths == ["ml-100k/u.data", "ml-100k/u.user", "ml-100k/u.item", "ml-100k/u3.test",
                     "ml-100k/u3.base"]
    for f in record["files"]:
        on_disk = data_root / f["path"]
        assert f["bytes"] == on_disk.stat().st_size and f["sha256"] == _sha256(on_disk)
    assert record["origin"] == "files" and record["data_root"] == str(data_root)
    assert record["given"] == "ml-100k" and record["kind"] == "rating"
    assert record["loader"] == "GroupLens files (u.data, u.user, u.item)"
    assert record["split"]["name"].startswith("GroupLens u3")
    assert record["split"]["options"] == {"split": "u3"}
    assert record["split"]["validation"] == {"fraction": 0.1, "seed": 0,
                                             "rows": len(ds.valid)}
    assert record["counts"] == {"users": 943, "items": 1682, "clients": 943,
                                "train_rows": len(ds.train), "valid_rows": len(ds.valid),
                                "test_rows": 20000}


def test_the_recbole_fallback_and_its_random_split_are_recorded(data_root: Path,
                                                                tmp_path: Path) -> None:
    """A fresh machine may find only RecBole's copy: the record names it and its random split
    (the run's results.json said nothing of it)."""
    need(data_root, "ml-100k/recbole/ml-100k.inter")
    root = tmp_path / "data"
    mirror(data_root / "ml-100k" / "recbole", root / "ml-100k" / "recbole")
    record = data_record(load_dataset("ml-100k", root), "ml-100k", {})
    assert record["loader"].startswith("RecBole atomic files")
    assert record["split"]["name"] == "random 80%/20%, seed 0"
    assert [f["path"] for f in record["files"]] == [
        "ml-100k/recbole/ml-100k.inter", "ml-100k/recbole/ml-100k.user",
        "ml-100k/recbole/ml-100k.item"]
    inter = data_root / "ml-100k/recbole/ml-100k.inter"
    assert record["files"][0]["sha256"] == _sha256(inter)


def test_a_users_file_is_named_as_given(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text("user,item,rating\n" + "".join(f"u{u},i{i},{1 + (u + i) % 5}\n"
                                                  for u in range(6) for i in range(5)))
    ds = load_dataset(path, test_fraction=0.2)
    record = data_record(ds, str(path), {"test_fraction": 0.2})
    assert record["files"] == [{"path": path.as_posix(), "bytes": path.stat().st_size,
                                "sha256": _sha256(path)}]
    assert record["data_root"] is None and record["split"]["options"] == {"test_fraction": 0.2}
    assert record["counts"]["users"] == 6 and record["counts"]["items"] == 5


def test_data_made_in_memory_say_so() -> None:
    rows = Interactions(np.array([0, 1]), np.array([0, 1]), np.ones(2, np.float32))
    ds = InteractionDataset(name="synthetic", num_users=2, num_items=2, train=rows, test=rows)
    record = data_record(ds, "synthetic", {})
    assert FILES_READ not in ds.meta
    assert record["origin"] == IN_MEMORY and record["files"] == []
    assert record["counts"]["train_rows"] == 2 and record["kind"] == "interaction"


def test_a_file_outside_the_root_keeps_its_path(tmp_path: Path) -> None:
    inside, outside = tmp_path / "root" / "a.txt", tmp_path / "b.txt"
    inside.parent.mkdir()
    inside.write_bytes(b"a" * 3_000_000)  # more than one 1 MiB chunk
    outside.write_bytes(b"")
    got = files_read([inside, outside], tmp_path / "root")
    assert got == [{"path": "a.txt", "bytes": 3_000_000, "sha256": _sha256(inside)},
                   {"path": outside.as_posix(), "bytes": 0, "sha256": _sha256(outside)}]


def test_a_file_gone_since_it_was_read_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"gone.txt: cannot be read again to record its sha256 "
                                        r"\(No such file or directory\)$"):
        files_read([tmp_path / "gone.txt"], tmp_path)
