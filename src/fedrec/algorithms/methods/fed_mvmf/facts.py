"""FED-MVMF's public facts (:attr:`~fedrec.algorithms.base.FederatedJob.public_facts`): what a
deployment's server, built from public metadata only, needs from the job a client's node built
on its data, so that it starts as the simulator's server does.

* ``item_features``: the public catalogue's item features ``Z`` (title trigrams and genre bits,
  :func:`fedrec.data.content.item_content_features`, a function of the catalogue alone), which
  the server holds and trains ``B`` on. JSON as the non-zero entries of its rows (CSR): on
  ML-100K 25,788 of 1682 x 3,188 entries, about 280 kB, where the dense matrix would be
  megabytes of zeros. float32 values pass through JSON's float64 exactly, so the server's ``Z``
  is the clients' bit for bit.
* ``user_feature_dim``: the width of ``Y`` (every user view, concatenated), which sizes ``A``;
  a width, not any user's row: each ``Y`` row stays in its client's party.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fedrec.errors import ConfigError

ITEM_FEATURES = "item_features"
USER_FEATURE_DIM = "user_feature_dim"


def job_facts(item_features: np.ndarray, user_feature_dim: int) -> dict[str, Any]:
    """The facts a job built on data states (module docstring), JSON-serialisable."""
    z = sp.csr_matrix(np.asarray(item_features, dtype=np.float32))
    return {ITEM_FEATURES: {"shape": [int(n) for n in z.shape], "indptr": z.indptr.tolist(),
                            "indices": z.indices.tolist(), "data": z.data.tolist()},
            USER_FEATURE_DIM: int(user_feature_dim)}


def server_inputs(facts: dict[str, Any], num_items: int) -> tuple[np.ndarray, int]:
    """``(Z, width of Y)`` from the facts the nodes reported. On the probe (``{}``: it is asked
    only which roles the job declares) the placeholders ``Z`` = zeros of width 1 and width 1."""
    if not facts:
        return np.zeros((num_items, 1), dtype=np.float32), 1
    enc = facts[ITEM_FEATURES]
    shape = tuple(int(n) for n in enc["shape"])
    if shape[0] != num_items:
        raise ConfigError(f"fed-mvmf: the nodes' item features have {shape[0]} rows for a "
                          f"catalogue of {num_items} items")
    z = sp.csr_matrix((np.asarray(enc["data"], dtype=np.float32),
                       np.asarray(enc["indices"], dtype=np.int64),
                       np.asarray(enc["indptr"], dtype=np.int64)), shape=shape)
    return z.toarray(), int(facts[USER_FEATURE_DIM])
