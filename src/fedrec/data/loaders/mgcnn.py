"""mgcnn ``.mat`` files (MATLAB v7.3 = HDF5): Douban, Flixster, YahooMusic, ML-100K ``split_1``.

Keys: ``M`` (ratings), ``Otraining``/``Otest`` (0/1 masks), optional side graphs ``W_users``
(user graph) and ``W_movies``/``W_tracks`` (item graph). Each may be a dense dataset or a MATLAB
sparse group (``data``/``ir``/``jc``, i.e. the CSC arrays of the MATLAB matrix).

Orientation: h5py sees a dense MATLAB matrix transposed (MATLAB is column-major), so dense arrays
are transposed after reading -- exactly as the mgcnn, GC-MC and IGMC loaders do -- which makes rows
users. Sparse groups already describe the MATLAB matrix and are not transposed. (For ML-100K this
gives 943 x 1682; for Flixster and Douban the side graphs then agree with the rating rows/columns:
graph neighbours have 2-8x the rating overlap of random pairs, and none in the other orientation.)

Train ratings are ``M`` where ``Otraining != 0``, test ratings ``M`` where ``Otest != 0``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fedrec.data.loaders._common import fail
from fedrec.data.types import Interactions, RatingDataset

USER_GRAPH_KEYS = ("W_users",)
ITEM_GRAPH_KEYS = ("W_movies", "W_tracks", "W_items")


def _open(path: Path):
    import h5py

    if not path.is_file():
        raise fail(f"{path}: file not found")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise fail(f"{path}: not a readable MATLAB v7.3 (HDF5) file ({exc})") from exc


def read_matrix(h5, key: str, path: Path) -> sp.csr_matrix:
    """Field ``key`` of an open mgcnn file as a csr matrix in MATLAB orientation (rows = users)."""
    import h5py

    if key not in h5:
        raise fail(f"{path}: missing field {key!r} (fields: {', '.join(sorted(h5.keys()))})")
    obj = h5[key]
    try:
        if isinstance(obj, h5py.Group):
            if not {"data", "ir", "jc"} <= set(obj.keys()):
                raise fail(f"{path}: field {key!r} is a group but not a MATLAB sparse matrix")
            data = np.asarray(obj["data"][()], dtype=np.float64)
            ir = np.asarray(obj["ir"][()], dtype=np.int64)
            jc = np.asarray(obj["jc"][()], dtype=np.int64)
            nrows = int(obj.attrs.get("MATLAB_sparse", ir.max(initial=-1) + 1))
            ncols = len(jc) - 1
            if (
                ncols < 0
                or len(data) != len(ir)
                or jc[-1] != len(ir)
                or np.any(np.diff(jc) < 0)
                or (len(ir) and (ir.min() < 0 or ir.max() >= nrows))
            ):
                raise fail(f"{path}: field {key!r} is a corrupt MATLAB sparse matrix")
            return sp.csc_matrix((data, ir, jc), shape=(nrows, ncols)).tocsr()
        arr = np.asarray(obj[()])
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise fail(f"{path}: cannot read field {key!r} (truncated or corrupt file: {exc})") from exc
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
        raise fail(f"{path}: field {key!r} is not a numeric matrix (shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise fail(f"{path}: field {key!r} contains NaN or infinite values")
    return sp.csr_matrix(arr.T)


def _pairs(m: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    coo = m.tocoo()
    order = np.lexsort((coo.col, coo.row))
    return (
        coo.row[order].astype(np.int64),
        coo.col[order].astype(np.int64),
        coo.data[order].astype(np.float32),
    )


def load_mgcnn(
    path: Path,
    name: str,
    rating_min: float,
    rating_max: float,
    rating_step: float | None = None,
) -> RatingDataset:
    """Load one mgcnn file; ratings outside ``[rating_min, rating_max]`` -> DataError."""
    with _open(path) as h5:
        m = read_matrix(h5, "M", path)
        masks = {k: read_matrix(h5, k, path) for k in ("Otraining", "Otest")}
        for k, o in masks.items():
            if o.shape != m.shape:
                raise fail(f"{path}: {k} has shape {o.shape} but M has shape {m.shape}")
        user_graph = _graph(h5, USER_GRAPH_KEYS, path, m.shape[0])
        item_graph = _graph(h5, ITEM_GRAPH_KEYS, path, m.shape[1])
    m.eliminate_zeros()
    _check_range(path, m, rating_min, rating_max, rating_step)
    tr_mask = (masks["Otraining"] != 0).astype(np.float64)
    te_mask = (masks["Otest"] != 0).astype(np.float64)
    overlap = tr_mask.multiply(te_mask).nnz
    if overlap:
        raise fail(f"{path}: Otraining and Otest overlap in {overlap} entries")
    train = m.multiply(tr_mask).tocsr()
    test = m.multiply(te_mask).tocsr()
    train.eliminate_zeros()
    test.eliminate_zeros()
    unrated = int((tr_mask.nnz - train.nnz) + (te_mask.nnz - test.nnz))
    num_users, num_items = m.shape
    return RatingDataset(
        name=name,
        num_users=int(num_users),
        num_items=int(num_items),
        train=Interactions(*_pairs(train)),
        test=Interactions(*_pairs(test)),
        user_graph=user_graph,
        item_graph=item_graph,
        rating_min=rating_min,
        rating_max=rating_max,
        meta={
            "source": f"mgcnn {path.name}",
            "files": [str(path)],
            "split": "mgcnn Otraining/Otest",
            "masked_unrated_entries": unrated,
        },
    )


def _graph(h5, keys: tuple[str, ...], path: Path, n: int) -> sp.csr_matrix | None:
    for key in keys:
        if key in h5:
            g = read_matrix(h5, key, path).astype(np.float32)
            if g.shape != (n, n):
                raise fail(f"{path}: side graph {key!r} has shape {g.shape}, expected {(n, n)}")
            g.eliminate_zeros()
            return g.tocsr()
    return None


def _check_range(path: Path, m: sp.csr_matrix, lo: float, hi: float, step: float | None) -> None:
    coo = m.tocoo()
    v = coo.data
    bad = (v < lo) | (v > hi)
    if step is not None:
        bad |= np.abs(v / step - np.round(v / step)) > 1e-9
    if bad.any():
        k = int(np.argmax(bad))
        grid = f" in steps of {step:g}" if step is not None else ""
        raise fail(
            f"{path}: rating M[user {coo.row[k]}, item {coo.col[k]}] = {v[k]:g} outside "
            f"{lo:g}..{hi:g}{grid}"
        )
