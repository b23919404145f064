"""L2 norm bounding of whole client updates (Sun et al., "Can you really backdoor federated
learning?", 2019), and the sum of bounded updates.

The one defense a server that sees only a sum can use (secure aggregation, the DP aggregate):
but only when the clients apply it, since such a server cannot check a bound inside the sum; a
client that does not bound its update is not caught (:mod:`.defense`).
"""

from __future__ import annotations

import torch

from fedrec.federation.aggregation.updates import Dense, RowUpdates, stacked
from fedrec.privacy.clipping import clip_l2, clip_l2_rows

__all__ = ["norm_bound", "norm_bounded_sum"]


def norm_bound(update: torch.Tensor, bound: float) -> torch.Tensor:
    """One client's whole update (every row it sends, as one flat vector) scaled by
    ``min(1, bound / ||update||_2)``: the result has ``||.||_2 <= bound`` exactly, and equals
    ``update`` when its norm is below ``bound`` by more than the float rounding margin of
    :func:`~fedrec.privacy.clipping.clip_l2`. A one-line :class:`~fedrec.errors.ConfigError`
    for a bound that is not a finite number > 0."""
    return clip_l2(update, bound)


def norm_bounded_sum(updates: Dense | RowUpdates, bound: float) -> torch.Tensor:
    """``sum_i norm_bound(u_i, bound)``: ``[D]`` for dense ``[n, D]`` updates, the
    ``[num_rows, *shape]`` table for sparse ones (each client's rows bounded together).

    Guarantee: not a breakdown point (one client is not ignored) but a bounded influence:
    ``f`` arbitrary clients move the sum by at most ``f · bound`` in L2, wherever they aim.
    The benign sum is changed too when benign updates exceed ``bound``."""
    if not isinstance(updates, RowUpdates):
        return clip_l2_rows(stacked(updates), bound).sum(0)
    values = updates.values.clone()
    for lo, hi in updates.client_slices():
        values[lo:hi] = norm_bound(values[lo:hi], bound)
    return updates.table(values)
