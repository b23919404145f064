"""The aggregation arithmetic of the algorithms: row sums by id, weighted means, FedAvg.

Each function does the float operations its callers did inline, in the same order, so that
moving them here changed no result by a bit:

* :func:`sum_rows`: ``rows[k]`` added into row ``ids[k]`` in the order of ``ids``
  (``index_add_``), into zeros or into a running total (FCF's and FedGNN's summed item
  gradients, the clients' error sums of an explicit evaluation);
* :func:`weighted_mean`: weights normalised by their float64 sum, then a float64 running sum
  (not a stacked tensor: a cohort's uploads of an item table would need gigabytes stacked);
* :func:`fedavg`: FedAvg (McMahan et al., AISTATS 2017), the uploads' parameters averaged with
  weights their training-row counts ``n``, returned in float32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from fedrec.errors import ProtocolError


def sum_rows(
    ids: torch.Tensor, rows: torch.Tensor, num_rows: int | None = None, *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``out[ids[k]] += rows[k]`` for every ``k`` in order, in place, and ``out``; without
    ``out``, into zeros of ``num_rows`` rows (``rows``' dtype and device). Repeated ids add up."""
    if len(ids) != len(rows):
        raise ValueError(f"sum_rows: {len(ids)} ids for {len(rows)} rows")
    if out is None:
        if num_rows is None:
            raise ValueError("sum_rows needs num_rows or out")
        out = torch.zeros((num_rows, *rows.shape[1:]), dtype=rows.dtype, device=rows.device)
    return out.index_add_(0, ids, rows)


def weighted_mean(values: Sequence[Any], weights: Sequence[float]) -> torch.Tensor:
    """``sum_k w_k values[k] / sum_k w_k`` in float64 (``values``: tensors or arrays of one
    shape, converted one at a time): the weights are divided by their sum first, then the
    scaled values added up in order."""
    if not len(values):
        raise ValueError("weighted_mean of no values")
    if len(values) != len(weights):
        raise ValueError(f"weighted_mean: {len(values)} values for {len(weights)} weights")
    w = torch.tensor([float(x) for x in weights], dtype=torch.float64)
    if w.sum() <= 0:
        raise ValueError("weighted_mean: the weights sum to zero or less")
    w = w / w.sum()
    acc = torch.zeros(torch.as_tensor(values[0]).shape, dtype=torch.float64)
    for weight, value in zip(w.tolist(), values, strict=True):
        acc.add_(torch.as_tensor(value).double(), alpha=weight)
    return acc


def fedavg(uploads: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, torch.Tensor]:
    """Each named parameter averaged over the uploads with weights their ``"n"`` (training
    rows), as float32 (:func:`weighted_mean`); :class:`~fedrec.errors.ProtocolError` when no
    upload has a training row."""
    counts = [float(u["n"]) for u in uploads]
    if not uploads or sum(counts) <= 0:
        raise ProtocolError("FedAvg needs at least one upload with training rows")
    return {k: weighted_mean([u[k] for u in uploads], counts).float() for k in names}
