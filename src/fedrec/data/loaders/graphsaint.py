"""GraphSAINT-format graphs (PPI, Flickr, Reddit, ...), one directory per dataset:

* ``adj_full.npz`` -- the full adjacency as saved by :func:`scipy.sparse.save_npz`;
* ``adj_train.npz`` (optional) -- the adjacency among training nodes GraphSAINT trains on; not
  used here (:class:`GraphDataset` holds the full graph and the masks), but when present it must
  be an ``N x N`` sparse matrix like ``adj_full.npz`` (a file of another graph is a DataError);
* ``feats.npy`` -- ``(N, F)`` node features;
* ``class_map.json`` -- ``{"node id": class}`` or ``{"node id": [0/1, ...]}`` (multi-label);
* ``role.json`` -- ``{"tr": [...], "va": [...], "te": [...]}`` node ids of the three splits.

Nothing is unpickled (``allow_pickle=False``). Edges are symmetrised and de-duplicated, self loops
dropped. With ``standardize=True`` features are z-scored with training-node statistics (as the
GraphSAINT code does).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fedrec.data.loaders._common import fail, read_text, require_files
from fedrec.data.loaders.planetoid import undirected_edge_index
from fedrec.data.types import GraphDataset

FILES = ("adj_full.npz", "feats.npy", "class_map.json", "role.json")


def _load_json(path: Path) -> object:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise fail(f"{path} line {exc.lineno}: invalid JSON ({exc.msg})") from exc


def read_adjacency(path: Path) -> sp.csr_matrix:
    """``adj_full.npz`` as a csr matrix; truncated or foreign files -> DataError."""
    try:
        adj = sp.load_npz(path)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise fail(
            f"{path}: not a readable scipy sparse .npz file ({type(exc).__name__}: {exc})"
        ) from exc
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise fail(f"{path}: adjacency must be square, got shape {adj.shape}")
    return sp.csr_matrix(adj)


def read_features(path: Path) -> np.ndarray:
    """``feats.npy`` as float32 ``(N, F)``."""
    try:
        feats = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise fail(f"{path}: not a readable .npy array ({type(exc).__name__}: {exc})") from exc
    if feats.ndim != 2 or not np.issubdtype(feats.dtype, np.number):
        raise fail(f"{path}: expected a 2-D numeric array, got {feats.dtype} {feats.shape}")
    if not np.isfinite(feats).all():
        raise fail(f"{path}: features contain NaN or infinite values")
    return feats.astype(np.float32)


def read_class_map(path: Path, n: int) -> tuple[np.ndarray, bool]:
    """Labels ``(N,)`` int64 or ``(N, C)`` float32 0/1 (multi-label) from ``class_map.json``."""
    data = _load_json(path)
    if not isinstance(data, dict) or len(data) != n:
        size = len(data) if isinstance(data, dict) else type(data).__name__
        raise fail(f"{path}: expected an object with one entry per node ({n}), got {size}")
    try:
        ids = np.fromiter((int(k) for k in data), dtype=np.int64, count=n)
    except ValueError as exc:
        raise fail(f"{path}: node ids must be integers ({exc})") from exc
    if ids.min() < 0 or ids.max() >= n or len(np.unique(ids)) != n:
        raise fail(f"{path}: node ids must be exactly 0..{n - 1}")
    values = list(data.values())
    multilabel = isinstance(values[0], list)
    try:
        if multilabel:
            arr = np.asarray(values, dtype=np.float32)
            if arr.ndim != 2 or not np.isin(arr, (0.0, 1.0)).all():
                raise ValueError("multi-label entries must be equal-length 0/1 lists")
        else:
            arr = np.asarray(values, dtype=np.float64)
            if arr.ndim != 1 or (arr != np.round(arr)).any() or (arr < 0).any():
                raise ValueError("class ids must be non-negative integers")
            arr = arr.astype(np.int64)
    except (ValueError, TypeError) as exc:
        raise fail(f"{path}: bad labels ({exc})") from exc
    out = np.empty_like(arr)
    out[ids] = arr
    return out, multilabel


def read_roles(path: Path, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train/val/test boolean masks from ``role.json``."""
    data = _load_json(path)
    if not isinstance(data, dict) or not {"tr", "va", "te"} <= set(data):
        raise fail(f"{path}: expected an object with keys 'tr', 'va', 'te'")
    masks = []
    for key in ("tr", "va", "te"):
        try:
            idx = np.asarray(data[key], dtype=np.int64).reshape(-1)
        except (ValueError, TypeError) as exc:
            raise fail(f"{path}: {key!r} must be a list of node ids ({exc})") from exc
        if len(idx) and (idx.min() < 0 or idx.max() >= n):
            raise fail(f"{path}: {key!r} holds node ids outside 0..{n - 1}")
        mask = np.zeros(n, dtype=bool)
        mask[idx] = True
        masks.append(mask)
    if (masks[0] & masks[1]).any() or (masks[0] & masks[2]).any() or (masks[1] & masks[2]).any():
        raise fail(f"{path}: 'tr', 'va' and 'te' overlap")
    return masks[0], masks[1], masks[2]


def load_graphsaint(root: Path, name: str, standardize: bool = False) -> GraphDataset:
    """Load a GraphSAINT-format directory ``root``."""
    require_files(name, root, FILES)
    adj = read_adjacency(root / "adj_full.npz")
    n = adj.shape[0]
    feats = read_features(root / "feats.npy")
    if feats.shape[0] != n:
        raise fail(f"{root / 'feats.npy'}: {feats.shape[0]} rows, but adj_full.npz has {n} nodes")
    if (root / "adj_train.npz").is_file():
        train_shape = read_adjacency(root / "adj_train.npz").shape
        if train_shape != adj.shape:
            raise fail(f"{root / 'adj_train.npz'}: shape {train_shape}, but adj_full.npz has "
                       f"{n} nodes")
    y, multilabel = read_class_map(root / "class_map.json", n)
    train_mask, val_mask, test_mask = read_roles(root / "role.json", n)
    if standardize and train_mask.any():
        mean = feats[train_mask].mean(axis=0)
        std = feats[train_mask].std(axis=0)
        feats = ((feats - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)
    coo = adj.tocoo()
    num_classes = int(y.shape[1]) if multilabel else int(y.max(initial=-1)) + 1
    return GraphDataset(
        name=name,
        x=feats,
        y=y,
        edge_index=undirected_edge_index(coo.row.astype(np.int64), coo.col.astype(np.int64), n),
        train_mask=train_mask,
        val_mask=val_mask,
        test_mask=test_mask,
        num_classes=num_classes,
        multilabel=multilabel,
        meta={
            "source": "GraphSAINT format",
            "split": "role.json tr/va/te",
            "files": [str(root / f) for f in FILES],
            "standardized": standardize,
        },
    )
