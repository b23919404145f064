"""FedGRec's server under a defense against malicious clients (``defense`` other than ``none``,
:mod:`fedrec.federation.aggregation`): only with plain uploads (``secure_aggregation: false``,
no ``dp``), where the server sees each client's upload.

Each upload ``[loss | delta e_t^0 (N x d) | rows trained (N) | latent deltas]`` is decoded on
its own (the fixed-point decoding of the plain sum, :class:`~fedrec.federation.secure_sum.
PlainSum`, of that one upload). Its item-row block becomes a sparse row update: the rows the
client marks as trained or changes (a change on a row not marked trained is kept, not dropped),
and :func:`~fedrec.federation.aggregation.robust_sum` estimates the benign sum of the cohort's
row updates; the server then divides it by the rows-trained counts as before (FedAvg of the
rows: with ``item_median``, ``m_r x median / m_r`` is the median of the row's contributors).
The loss, the rows-trained counts and the latent contributions are summed as sent: the defense
covers the item embeddings ``e_t^0``, what the model-poisoning attacks
(:mod:`fedrec.algorithms.methods.fedgrec.poisoning`) write. The counts are capped by the
encoding (a client adds at most 1 to a row's count), the latent changes are not defended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from fedrec.core.codec import Payload
from fedrec.federation.aggregation import robust_sum
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import Runtime
from fedrec.federation.secure_sum import PlainSum
from fedrec.privacy.secagg import SecAggConfig


def defended_sum(rt: Runtime, targets: Sequence[PartyId],
                 send: Callable[[list[PartyId]], Mapping[PartyId, Payload]],
                 config: SecAggConfig, *, step: str, part: int, num_items: int, dim: int,
                 defense: str, params: Mapping[str, Any]) -> tuple[np.ndarray, int]:
    """The plain sum of the uploads ``send(targets)`` returns (as
    :func:`~fedrec.federation.secure_sum.sum_streamed`, ``part`` clients at a time) with the
    item-row block replaced by ``defense``'s estimate of its benign sum (module docstring), and
    how many uploads are in it. A mistyped, mis-sized or out-of-range upload is a
    :class:`~fedrec.errors.ProtocolError`, as in the plain sum."""
    n, d = num_items, dim
    items = slice(1, 1 + n * d)
    trained = slice(1 + n * d, 1 + n * (d + 1))
    total = np.zeros(config.dim)
    ids: list[torch.Tensor] = []
    rows: list[torch.Tensor] = []
    size = part if 0 < part < len(targets) else max(len(targets), 1)
    for start in range(0, len(targets), size):
        replies = send(list(targets[start: start + size]))
        for party, reply in replies.items():
            one = PlainSum(config)
            one.add(party, reply)
            x, _ = one.result()
            delta = x[items].reshape(n, d)
            sent = np.flatnonzero((x[trained] != 0) | (delta != 0).any(1))
            ids.append(torch.from_numpy(sent))
            rows.append(torch.from_numpy(delta[sent].copy()))
            x[items] = 0.0
            total += x
    if not rows:
        raise rt.no_update(step)
    total[items] = robust_sum(defense, ids, rows, n, params).numpy().ravel()
    return total, len(rows)
