"""A user's own graph for node classification, from a folder: :func:`load_graph_dir`.

``--dataset path/to/graph`` names a folder holding files of fixed names (one of each row's
spellings; two spellings of one file is an error):

* ``features.npy`` (a 2-D array), ``features.npz`` (a scipy sparse matrix,
  ``scipy.sparse.save_npz``, or one dense array, ``numpy.savez``) or ``features.csv`` /
  ``.tsv`` (one line per node, numbers only): **required**; row ``k`` is node ``k``, so the
  number of rows is the number of nodes ``N``;
* ``edges.csv`` / ``edges.tsv``: **required**, two columns (source, target), one edge a line,
  at least one edge. The graph is undirected: every edge is taken in both directions,
  repeated edges count once and self loops are dropped. Nodes on no edge (isolated nodes) are
  allowed;
* ``labels.npy`` (``N`` class ids, or an ``N x C`` 0/1 array for multi-label data) or
  ``labels.csv`` / ``.tsv``: one column (the labels in node order) or two (node, label), every
  node on one line. Labels are integers from 0 or text (class names, numbered in sorted order,
  kept in ``meta["class_names"]``); ``-1`` or an empty label marks an unlabelled node (in no
  split). **Required**;
* ``nodes.csv`` / ``.tsv`` / ``.txt`` (optional): the id of each node, one a line in row
  order, of any text. With it, the edges, the labels' node column and the node lists below name
  nodes by these ids (kept in ``meta["node_ids"]``); without it, by their row ``0 .. N-1``;
* a split (optional), for each of ``train``, ``val``, ``test``: ``<part>_mask.npy`` (``N``
  booleans or 0/1) or ``<part>_nodes.csv`` / ``.tsv`` / ``.txt`` (node ids, one a line). Train
  and test are needed together; without a ``val`` part the validation nodes are carved from
  the training nodes (``val_fraction``), as for every dataset.

Any CSV/TSV file may start with a header line: a first line that cannot be data (a field that
is not a number where numbers are due, or not a node id where ids are) is taken as one.

Options (``--data-opt``, :data:`GRAPH_OPTIONS`): ``split=given`` (the default when split files
are there) or ``split=random``: the labelled nodes shuffled with ``seed`` (default 0) and cut
60/20/20 into train, validation and test, as the catalogue's ``split=random`` of Cora
(:func:`fedrec.data.splits.random_node_split`). Bad files get one-line :class:`DataError` s:
node counts that differ between files, an edge naming a node that does not exist, an empty
edge list, a node labelled twice or not at all, overlapping split parts.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedrec.data.loaders._common import fail
from fedrec.data.loaders.planetoid import undirected_edge_index
from fedrec.data.splits import random_node_split
from fedrec.data.tables import Table, parse_numbers, read_table
from fedrec.data.types import GraphDataset
from fedrec.errors import ConfigError

#: The options of a user's graph folder, with what ``fedrec datasets info`` says of them.
GRAPH_OPTIONS = {
    "split": "given (the default when <part>_mask.npy or <part>_nodes.csv files are there) or "
    "random (the labelled nodes shuffled with seed, 60/20/20 train/val/test)",
    "seed": "random split: its seed (default 0)",
}
SPLITS = ("given", "random")
PARTS = ("train", "val", "test")
_TABLE = (".csv", ".tsv")
_LIST = (".csv", ".tsv", ".txt")
#: Each file of a graph folder and its accepted spellings (module docstring).
GRAPH_FILES: dict[str, tuple[str, ...]] = {
    "features": ("features.npy", "features.npz", *(f"features{s}" for s in _TABLE)),
    "edges": tuple(f"edges{s}" for s in _TABLE),
    "labels": ("labels.npy", *(f"labels{s}" for s in _TABLE)),
    "nodes": tuple(f"nodes{s}" for s in _LIST),
    **{part: (f"{part}_mask.npy", *(f"{part}_nodes{s}" for s in _LIST)) for part in PARTS},
}


def is_graph_dir(path: Path) -> bool:
    """Whether ``path`` is a folder (a user's graph, module docstring)."""
    return path.is_dir()


def _find(root: Path, role: str, required: bool) -> Path | None:
    there = [root / name for name in GRAPH_FILES[role] if (root / name).is_file()]
    if len(there) > 1:
        raise fail(f"{root}: both {there[0].name} and {there[1].name}; keep one {role} file")
    if not there and required:
        raise fail(f"{root}: no {role} file ({' or '.join(GRAPH_FILES[role])})")
    return there[0] if there else None


def _read_lines(path: Path) -> Table:
    # One-column lists (.txt) are read with a tab so that a comma is part of an id.
    return read_table(path, "\t" if path.suffix == ".txt" else None, header=False)


def _load_npy(path: Path) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise fail(f"{path}: not a readable .npy array ({exc})") from exc
    if not isinstance(arr, np.ndarray) or not (np.issubdtype(arr.dtype, np.number)
                                               or arr.dtype == bool):
        raise fail(f"{path}: expected a numeric array, got {getattr(arr, 'dtype', type(arr))}")
    return arr


class _NodeIds:
    """Node ids as the files name them: rows ``0 .. n-1``, or the ids of ``nodes.csv``."""

    def __init__(self, n: int, raw: np.ndarray | None) -> None:
        self.n, self.raw = n, raw
        if raw is not None:
            self.order = np.argsort(raw, kind="stable")
            self.sorted = raw[self.order]

    def known(self, cells: np.ndarray) -> np.ndarray:
        """Which of ``cells`` name a node."""
        texts = np.char.strip(cells.astype(str))
        if self.raw is None:
            digits = np.char.lstrip(np.char.lstrip(texts, "+"), "0")
            # Over 18 digits (beyond int64) is no row of any graph: refused, not converted.
            ok = np.char.isdigit(np.char.lstrip(texts, "+")) & (np.char.str_len(digits) <= 18)
            return ok & (np.where(ok, texts, "-1").astype(np.int64) < self.n)
        pos = np.minimum(np.searchsorted(self.sorted, texts), self.n - 1)
        return self.sorted[pos] == texts

    def index(self, table: Table, cells: np.ndarray, rows: np.ndarray, what: str) -> np.ndarray:
        """The row of every node ``cells`` names (``rows``: their table rows); a DataError
        naming the line of the first that is no node."""
        ok = self.known(cells)
        if not ok.all():
            k = int(np.argmin(ok))
            span = (f"the {self.n} ids of nodes file" if self.raw is not None
                    else f"0..{self.n - 1} (the {self.n} feature rows)")
            raise fail(f"{table.at(int(rows[k]))}: {what} {str(cells[k]).strip()!r} is not a "
                       f"node; nodes are {span}")
        texts = np.char.strip(cells.astype(str))
        if self.raw is None:
            return texts.astype(np.int64)
        return self.order[np.searchsorted(self.sorted, texts)].astype(np.int64)


def _body(table: Table, first_is_data: bool) -> np.ndarray:
    """The table rows that hold data: all, or all but a header line."""
    return np.arange(0 if first_is_data else 1, len(table))


def _is_number(cell: object) -> bool:
    try:
        return bool(np.isfinite(float(str(cell).strip())))
    except ValueError:
        return False


def _features(path: Path) -> np.ndarray:
    if path.suffix == ".npy":
        x = _load_npy(path)
    elif path.suffix == ".npz":
        x = _load_npz(path)
    else:
        table = _read_lines(path)
        cells = np.stack(list(table.columns.values()), axis=1)
        rows = _body(table, all(_is_number(c) for c in cells[0]))
        if not len(rows):
            raise fail(f"{path}: no feature rows (only a header)")
        flat = parse_numbers(table, cells[rows].ravel(), "feature",
                             np.repeat(rows, cells.shape[1]))
        x = flat.reshape(len(rows), cells.shape[1])
    if x.ndim != 2 or x.shape[0] == 0:
        raise fail(f"{path}: expected a 2-D matrix of nodes x features, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise fail(f"{path}: features hold NaN or infinite values")
    return np.asarray(x, dtype=np.float32)


def _load_npz(path: Path) -> np.ndarray:
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.files)
            if "format" in keys:  # scipy.sparse.save_npz
                return sp.load_npz(path).toarray()
            if len(keys) != 1:
                raise fail(f"{path}: expected a scipy sparse matrix or one array, got arrays "
                           f"{', '.join(keys) or '(none)'}")
            return np.asarray(z[keys[0]])
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise fail(f"{path}: not a readable .npz ({type(exc).__name__}: {exc})") from exc


def _node_ids(path: Path | None, n: int, features: Path) -> np.ndarray | None:
    if path is None:
        return None
    table = _read_lines(path)
    if len(table.columns) != 1:
        raise fail(f"{path}: {len(table.columns)} columns; a nodes file has one id a line")
    cells = np.char.strip(next(iter(table.columns.values())).astype(str))
    if len(cells) == n + 1:  # a header line
        cells = cells[1:]
    if len(cells) != n:
        raise fail(f"{path}: {len(cells)} node ids, but {features.name} has {n} rows")
    uniq, counts = np.unique(cells, return_counts=True)
    if (counts > 1).any():
        dup = int(np.argmax(counts > 1))
        raise fail(f"{path}: node id {uniq[dup]!r} is there twice")
    return cells


def _edges(path: Path, ids: _NodeIds) -> tuple[np.ndarray, int]:
    """``(2, E)`` both directions, and the number of self loops dropped."""
    table = _read_lines(path)
    if len(table.columns) != 2:
        raise fail(f"{path}: {len(table.columns)} columns; an edge list has two (source, "
                   "target)")
    src, dst = table.columns.values()
    rows = _body(table, bool(ids.known(np.array([src[0], dst[0]], dtype=object)).all()))
    if not len(rows):
        raise fail(f"{path}: no edges (only a header); a graph needs at least one edge")
    s = ids.index(table, src[rows], rows, "source")
    d = ids.index(table, dst[rows], rows, "target")
    return undirected_edge_index(s, d, ids.n), int((s == d).sum())


def _labels(path: Path, ids: _NodeIds) -> tuple[np.ndarray, int, bool, list[str] | None]:
    """``(y, num_classes, multilabel, class names)``; unlabelled nodes have ``y = -1``."""
    n = ids.n
    if path.suffix == ".npy":
        y = _load_npy(path)
        if y.ndim not in (1, 2) or y.shape[0] != n:
            raise fail(f"{path}: {y.shape[0] if y.ndim else 0} labels for {n} nodes (shape "
                       f"{y.shape}); give one label per feature row")
        if y.ndim == 2:
            if not np.isin(y, (0, 1)).all():
                raise fail(f"{path}: a 2-D label array is multi-label: 0/1 values only")
            return y.astype(np.int64), int(y.shape[1]), True, None
        if not (np.issubdtype(y.dtype, np.integer) or (y == np.round(y)).all()) or (y < -1).any():
            raise fail(f"{path}: labels must be integer class ids from 0 (-1: unlabelled)")
        return (*_numbered(y.astype(np.int64), path), False, None)
    table = _read_lines(path)
    cols = list(table.columns.values())
    if len(cols) not in (1, 2):
        raise fail(f"{path}: {len(cols)} columns; labels have one (a label per node, in order) "
                   "or two (node, label)")
    header = len(table) == n + 1 if len(cols) == 1 else not ids.known(cols[0][:1])[0]
    rows = _body(table, not header)
    cells = np.char.strip(cols[-1][rows].astype(str))
    if len(cols) == 1:
        if len(rows) != n:
            raise fail(f"{path}: {len(rows)} labels for {n} nodes; give one label per "
                       "feature row")
        nodes = np.arange(n)
    else:
        nodes = ids.index(table, cols[0][rows], rows, "node")
        counts = np.bincount(nodes, minlength=n)
        if (counts > 1).any():
            first, second = np.flatnonzero(nodes == int(np.argmax(counts > 1)))[:2]
            raise fail(f"{table.at(int(rows[second]))}: node "
                       f"{cols[0][rows[second]].strip()!r} labelled twice (first on line "
                       f"{table.lines[rows[first]]})")
        if (counts == 0).any():
            missing = int(np.argmax(counts == 0))
            name = missing if ids.raw is None else ids.raw[missing]
            raise fail(f"{path}: {int((counts > 0).sum())} labels for {n} nodes (node "
                       f"{name!r} has none); give every node a line (-1 or empty: unlabelled)")
    y = np.full(n, -1, dtype=np.int64)
    given = (cells != "") & (cells != "-1")
    if all(c.lstrip("+").isdigit() for c in cells[given]):
        big = [k for k in np.flatnonzero(given) if len(cells[k].lstrip("+").lstrip("0")) > 18]
        if big:  # beyond int64 (and no count of classes anyway)
            raise fail(f"{table.at(int(rows[big[0]]))}: label {cells[big[0]]} is too large; "
                       "class ids are 0, 1, 2, ... (or give the classes names)")
        y[nodes[given]] = cells[given].astype(np.int64)
        return (*_numbered(y, path), False, None)
    names, codes = np.unique(cells[given], return_inverse=True)
    y[nodes[given]] = codes
    return y, len(names), False, names.tolist()


def _numbered(y: np.ndarray, path: Path) -> tuple[np.ndarray, int]:
    if not (y >= 0).any():
        raise fail(f"{path}: no node is labelled")
    return y, int(y.max()) + 1


def _given_split(root: Path, files: dict[str, Path], ids: _NodeIds
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if "train" not in files or "test" not in files:
        there = next(iter(files))
        raise fail(f"{root}: {files[there].name} without a "
                   f"{'train' if 'train' not in files else 'test'} part; give train and test "
                   "(val is optional) or split=random")
    masks = {}
    for part in PARTS:
        path = files.get(part)
        masks[part] = np.zeros(ids.n, dtype=bool)
        if path is None:
            continue
        if path.suffix == ".npy":
            arr = _load_npy(path)
            if arr.shape != (ids.n,) or not np.isin(arr, (0, 1)).all():
                raise fail(f"{path}: expected {ids.n} booleans (0/1), one per node, got shape "
                           f"{arr.shape}")
            masks[part] = arr.astype(bool)
        else:
            table = _read_lines(path)
            cells = next(iter(table.columns.values()))
            rows = _body(table, bool(ids.known(cells[:1])[0]))
            masks[part][ids.index(table, cells[rows], rows, "node")] = True
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        both = masks[a] & masks[b]
        if both.any():
            node = int(np.argmax(both))
            raise fail(f"{root}: node {node if ids.raw is None else ids.raw[node]!r} is in "
                       f"both the {a} and the {b} part")
    return masks["train"], masks["val"], masks["test"]


def load_graph_dir(root: Path, split: str | None = None, seed: int = 0) -> GraphDataset:
    """Load the graph folder ``root`` (module docstring; options :data:`GRAPH_OPTIONS`)."""
    root = Path(root)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    split_files = {p: f for p in PARTS if (f := _find(root, p, required=False)) is not None}
    if split is None:
        split = "given" if split_files else "random"
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if split == "given" and not split_files:
        raise fail(f"{root}: split=given but no split files (train_mask.npy or "
                   "train_nodes.csv, and the same for test)")
    feature_file = _find(root, "features", required=True)
    x = _features(feature_file)  # type: ignore[arg-type]
    n = x.shape[0]
    node_file = _find(root, "nodes", required=False)
    ids = _NodeIds(n, _node_ids(node_file, n, feature_file))  # type: ignore[arg-type]
    edge_file = _find(root, "edges", required=True)
    edge_index, self_loops = _edges(edge_file, ids)  # type: ignore[arg-type]
    label_file = _find(root, "labels", required=True)
    y, num_classes, multilabel, class_names = _labels(label_file, ids)  # type: ignore[arg-type]
    labelled = np.ones(n, dtype=bool) if multilabel else y >= 0
    if split == "given":
        train, val, test = _given_split(root, split_files, ids)
        unlabelled = (train | val | test) & ~labelled
        if unlabelled.any():
            node = int(np.argmax(unlabelled))
            raise fail(f"{root}: node {node if ids.raw is None else ids.raw[node]!r} is in a "
                       "split part but has no label")
        note = f"given: {train.sum()} train / {val.sum()} val / {test.sum()} test"
    else:
        train, val, test = random_node_split(np.flatnonzero(labelled), n, seed)
        note = (f"random 60/20/20 of the labelled nodes (seed {seed}): {train.sum()} train / "
                f"{val.sum()} val / {test.sum()} test")
    files = [feature_file, node_file, edge_file, label_file, *split_files.values()]
    meta: dict[str, Any] = {
        "source": f"user graph {root}", "split": note,
        "files": [str(f) for f in files if f is not None],
        "self_loops_dropped": self_loops, "unlabeled_nodes": int((~labelled).sum()),
    }
    if ids.raw is not None:
        meta["node_ids"] = ids.raw
    if class_names is not None:
        meta["class_names"] = np.array(class_names)
    return GraphDataset(name=root.resolve().name, x=x, y=np.where(y < 0, 0, y),
                        edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test,
                        num_classes=num_classes, multilabel=multilabel, meta=meta)
