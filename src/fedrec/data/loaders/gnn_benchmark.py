"""gnn-benchmark ``.npz`` graphs (Shchur et al.): CSR arrays ``adj_*`` and ``attr_*`` plus
``labels``. Read with ``allow_pickle=False`` (the name arrays are not needed and never touched).

The whole graph is kept (no largest-connected-component step). There is no official split, so a
seeded one is drawn the way Shchur et al. do: 20 nodes per class train, 30 per class validation,
all remaining nodes test.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fedrec.data.loaders._common import fail, require_files
from fedrec.data.loaders.planetoid import undirected_edge_index
from fedrec.data.types import GraphDataset

TRAIN_PER_CLASS = 20
VAL_PER_CLASS = 30


def _csr(z: np.lib.npyio.NpzFile, prefix: str, path: Path) -> sp.csr_matrix:
    try:
        shape = tuple(int(s) for s in z[f"{prefix}_shape"])
        m = sp.csr_matrix(
            (z[f"{prefix}_data"], z[f"{prefix}_indices"], z[f"{prefix}_indptr"]), shape=shape
        )
        m.check_format(full_check=True)
    except (KeyError, ValueError, TypeError) as exc:
        raise fail(f"{path}: bad or missing '{prefix}_*' arrays ({exc})") from exc
    return m


def load_gnn_benchmark(root: Path, name: str, file: str, seed: int = 0) -> GraphDataset:
    """Load ``root/file`` (e.g. ``cora.npz``) with a seeded 20/30-per-class split."""
    require_files(name, root, [file])
    path = root / file
    try:
        z = np.load(path, allow_pickle=False)
        adj = _csr(z, "adj", path)
        attr = _csr(z, "attr", path)
        labels = np.asarray(z["labels"]).astype(np.int64)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise fail(
            f"{path}: not a readable gnn-benchmark .npz ({type(exc).__name__}: {exc})"
        ) from exc
    n = adj.shape[0]
    if adj.shape != (n, n) or attr.shape[0] != n or labels.shape != (n,):
        raise fail(
            f"{path}: inconsistent shapes adj {adj.shape}, attr {attr.shape}, labels {labels.shape}"
        )
    if labels.min(initial=0) < 0:
        raise fail(f"{path}: negative class labels")
    rng = np.random.default_rng(seed)
    train_mask = np.zeros(n, bool)
    val_mask = np.zeros(n, bool)
    for c in np.unique(labels):
        nodes = rng.permutation(np.flatnonzero(labels == c))
        train_mask[nodes[:TRAIN_PER_CLASS]] = True
        val_mask[nodes[TRAIN_PER_CLASS : TRAIN_PER_CLASS + VAL_PER_CLASS]] = True
    coo = adj.tocoo()
    return GraphDataset(
        name=name,
        x=attr.toarray().astype(np.float32),
        y=labels,
        edge_index=undirected_edge_index(coo.row.astype(np.int64), coo.col.astype(np.int64), n),
        train_mask=train_mask,
        val_mask=val_mask,
        test_mask=~(train_mask | val_mask),
        num_classes=int(labels.max()) + 1,
        meta={
            "source": f"gnn-benchmark {file}",
            "split": f"random {TRAIN_PER_CLASS}/{VAL_PER_CLASS} per class train/val, rest test, "
            f"seed {seed}",
            "files": [str(path)],
        },
    )
