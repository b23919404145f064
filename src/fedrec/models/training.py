"""One minibatch epoch: the training loop of PMF (:mod:`fedrec.algorithms.methods.pmf`), of the
centralized GNN (:mod:`fedrec.algorithms.methods.gnn_central`), of the centralized ranking baselines
(:mod:`fedrec.algorithms.methods.central_ranking`) and of PTF-FedRec's server
(:mod:`fedrec.algorithms.methods.ptf_fedrec`).

The caller draws the epoch's order and owns every random draw the loss makes (NGCF's dropout);
the loop itself draws nothing, so the draws happen in the order they did in each caller's own
loop.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def minibatch_epoch(
    order: torch.Tensor,
    batch_size: int,
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    opt: torch.optim.Optimizer,
    after_step: Callable[[torch.Tensor], None] | None = None,
) -> list[tuple[float, int]]:
    """One pass over the rows ``order`` names, in that order, ``batch_size`` at a time (the last
    batch may be smaller). Per batch ``idx``: ``loss = loss_of(idx)``, zero the gradients,
    ``loss.backward()``, one step of ``opt``, then ``after_step(idx)`` when given.

    Returns each step's ``(loss, batch size)`` in order; the caller adds them up as its loss
    defines (a batch mean times the batch size, or a batch sum as it is)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    steps: list[tuple[float, int]] = []
    for idx in torch.split(order, batch_size):
        loss = loss_of(idx)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if after_step is not None:
            after_step(idx)
        steps.append((float(loss.detach()), len(idx)))
    return steps
