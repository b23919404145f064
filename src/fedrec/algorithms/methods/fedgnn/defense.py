"""FedGNN's server against malicious clients (:mod:`fedrec.federation.aggregation`): the
cohort's clear uploads aggregated by the run's defense, one decision per client over its whole
upload (item rows and GNN-weight gradient together)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from fedrec.algorithms.methods.fedgnn.config import FedGNNConfig
from fedrec.core.codec import Payload
from fedrec.federation.aggregation import robust_sum


def defended_sums(cfg: FedGNNConfig, uploads: Sequence[Payload], model_size: int,
                  num_items: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(GNN-weight gradient sum, item-gradient sums [num_items, width])`` as ``cfg.defense``
    estimates the benign sums (:func:`~fedrec.federation.aggregation.robust_sum`).

    Each client's upload becomes one sparse update of a table of ``num_items + R`` rows of the
    item rows' width ``w``: its item rows (real and pseudo) at their ids, and its GNN-weight
    gradient (``model_size`` values, zero-padded to ``R = ceil(model_size / w)`` rows) in rows
    ``num_items ..``, which every client sends. So a whole-update rule (``norm_bound``,
    ``krum``) judges a client's item rows and model gradient together, a coordinate-wise rule
    (``median``, ``trimmed_mean``) covers the model gradient's coordinates as the items', and a
    per-item rule treats each model row as one more item all clients rated."""
    width = torch.as_tensor(uploads[0]["grad_items"]).shape[1] if uploads else 1
    extra = math.ceil(model_size / width)
    model_ids = torch.arange(num_items, num_items + extra)
    ids, rows = [], []
    for u in uploads:
        model = torch.as_tensor(u["grad_model"]).float().reshape(-1)
        ids.append(torch.cat([torch.as_tensor(u["items"]).long(), model_ids]))
        rows.append(torch.cat([torch.as_tensor(u["grad_items"]).float(),
                               F.pad(model, (0, extra * width - model_size)).view(extra, width)]))
    total = robust_sum(cfg.defense, ids, rows, num_items + extra, cfg.defense_params())
    return total[num_items:].reshape(-1)[:model_size].contiguous(), total[:num_items].contiguous()
