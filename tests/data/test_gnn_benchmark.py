"""gnn-benchmark npz graphs (optional extra datasets)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedrec.data import load_dataset
from fedrec.errors import DataError


@pytest.mark.parametrize(
    ("name", "file", "n", "f", "c"),
    [
        ("cora-gnnbench", "cora.npz", 2708, 1433, 7),
        ("citeseer-gnnbench", "citeseer.npz", 3312, 3703, 6),
    ],
)
def test_counts(data_root: Path, need, name: str, file: str, n: int, f: int, c: int) -> None:
    need(data_root / "gnn-benchmark-npz", file)
    g = load_dataset(name, data_root)
    assert (g.num_nodes, g.x.shape[1], g.num_classes) == (n, f, c)
    assert g.train_mask.sum() == 20 * c and g.val_mask.sum() == 30 * c
    assert (g.train_mask | g.val_mask | g.test_mask).all()
    assert np.bincount(g.y[g.train_mask]).tolist() == [20] * c


def test_corrupt(tmp_path: Path) -> None:
    (tmp_path / "gnn-benchmark-npz").mkdir()
    (tmp_path / "gnn-benchmark-npz/cora.npz").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(DataError, match=r"cora\.npz: not a readable gnn-benchmark \.npz"):
        load_dataset("cora-gnnbench", tmp_path)
