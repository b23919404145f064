"""Planetoid citation graphs (Cora, CiteSeer, PubMed): ``ind.<name>.{x,y,tx,ty,allx,ally,graph}``
(Python 2 pickles of scipy/numpy objects; ``graph`` is a dict of adjacency lists) and
``ind.<name>.test.index`` (one node id per line).

The pickles are read with a restricted unpickler that only resolves the handful of numpy, scipy
and builtin classes these files use; anything else is rejected with a :class:`DataError`, so a
tampered file cannot run code.

Assembly follows Kipf & Welling / PyG: nodes are ``allx`` then ``tx`` with the test rows moved to
the positions in ``test.index``. CiteSeer's test index has gaps (isolated test nodes absent from
``tx``); the standard fix pads ``tx``/``ty`` with zero rows over the full index range (those nodes
get label 0, as in PyG, are not in any mask, and are counted in ``meta["unlabeled_nodes"]``).
Public split (``split="public"``, the default): the first ``len(y)`` nodes train (Cora 140), the
next 500 validation, the ``test.index`` nodes test (1000). ``split="random"``: the labelled nodes
shuffled with ``seed`` and cut 60/20/20 into train, validation and test (``round(0.6 n)`` and
``round(0.2 n)`` nodes, the rest test; Cora 1625/542/541), the random split FederatedScope-GNN's
and Feras's Cora results use. Edges are symmetrised, de-duplicated and self loops dropped.
"""

from __future__ import annotations

import collections
import pickle
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fedrec.data.loaders._common import fail, load_numeric_table, require_files
from fedrec.data.splits import random_node_split
from fedrec.data.types import GraphDataset
from fedrec.errors import ConfigError

SUFFIXES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
NUM_VAL = 500
SPLITS = ("public", "random")


def _np_core():
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray  # type: ignore[no-redef]
    return multiarray


