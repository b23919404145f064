"""Planetoid loader: public split counts, agreement with PyG, safe unpickling, missing files."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from fedrec.data import load_dataset
from fedrec.data.loaders.planetoid import safe_load_pickle
from fedrec.errors import ConfigError, DataError

SUFFIXES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
CASES = [("cora", 2708, 1433, 7, 140, 5278, 0), ("citeseer", 3327, 3703, 6, 120, 4552, 15)]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_public_split(data_root: Path, need, case) -> None:
    name, n, f, c, n_train, n_edges, padded = case
    need(data_root / "planetoid", *(f"ind.{name}.{s}" for s in SUFFIXES))
    g = load_dataset(name, data_root)
    assert (g.num_nodes, g.x.shape[1], g.num_classes) == (n, f, c)
    assert (g.train_mask.sum(), g.val_mask.sum(), g.test_mask.sum()) == (n_train, 500, 1000)
    assert not (g.train_mask & g.val_mask).any() and not (g.val_mask & g.test_mask).any()
    assert g.edge_index.shape == (2, 2 * n_edges)
    assert (g.edge_index[0] != g.edge_index[1]).all()
    assert g.meta["padded_test_nodes"] == padded
    # symmetric
    fwd = set(map(tuple, g.edge_index.T.tolist()))
    assert all((b, a) in fwd for a, b in list(fwd)[:2000])


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_matches_pyg(data_root: Path, need, name: str) -> None:
    need(data_root / "planetoid", *(f"ind.{name}.{s}" for s in SUFFIXES))
    pyg_io = pytest.importorskip("torch_geometric.io")
    ref = pyg_io.read_planetoid_data(str(data_root / "planetoid"), name)
    g = load_dataset(name, data_root)
    assert np.allclose(ref.x.numpy(), g.x)
    assert np.array_equal(ref.y.numpy(), g.y)
    for mask in ("train_mask", "val_mask", "test_mask"):
        assert np.array_equal(getattr(ref, mask).numpy(), getattr(g, mask))
    ref_edges = ref.edge_index.numpy()
    order = np.lexsort((ref_edges[1], ref_edges[0]))
    assert np.array_equal(ref_edges[:, order], g.edge_index)  # ours is sorted by (src, dst)


def test_pubmed_missing_allx(data_root: Path, need) -> None:
    need(data_root / "planetoid", "ind.pubmed.x", "ind.pubmed.graph")
    if (data_root / "planetoid/ind.pubmed.allx").exists():
        pytest.skip("ind.pubmed.allx is staged")
    with pytest.raises(DataError, match=r"pubmed: missing ind\.pubmed\.allx in .*planetoid"):
        load_dataset("pubmed", data_root)


class _Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_restricted_unpickler_refuses_code(tmp_path: Path, capsys) -> None:
    path = tmp_path / "ind.cora.x"
    path.write_bytes(pickle.dumps(_Evil(), protocol=2))
    with pytest.raises(DataError, match=r"ind\.cora\.x: not a valid Planetoid pickle .*refusing"):
        safe_load_pickle(path)
    assert "pwned" not in capsys.readouterr().out


def test_corrupt_pickle_in_dataset(
    data_root: Path, tmp_path: Path, need, mirror, replace_file
) -> None:
    files = [f"ind.cora.{s}" for s in SUFFIXES]
    need(data_root / "planetoid", *files)
    mirror(data_root / "planetoid", tmp_path / "planetoid", files)
    data = (data_root / "planetoid/ind.cora.allx").read_bytes()
    replace_file(tmp_path / "planetoid/ind.cora.allx", data[: len(data) // 3])
    with pytest.raises(DataError, match=r"ind\.cora\.allx: not a valid Planetoid pickle"):
        load_dataset("cora", tmp_path)
    replace_file(tmp_path / "planetoid/ind.cora.allx", data)
    replace_file(tmp_path / "planetoid/ind.cora.test.index", b"2692\n27x\n")
    with pytest.raises(DataError, match=r"ind\.cora\.test\.index line 2: node id '27x'"):
        load_dataset("cora", tmp_path)


def test_random_split_is_seeded_60_20_20_of_the_labelled_nodes(data_root: Path, need) -> None:
    need(data_root / "planetoid", *(f"ind.cora.{s}" for s in SUFFIXES))
    g = load_dataset("cora", data_root, split="random", seed=3)
    assert (g.train_mask.sum(), g.val_mask.sum(), g.test_mask.sum()) == (1625, 542, 541)
    masks = np.stack([g.train_mask, g.val_mask, g.test_mask])
    assert (masks.sum(axis=0) == 1).all()  # a partition of Cora's nodes (all labelled)
    assert g.meta["validation"] == "given val_mask"  # not carved again from train
    again = load_dataset("cora", data_root, split="random", seed=3)
    other = load_dataset("cora", data_root, split="random", seed=4)
    assert np.array_equal(g.test_mask, again.test_mask)
    assert not np.array_equal(g.test_mask, other.test_mask)
    with pytest.raises(ConfigError, match="split must be one of public, random"):
        load_dataset("cora", data_root, split="randm")
