"""A user's own graph as ``--dataset DIR``: the files and their spellings, node ids, splits,
one-line errors, and Cora written out into such a folder equal to the catalogue's ``cora``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fedrec.cli.main import main
from fedrec.data import GraphDataset, is_user_file, load_dataset
from fedrec.data.fingerprint import fingerprint
from fedrec.errors import ConfigError, DataError


def write_graph(root: Path, files: dict[str, str | np.ndarray]) -> Path:
    """A graph folder of ``files``: text, or an array saved as .npy."""
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if isinstance(content, str):
            (root / name).write_text(content)
        else:
            np.save(root / name, content)
    return root


TEXT_GRAPH = {
    "edges.csv": "src,dst\n0,1\n1,2\n2,2\n1,0\n3,0\n",  # a self loop and a repeated edge
    "features.csv": "f1,f2\n1,0\n0,1\n1,1\n0,0\n5,5\n",  # node 4 is on no edge
    "labels.csv": "node,label\n0,cat\n1,dog\n2,cat\n3,\n4,dog\n",  # node 3 unlabelled
}


def load(root: Path, **options: object) -> GraphDataset:
    ds = load_dataset(root, **options)
    assert isinstance(ds, GraphDataset)
    return ds


def test_a_folder_of_csv_files_is_an_undirected_graph(tmp_path: Path) -> None:
    root = write_graph(tmp_path / "pets", TEXT_GRAPH)
    assert is_user_file(root) and is_user_file(str(root))
    ds = load(root, val_fraction=0.0)
    assert ds.name == "pets" and ds.num_nodes == 5 and ds.num_features == 2
    assert ds.x.tolist() == [[1, 0], [0, 1], [1, 1], [0, 0], [5, 5]]
    assert ds.edge_index.T.tolist() == [[0, 1], [0, 3], [1, 0], [1, 2], [2, 1], [3, 0]]
    assert ds.meta["self_loops_dropped"] == 1
    assert ds.meta["class_names"].tolist() == ["cat", "dog"] and ds.num_classes == 2
    assert ds.y.tolist() == [0, 1, 0, 0, 1] and ds.meta["unlabeled_nodes"] == 1
    in_split = ds.train_mask | ds.val_mask | ds.test_mask
    assert in_split.tolist() == [True, True, True, False, True]  # the unlabelled node: none


def test_the_random_split_is_the_catalogue_one_and_seeded(tmp_path: Path) -> None:
    root = write_graph(tmp_path / "g", TEXT_GRAPH)
    a, b, c = (load(root, split="random", seed=s, val_fraction=0.0) for s in (1, 1, 2))
    assert a.train_mask.tolist() == b.train_mask.tolist()
    assert (a.train_mask.tolist(), a.test_mask.tolist()) != (c.train_mask.tolist(),
                                                             c.test_mask.tolist())
    # 4 labelled nodes: round(0.6 * 4) = 2 train, round(0.2 * 4) = 1 val, 1 test.
    assert (a.train_mask.sum(), a.val_mask.sum(), a.test_mask.sum()) == (2, 1, 1)
    assert "random 60/20/20 of the labelled nodes (seed 1)" in a.meta["split"]


def test_node_ids_of_a_nodes_file_name_the_nodes_everywhere(tmp_path: Path) -> None:
    root = write_graph(tmp_path / "g", {
        "nodes.txt": "id\npaper-b\npaper-a\npaper-c\npaper-d\n",
        "features.npy": np.eye(4, dtype=np.float64),
        "edges.tsv": "paper-a\tpaper-b\npaper-c\tpaper-a\n",
        "labels.tsv": "paper-d\t1\npaper-a\t0\npaper-b\t1\npaper-c\t0\n",
        "train_nodes.txt": "paper-a\npaper-b\npaper-c\n",
        "test_nodes.csv": "node\npaper-d\n",
    })
    ds = load(root, val_fraction=0.34)
    assert ds.meta["node_ids"].tolist() == ["paper-b", "paper-a", "paper-c", "paper-d"]
    assert ds.edge_index.T.tolist() == [[0, 1], [1, 0], [1, 2], [2, 1]]
    assert ds.y.tolist() == [1, 0, 0, 1] and ds.num_classes == 2
    assert ds.test_mask.tolist() == [False, False, False, True]
    # No val part: one of the three training nodes is carved off for validation.
    assert ds.val_mask.sum() == 1 and (ds.train_mask | ds.val_mask).tolist() == [True] * 3 + [
        False]
    assert ds.meta["split"] == "given: 3 train / 0 val / 1 test"


def test_numpy_files_sparse_features_masks_and_multilabel(tmp_path: Path) -> None:
    feats = sp.random(6, 4, density=0.5, random_state=0, format="csr")
    root = write_graph(tmp_path / "g", {
        "edges.csv": "0,1\n2,3\n4,5\n",
        "labels.npy": np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]]),
        "train_mask.npy": np.array([1, 1, 1, 0, 0, 0], dtype=np.int8),
        "val_mask.npy": np.array([0, 0, 0, 1, 0, 0], dtype=bool),
        "test_mask.npy": np.array([0, 0, 0, 0, 1, 1], dtype=bool),
    })
    sp.save_npz(root / "features.npz", feats)
    ds = load(root)
    assert np.array_equal(ds.x, feats.toarray().astype(np.float32))
    assert ds.multilabel and ds.num_classes == 2 and ds.y.shape == (6, 2)
    assert ds.val_mask.tolist() == [False, False, False, True, False, False]
    assert ds.meta["validation"] == "given val_mask"
    (root / "features.npz").unlink()
    np.savez(root / "features.npz", anything=feats.toarray())
    assert np.array_equal(load(root).x, feats.toarray().astype(np.float32))


BAD = [
    ({"labels.csv": "0\n1\n0\n"}, "labels.csv: 3 labels for 5 nodes"),
    ({"labels.csv": None, "labels.npy": np.array([0, 1, 1, 0])}, "4 labels for 5 nodes"),
    ({"labels.csv": "node,label\n0,1\n1,1\n2,0\n4,1\n"}, "4 labels for 5 nodes (node 3 has "
     "none)"),
    ({"labels.csv": "node,label\n0,1\n1,1\n2,0\n3,0\n4,1\n1,0\n"}, "labels.csv line 7: node "
     "'1' labelled twice (first on line 3)"),
    ({"edges.csv": "0,1\n1,5\n"}, "edges.csv line 2: target '5' is not a node; nodes are 0..4"),
    ({"edges.csv": "a,b\n"}, "edges.csv: no edges (only a header)"),
    ({"edges.csv": "\n"}, "edges.csv: the file is empty"),
    ({"edges.csv": "0,1,2\n"}, "edges.csv: 3 columns; an edge list has two"),
    ({"edges.csv": None}, "no edges file (edges.csv or edges.tsv)"),
    ({"edges.tsv": "0\t1\n"}, "both edges.csv and edges.tsv; keep one edges file"),
    ({"nodes.csv": "a\nb\nc\n"}, "nodes.csv: 3 node ids, but features.csv has 5 rows"),
    ({"features.csv": "a,b\n1,0\n0,x\n"}, "features.csv line 3: feature 'x' is not a number"),
    ({"features.csv": "a,b\n"}, "features.csv: no feature rows (only a header)"),
    ({"train_mask.npy": np.ones(4, bool), "test_mask.npy": np.ones(5, bool)},
     "train_mask.npy: expected 5 booleans (0/1), one per node, got shape (4,)"),
    ({"train_nodes.txt": "0\n1\n", "test_nodes.txt": "1\n2\n"},
     "node 1 is in both the train and the test part"),
    ({"train_nodes.txt": "0\n1\n"}, "train_nodes.txt without a test part"),
    ({"train_nodes.txt": "0\n3\n", "test_nodes.txt": "2\n"},
     "node 3 is in a split part but has no label"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_files_are_one_line_errors(tmp_path: Path, change: dict, message: str) -> None:
    root = write_graph(tmp_path / "g", TEXT_GRAPH)
    for name, content in change.items():
        if content is None:
            (root / name).unlink()
    write_graph(root, {k: v for k, v in change.items() if v is not None})
    with pytest.raises(DataError) as err:
        load(root)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    root = write_graph(tmp_path / "g", TEXT_GRAPH)
    with pytest.raises(ConfigError, match=r"unknown option.*user_col.*accepted: split, seed"):
        load(root, user_col="u")
    with pytest.raises(ConfigError, match="split must be one of given, random"):
        load(root, split="public")
    with pytest.raises(DataError, match="split=given but no split files"):
        load(root, split="given")


def test_datasets_info_of_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = write_graph(tmp_path / "g", TEXT_GRAPH)
    assert main(["datasets", "info", str(root)]) == 0
    out = capsys.readouterr().out
    assert "num_nodes" in out and "num_edges" in out and "random 60/20/20" in out


def write_as_folder(ds: GraphDataset, root: Path, masks: bool) -> Path:
    """``ds`` in the folder format: sparse features, one direction of every edge, labels by
    node id, and its masks when ``masks``."""
    root.mkdir(parents=True)
    sp.save_npz(root / "features.npz", sp.csr_matrix(ds.x))
    src, dst = ds.edge_index
    one_way = src < dst
    (root / "edges.csv").write_text("source,target\n" + "".join(
        f"{s},{d}\n" for s, d in zip(src[one_way], dst[one_way], strict=True)))
    (root / "labels.csv").write_text("node,label\n" + "".join(
        f"{k},{c}\n" for k, c in enumerate(ds.y.tolist())))
    if masks:
        for part in ("train", "val", "test"):
            np.save(root / f"{part}_mask.npy", getattr(ds, f"{part}_mask"))
    return root


def test_cora_written_as_a_folder_equals_the_catalogue_cora(
        tmp_path: Path, cora: GraphDataset, data_root: Path) -> None:
    public = write_as_folder(cora, tmp_path / "public" / "cora", masks=True)
    mine = load(public)
    assert fingerprint(mine) == fingerprint(cora)  # every array, the name and the counts
    # Without masks, split=random draws the catalogue's split=random of the same seed.
    random_cora = load_dataset("cora", data_root, split="random", seed=3)
    bare = write_as_folder(cora, tmp_path / "bare" / "cora", masks=False)
    assert fingerprint(load(bare, seed=3)) == fingerprint(random_cora)


def test_a_run_on_a_folder_writes_its_class_names(tmp_path: Path) -> None:
    root = write_graph(tmp_path / "g", TEXT_GRAPH)
    out = tmp_path / "run"
    assert main(["run", "gcn-central", "--dataset", str(root), "--out", str(out),
                 "--set", "rounds=1", "--set", "hidden=4"]) == 0
    assert json.loads((out / "id_map.json").read_text()) == {"class_names": ["cat", "dog"]}
