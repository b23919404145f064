"""mgcnn .mat (HDF5) loader: Douban, Flixster, YahooMusic counts; synthetic and corrupt files."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from fedrec.data import load_dataset
from fedrec.data.loaders.mgcnn import load_mgcnn
from fedrec.errors import DataError

# (name, file, train, test, users with ratings, items with ratings, user graph nnz, item graph nnz,
#  rating range, number of distinct values). Totals as in PROVENANCE.md; the per-axis counts are
# for the transposed (rows = users) orientation: PROVENANCE lists them swapped, i.e. counted on the
# raw h5py arrays.
CASES = [
    ("douban", "training_test_dataset.mat", 123_202, 13_689, 2_999, 3_000, 2_690, None, (1, 5), 5),
    ("flixster", "training_test_dataset_10_NNs.mat", 23_556, 2_617, 2_341, 2_956, 59_354, 50_918,
     (0.5, 5), 10),
    ("yahoo_music", "training_test_dataset_10_NNs.mat", 4_802, 533, 1_357, 1_363, None, 56_890,
     (1, 100), 71),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_staged_counts(data_root: Path, need, case) -> None:
    name, file, n_tr, n_te, n_users, n_items, ug, ig, (lo, hi), n_values = case
    need(data_root / name, file)
    ds = load_dataset(name, data_root, val_fraction=0.0)  # the loader's own split
    assert (ds.num_users, ds.num_items) == (3000, 3000)
    assert (len(ds.train), len(ds.test)) == (n_tr, n_te)
    users = np.union1d(ds.train.users, ds.test.users)
    items = np.union1d(ds.train.items, ds.test.items)
    assert (len(users), len(items)) == (n_users, n_items)
    values = np.concatenate([ds.train.values, ds.test.values])
    assert (values.min(), values.max()) == (lo, hi) and len(np.unique(values)) == n_values
    assert (ds.rating_min, ds.rating_max) == (lo, hi)
    assert (None if ds.user_graph is None else ds.user_graph.nnz) == ug
    assert (None if ds.item_graph is None else ds.item_graph.nnz) == ig
    train_keys = ds.train.users * 3000 + ds.train.items
    assert np.intersect1d(train_keys, ds.test.users * 3000 + ds.test.items).size == 0


def test_flixster_graphs_agree_with_orientation(data_root: Path, need) -> None:
    """Graph neighbours rate similar items only when rows are users (the transposed reading)."""
    need(data_root / "flixster", "training_test_dataset_10_NNs.mat")
    ds = load_dataset("flixster", data_root)
    r = ds.train.to_csr(3000, 3000)
    r.data[:] = 1
    item_cooc = (r.T @ r).multiply(ds.item_graph).sum() / ds.item_graph.nnz
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 3000, (2, 50_000))
    rand = np.asarray((r.T @ r)[a, b]).mean()
    assert item_cooc > 3 * rand


def write_mat(path: Path, fields: dict, sparse: tuple[str, ...] = ()) -> Path:
    """A MATLAB v7.3-like file: dense arrays stored transposed, sparse ones as data/ir/jc groups."""
    with h5py.File(path, "w") as h5:
        for key, m in fields.items():
            if key in sparse:
                c = sp.csc_matrix(m)
                g = h5.create_group(key)
                g.attrs["MATLAB_class"] = np.bytes_(b"double")
                g.attrs["MATLAB_sparse"] = np.uint64(c.shape[0])
                g["data"], g["ir"], g["jc"] = (
                    c.data,
                    c.indices.astype(np.uint64),
                    c.indptr.astype(np.uint64),
                )
            else:
                h5[key] = np.asarray(m, dtype=np.float64).T
    return path


def small(rng: np.random.Generator, shape=(5, 4)) -> dict:
    m = np.zeros(shape)
    m[0, 1], m[1, 0], m[2, 3], m[4, 2], m[3, 3] = 5, 1, 3, 4, 2
    otr = (m > 0) & (np.arange(shape[0])[:, None] != 3)
    ote = (m > 0) & ~otr
    w = np.zeros((shape[0], shape[0]))
    w[0, 1] = w[1, 0] = 1
    return {"M": m, "Otraining": otr * 1.0, "Otest": ote * 1.0, "W_users": w}


@pytest.mark.parametrize("sparse", [(), ("W_users", "M")], ids=["dense", "sparse-groups"])
def test_synthetic_dense_and_sparse(tmp_path: Path, sparse) -> None:
    f = small(np.random.default_rng(0))
    path = write_mat(tmp_path / "x.mat", f, sparse)
    ds = load_mgcnn(path, "x", 1, 5, 1)
    assert (ds.num_users, ds.num_items) == (5, 4)
    t = ds.train
    triples = zip(t.users.tolist(), t.items.tolist(), t.values.tolist(), strict=True)
    assert sorted(triples) == [(0, 1, 5.0), (1, 0, 1.0), (2, 3, 3.0), (4, 2, 4.0)]
    assert (ds.test.users.tolist(), ds.test.items.tolist()) == ([3], [3])
    assert ds.user_graph.shape == (5, 5) and ds.user_graph.nnz == 2 and ds.item_graph is None


def test_rating_out_of_range(tmp_path: Path) -> None:
    f = small(np.random.default_rng(0))
    f["M"][2, 3] = 7
    path = write_mat(tmp_path / "x.mat", f)
    with pytest.raises(DataError, match=r"x\.mat: rating M\[user 2, item 3\] = 7 outside 1\.\.5"):
        load_mgcnn(path, "x", 1, 5, 1)


def test_missing_field_and_overlap(tmp_path: Path) -> None:
    f = small(np.random.default_rng(0))
    del f["Otest"]
    with pytest.raises(DataError, match="missing field 'Otest'"):
        load_mgcnn(write_mat(tmp_path / "a.mat", f), "x", 1, 5, 1)
    f = small(np.random.default_rng(0))
    f["Otest"] = f["Otraining"]
    with pytest.raises(DataError, match="overlap"):
        load_mgcnn(write_mat(tmp_path / "b.mat", f), "x", 1, 5, 1)


def test_truncated_and_garbage_files(
    data_root: Path, tmp_path: Path, need, mirror, replace_file
) -> None:
    need(data_root / "douban", "training_test_dataset.mat")
    mirror(data_root / "douban", tmp_path / "douban", [])
    data = (data_root / "douban/training_test_dataset.mat").read_bytes()
    replace_file(tmp_path / "douban/training_test_dataset.mat", data[: len(data) // 2])
    with pytest.raises(DataError) as err:
        load_dataset("douban", tmp_path)
    assert "training_test_dataset.mat" in str(err.value) and "\n" not in str(err.value)
    replace_file(tmp_path / "douban/training_test_dataset.mat", b"MATLAB 5.0 MAT-file, not hdf5")
    with pytest.raises(DataError, match=r"not a readable MATLAB v7\.3"):
        load_dataset("douban", tmp_path)