def _allowed() -> dict[tuple[str, str], object]:
    ma = _np_core()
    allowed: dict[tuple[str, str], object] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("collections", "defaultdict"): collections.defaultdict,
        ("collections", "OrderedDict"): collections.OrderedDict,
    }
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(mod, "_reconstruct")] = ma._reconstruct
        allowed[(mod, "scalar")] = ma.scalar
    for mod in ("scipy.sparse.csr", "scipy.sparse._csr", "scipy.sparse"):
        allowed[(mod, "csr_matrix")] = sp.csr_matrix
    for mod in ("scipy.sparse.csc", "scipy.sparse._csc", "scipy.sparse"):
        allowed[(mod, "csc_matrix")] = sp.csc_matrix
    for mod in ("__builtin__", "builtins"):
        for name, obj in (("list", list), ("dict", dict), ("set", set), ("tuple", tuple)):
            allowed[(mod, name)] = obj
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only an allow-list of numpy/scipy/collections/builtin classes."""

    _ALLOWED = _allowed()

    def find_class(self, module: str, name: str) -> object:
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}") from None


def safe_load_pickle(path: Path) -> object:
    """Unpickle ``path`` (Python 2 pickles use ``latin1``) with :class:`RestrictedUnpickler`."""
    try:
        with open(path, "rb") as fh:
            return RestrictedUnpickler(fh, encoding="latin1").load()
    except OSError as exc:
        raise fail(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except Exception as exc:
        raise fail(f"{path}: not a valid Planetoid pickle ({type(exc).__name__}: {exc})") from exc


def _as_csr(obj: object, path: Path) -> sp.csr_matrix:
    if isinstance(obj, np.ndarray) and obj.ndim == 2:
        return sp.csr_matrix(obj.astype(np.float32))
    if isinstance(obj, sp.spmatrix):
        d = obj.__dict__
        try:
            if isinstance(obj, sp.csc_matrix):
                m = sp.csc_matrix((d["data"], d["indices"], d["indptr"]), shape=d["_shape"])
            else:
                m = sp.csr_matrix((d["data"], d["indices"], d["indptr"]), shape=d["_shape"])
            m.check_format(full_check=True)
        except (KeyError, ValueError, TypeError) as exc:
            raise fail(f"{path}: corrupt sparse matrix ({exc})") from exc
        return m.tocsr().astype(np.float32)
    raise fail(f"{path}: expected a feature matrix, got {type(obj).__name__}")


def _as_labels(obj: object, path: Path) -> np.ndarray:
    if not isinstance(obj, np.ndarray) or obj.ndim != 2 or not np.issubdtype(obj.dtype, np.number):
        raise fail(f"{path}: expected a 2-D one-hot label array, got {type(obj).__name__}")
    return obj.astype(np.float32)


def _edges(graph: object, n: int, path: Path) -> np.ndarray:
    if not isinstance(graph, dict):
        raise fail(f"{path}: expected a dict of adjacency lists, got {type(graph).__name__}")
    rows, cols = [], []
    try:
        for node, neigh in graph.items():
            neigh = [int(v) for v in neigh]
            rows.extend([int(node)] * len(neigh))
            cols.extend(neigh)
    except (TypeError, ValueError) as exc:
        raise fail(f"{path}: adjacency lists must hold integer node ids ({exc})") from exc
    src, dst = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    bad = (src < 0) | (src >= n) | (dst < 0) | (dst >= n)
    if bad.any():
        k = int(np.argmax(bad))
        raise fail(f"{path}: edge ({src[k]}, {dst[k]}) refers to a node outside 0..{n - 1}")
    return undirected_edge_index(src, dst, n)


def undirected_edge_index(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """``(2, E)`` int64 with both directions of every edge, sorted, no duplicates or self loops."""
    s = np.concatenate([src, dst])
    d = np.concatenate([dst, src])
    keep = s != d
    code = np.unique(s[keep] * n + d[keep])
    return np.stack([code // n, code % n]).astype(np.int64)


def load_planetoid(root: Path, name: str, split: str = "public", seed: int = 0) -> GraphDataset:
    """Load ``ind.<name>.*`` from ``root`` with the public split, or the seeded random 60/20/20
    split of its labelled nodes (module docstring)."""
    if split not in SPLITS:
        raise ConfigError(f"{name}: split must be one of {', '.join(SPLITS)}; got {split!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigError(f"{name}: seed must be an integer, got {seed!r}")
    files = [f"ind.{name}.{s}" for s in SUFFIXES]
    require_files(name, root, files)
    p = {s: root / f"ind.{name}.{s}" for s in SUFFIXES}
    x, tx, allx = (_as_csr(safe_load_pickle(p[s]), p[s]) for s in ("x", "tx", "allx"))
    y, ty, ally = (_as_labels(safe_load_pickle(p[s]), p[s]) for s in ("y", "ty", "ally"))
    graph = safe_load_pickle(p["graph"])
    test_idx = load_numeric_table(p["test.index"], 1, "\t", ["node id"], integer_cols=(0,))
    test_idx = test_idx[:, 0].astype(np.int64)

    for a, b, what in ((x, tx, "tx"), (x, allx, "allx")):
        if a.shape[1] != b.shape[1]:
            raise fail(f"{p[what]}: {b.shape[1]} feature columns, but x has {a.shape[1]}")
    for a, b, what in ((y, ty, "ty"), (y, ally, "ally")):
        if a.shape[1] != b.shape[1]:
            raise fail(f"{p[what]}: {b.shape[1]} label columns, but y has {a.shape[1]}")
    for feats, labels, what in ((x, y, "y"), (tx, ty, "ty"), (allx, ally, "ally")):
        if feats.shape[0] != labels.shape[0]:
            raise fail(f"{p[what]}: {labels.shape[0]} rows, but features have {feats.shape[0]}")
    if len(test_idx) != tx.shape[0]:
        raise fail(f"{p['test.index']}: {len(test_idx)} ids, but tx has {tx.shape[0]} rows")
    if len(np.unique(test_idx)) != len(test_idx):
        raise fail(f"{p['test.index']}: duplicate node ids")

    test_sorted = np.sort(test_idx)
    lo, hi = int(test_sorted[0]), int(test_sorted[-1])
    if lo != allx.shape[0]:
        raise fail(
            f"{p['test.index']}: smallest test id {lo}, expected {allx.shape[0]} (= rows of allx)"
        )
    span = hi - lo + 1
    padded = span - len(test_idx)  # CiteSeer: isolated test nodes are missing from tx/ty
    tx = _scatter_rows(tx, test_idx, lo, span)
    ty = _scatter_dense(ty, test_idx, lo, span)
    features = sp.vstack([allx, tx]).tocsr()
    labels_1h = np.vstack([ally, ty])
    n = features.shape[0]
    edge_index = _edges(graph, n, p["graph"])

    num_train = y.shape[0]
    if num_train + NUM_VAL > allx.shape[0]:
        raise fail(f"{p['allx']}: {allx.shape[0]} rows, too few for {num_train} train + 500 val")
    train_mask = np.zeros(n, bool)
    val_mask = np.zeros(n, bool)
    test_mask = np.zeros(n, bool)
    train_mask[:num_train] = True
    val_mask[num_train : num_train + NUM_VAL] = True
    test_mask[test_sorted] = True
    labelled = labels_1h.sum(axis=1) > 0
    unlabeled = int((~labelled).sum())
    split_note = f"public: {num_train} train / {NUM_VAL} val / {len(test_idx)} test"
    if split == "random":
        train_mask, val_mask, test_mask = random_node_split(np.flatnonzero(labelled), n, int(seed))
        split_note = (f"random 60/20/20 of the labelled nodes (seed {int(seed)}): "
                      f"{train_mask.sum()} train / {val_mask.sum()} val / {test_mask.sum()} test")
    return GraphDataset(
        name=name,
        x=features.toarray().astype(np.float32),
        y=labels_1h.argmax(axis=1).astype(np.int64),
        edge_index=edge_index,
        train_mask=train_mask,
        val_mask=val_mask,
        test_mask=test_mask,
        num_classes=int(labels_1h.shape[1]),
        meta={
            "source": "Planetoid ind.* pickles",
            "split": split_note,
            "files": [str(p[s]) for s in SUFFIXES],
            "padded_test_nodes": padded,
            "unlabeled_nodes": unlabeled,
        },
    )


def _scatter_rows(tx: sp.csr_matrix, test_idx: np.ndarray, lo: int, span: int) -> sp.csr_matrix:
    """Row ``k`` of ``tx`` belongs to node ``test_idx[k]``: place it at ``test_idx[k] - lo``."""
    perm = sp.csr_matrix(
        (np.ones(len(test_idx), np.float32), (test_idx - lo, np.arange(len(test_idx)))),
        shape=(span, len(test_idx)),
    )
    return (perm @ tx).tocsr()


def _scatter_dense(ty: np.ndarray, test_idx: np.ndarray, lo: int, span: int) -> np.ndarray:
    out = np.zeros((span, ty.shape[1]), dtype=ty.dtype)
    out[test_idx - lo] = ty
    return out
