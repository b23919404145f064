"""GraphSAINT-format loader on small graphs written in that exact format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fedrec.data import load_dataset
from fedrec.errors import DataError


def write_saint(root: Path, name: str = "flickr", multilabel: bool = False) -> Path:
    d = root / name
    d.mkdir(parents=True)
    n = 6
    rows, cols = [0, 1, 2, 3, 4, 0], [1, 2, 3, 4, 5, 0]  # a path plus a self loop, one direction
    sp.save_npz(d / "adj_full.npz", sp.csr_matrix((np.ones(6), (rows, cols)), shape=(n, n)))
    np.save(d / "feats.npy", np.arange(n * 3, dtype=np.float64).reshape(n, 3))
    if multilabel:
        cmap = {str(i): [i % 2, 1, 0] for i in range(n)}
    else:
        cmap = {str(i): i % 3 for i in reversed(range(n))}
    (d / "class_map.json").write_text(json.dumps(cmap))
    (d / "role.json").write_text(json.dumps({"tr": [0, 1, 2], "va": [3], "te": [4, 5]}))
    return root


def test_single_label(tmp_path: Path) -> None:
    g = load_dataset("flickr", write_saint(tmp_path))
    assert (g.num_nodes, g.x.shape[1], g.num_classes, g.multilabel) == (6, 3, 3, False)
    assert g.y.tolist() == [0, 1, 2, 0, 1, 2]
    assert g.edge_index.shape == (2, 10)  # 5 undirected edges, self loop dropped
    assert g.train_mask.tolist() == [True, True, True, False, False, False]
    assert g.test_mask.sum() == 2 and g.val_mask.sum() == 1
    z = load_dataset("flickr", tmp_path, standardize=True)
    assert np.allclose(z.x[z.train_mask].mean(0), 0, atol=1e-6)


def test_multilabel(tmp_path: Path) -> None:
    g = load_dataset("ppi", write_saint(tmp_path, "ppi", multilabel=True))
    assert g.multilabel and g.num_classes == 3 and g.y.shape == (6, 3)
    assert g.y[:, 1].tolist() == [1] * 6


def test_truncated_npz(tmp_path: Path) -> None:
    root = write_saint(tmp_path)
    p = root / "flickr/adj_full.npz"
    p.write_bytes(p.read_bytes()[:100])
    with pytest.raises(DataError, match=r"adj_full\.npz: not a readable scipy sparse \.npz"):
        load_dataset("flickr", root)


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("role.json", '{"tr": [0, 9], "va": [], "te": []}', "'tr' holds node ids outside 0..5"),
        ("role.json", '{"tr": [0], "va": [0], "te": []}', "overlap"),
        ("role.json", '{"tr": [0], "va": [1]', "invalid JSON"),
        ("class_map.json", '{"0": 1, "1": 2}', "one entry per node"),
        ("class_map.json", json.dumps({str(i): -1 for i in range(6)}), "class ids must be"),
        # node counts that disagree with adj_full.npz's 6 nodes
        ("class_map.json", json.dumps({str(i): 0 for i in (0, 1, 2, 3, 4, 7)}),
         "node ids must be exactly 0..5"),
        ("class_map.json", json.dumps({str(i): 0 for i in range(7)}), "one entry per node (6)"),
        ("role.json", '{"tr": [0], "va": [1], "te": [6]}', "'te' holds node ids outside 0..5"),
    ],
)
def test_bad_json(tmp_path: Path, file: str, content: str, message: str) -> None:
    root = write_saint(tmp_path)
    (root / "flickr" / file).write_text(content)
    with pytest.raises(DataError) as err:
        load_dataset("flickr", root)
    assert file in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_feature_rows_must_match(tmp_path: Path) -> None:
    root = write_saint(tmp_path)
    np.save(root / "flickr/feats.npy", np.zeros((5, 3)))
    with pytest.raises(DataError, match=r"feats\.npy: 5 rows, but adj_full\.npz has 6 nodes"):
        load_dataset("flickr", root)


def test_real_format_with_adj_train(tmp_path: Path) -> None:
    """All five files as GraphSAINT ships them: csr ``.npz`` adjacencies (both directions, 0/1
    floats), float64 features, string node ids in ``class_map.json``."""
    root = write_saint(tmp_path)
    d = root / "flickr"
    full = sp.load_npz(d / "adj_full.npz").tocsr()
    full = ((full + full.T) > 0).astype(np.float64).tocsr()
    sp.save_npz(d / "adj_full.npz", full)
    train = sp.csr_matrix(full.multiply(np.outer(np.arange(6) < 3, np.arange(6) < 3)))
    sp.save_npz(d / "adj_train.npz", train)
    g = load_dataset("flickr", root)
    assert g.num_nodes == 6 and g.edge_index.shape == (2, 10)
    sp.save_npz(d / "adj_train.npz", sp.csr_matrix((7, 7)))
    with pytest.raises(DataError, match=r"adj_train\.npz: shape \(7, 7\), but adj_full\.npz has 6"):
        load_dataset("flickr", root)
    (d / "adj_train.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match=r"adj_train\.npz: not a readable scipy sparse"):
        load_dataset("flickr", root)


def test_square_adjacency_required(tmp_path: Path) -> None:
    root = write_saint(tmp_path)
    sp.save_npz(root / "flickr/adj_full.npz", sp.csr_matrix((6, 5)))
    with pytest.raises(DataError, match=r"adj_full\.npz: adjacency must be square"):
        load_dataset("flickr", root)


def test_missing_directory_says_where(tmp_path: Path) -> None:
    with pytest.raises(
        DataError, match=r"reddit: missing adj_full\.npz, .* in .*reddit.*GraphSAINT"
    ):
        load_dataset("reddit", tmp_path)
