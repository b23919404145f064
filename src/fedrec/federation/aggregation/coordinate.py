"""Coordinate-wise robust rules: the median and the trimmed mean (Yin et al., ICML 2018), over a
whole cohort or, for sparse item-row updates, per item over only its contributors.

Every rule returns an estimate of the SUM of the benign updates (FCF's server steps on the
summed item gradient): the robust location times the number of values it was taken over.

* Over the cohort (:func:`coordinate_median`, :func:`trimmed_mean`), dense ``[n, D]`` updates or
  sparse :class:`~.updates.RowUpdates`: coordinate ``j`` of ``n`` clients' updates. For sparse
  updates a client that did not send row ``r`` counts as a zero in each of ``r``'s coordinates,
  exactly as if every update were densified, but without densifying: the ``n - m_r`` implicit
  zeros are placed between the negative and the non-negative values of the ``m_r`` sent ones.
  With FCF's uploads (each item rated by a few percent of the clients) this moves almost no
  item: the median of mostly zeros is zero. That is what these rules are, and why
  :func:`per_item` exists.
* Per item (:func:`per_item`): row ``r``'s rule over only the ``m_r`` clients that sent it.

Both read their order statistics from one sort of each column within each row's group
(:func:`~.updates.by_row`), never a loop over rows.
"""

from __future__ import annotations

import torch

from fedrec.errors import ConfigError
from fedrec.federation.aggregation.updates import Dense, RowGroups, RowUpdates, by_row, stacked
from fedrec.privacy.clipping import clip_l2_rows

__all__ = ["RULES", "check_beta", "coordinate_median", "per_item", "row_norm_bound",
           "trimmed_mean"]

RULES = ("median", "trimmed_mean")
"""The coordinate-wise rules :func:`per_item` takes by name."""


def check_beta(beta: float) -> float:
    """``beta`` as a float; a one-line :class:`ConfigError` outside ``[0, 0.5)``."""
    beta = float(beta)
    if not 0.0 <= beta < 0.5:
        raise ConfigError(f"trimmed mean: beta must lie in [0, 0.5), got {beta}")
    return beta


def coordinate_median(updates: Dense | RowUpdates) -> torch.Tensor:
    """``n · median_i u_i[j]`` for every coordinate ``j`` (the mean of the two middle values when
    ``n`` is even), in the updates' dtype: ``[D]`` for dense ``[n, D]`` updates, the
    ``[num_rows, *shape]`` table for sparse ones (absent rows count as zeros).

    Breakdown point 1/2: with ``f < n/2`` arbitrary clients, each coordinate of the median lies
    between the smallest and the largest benign value of that coordinate (Yin et al., 2018)."""
    if isinstance(updates, RowUpdates):
        return _sparse(updates, "median", 0.0)
    ordered = torch.sort(stacked(updates), dim=0).values
    n = len(ordered)
    return (ordered[(n - 1) // 2] * 0.5 + ordered[n // 2] * 0.5) * n


def trimmed_mean(updates: Dense | RowUpdates, beta: float) -> torch.Tensor:
    """``n · mean`` of coordinate ``j``'s values after dropping the ``k = floor(beta · n)``
    largest and the ``k`` smallest, ``beta`` in ``[0, 0.5)`` (``beta = 0``: the plain sum);
    shapes as :func:`coordinate_median`.

    Breakdown: tolerates ``f <= k`` arbitrary clients: every value kept lies within the benign
    values' range, so does their mean (Yin et al., 2018)."""
    beta = check_beta(beta)
    if isinstance(updates, RowUpdates):
        return _sparse(updates, "trimmed_mean", beta)
    ordered = torch.sort(stacked(updates), dim=0).values
    n = len(ordered)
    k = int(beta * n)
    return ordered[k:n - k].double().mean(0).to(ordered.dtype) * n


def per_item(updates: RowUpdates, rule: str, beta: float = 0.0, *,
             bound_rows: bool = False) -> torch.Tensor:
    """Per-item robust aggregation of sparse item-row updates: row ``r`` of the result is
    ``m_r · rule({u_i[r] : client i sent row r})`` coordinate-wise, ``m_r`` the number of its
    contributors (``rule``: ``"median"``, or ``"trimmed_mean"`` dropping ``floor(beta · m_r)``
    each side); rows nobody sent stay zero. ``[num_rows, *shape]``.

    Breakdown, row by row: a row resists arbitrary values from fewer than half (median) or at
    most ``floor(beta · m_r)`` (trimmed mean) of ITS contributors, not of the cohort. Known
    weakness: a cold item sent by few benign clients is decided by whoever else sends it, the
    attackers when they target it (ten fake users promoting an item two benign users rated hold
    its median), and the trimmed mean of fewer than ``1/beta`` contributors trims nothing.

    ``bound_rows``: first scale each contributor's row to L2 norm at most ``nu``, the median of
    the norms of all the cohort's sent rows (:func:`row_norm_bound`); then no contributor moves a
    row by more than ``nu`` per coordinate-wise rule, so ``m_r`` attackers move a row they hold
    by at most ``sqrt(D) · m_r · nu`` (the median and the trimmed mean of values in
    ``[-nu, nu]`` stay there), as far as a typical benign row of that many contributors, not
    arbitrarily far. Chosen over the median norm of the row's own contributors, which the
    attackers set exactly when they hold the row, the case the bound is for; ``nu`` is the
    cohort's, which an attacker shifts only by sending more than half of all the cohort's rows.
    Chosen over a minimum contributor count: the attackers choose how many they are, so any
    count below which a row is frozen is one more fake user away."""
    if rule not in RULES:
        raise ConfigError(f"per-item rule must be one of {', '.join(RULES)}, got {rule!r}")
    values = updates.values
    if bound_rows and len(values):
        values = clip_l2_rows(values, row_norm_bound(updates))
    groups = by_row(updates.row, values)
    stat = _order_stats(groups, groups.count, rule, check_beta(beta))
    return _spread(updates, groups, stat * groups.count[:, None])


def row_norm_bound(updates: RowUpdates) -> float:
    """``nu``: the median L2 norm of the cohort's sent rows (of all clients' entries), the
    per-row bound of :func:`per_item` with ``bound_rows``; at least the smallest positive float
    (a bound of zero would be refused by the clipping)."""
    norms = torch.linalg.vector_norm(updates.values.double(), dim=1)
    return max(float(norms.median()), torch.finfo(torch.float64).tiny)


def _sparse(updates: RowUpdates, rule: str, beta: float) -> torch.Tensor:
    """The cohort-wide ``rule`` of sparse updates: each row's ``m_r`` values and ``n - m_r``
    implicit zeros, times ``n``."""
    if updates.n < 1:
        raise ConfigError("a robust rule needs updates of n >= 1 clients, got none")
    groups = by_row(updates.row, updates.values)
    stat = _order_stats(groups, torch.full_like(groups.count, updates.n), rule, beta)
    return _spread(updates, groups, stat * updates.n)


def _spread(updates: RowUpdates, groups: RowGroups, stat: torch.Tensor) -> torch.Tensor:
    """Each group's ``[G, D]`` result in its row of a ``[num_rows, *shape]`` zero table."""
    out = updates.values.new_zeros(updates.num_rows, updates.width)
    out[groups.rows] = stat.to(out.dtype)
    return out.reshape(updates.num_rows, *updates.shape)


def _order_stats(groups: RowGroups, total: torch.Tensor, rule: str, beta: float) -> torch.Tensor:
    """Per group and column, ``rule`` over ``total[g]`` values: the group's ``count[g]`` sorted
    values and ``total[g] - count[g]`` zeros, in float64 (``[G, D]``).

    In the full sorted order of group ``g``'s column ``j`` the zeros follow its ``neg[g, j]``
    negative values: a sent value of rank ``q`` stands at ``q`` if negative, else at
    ``q + zeros``. The median reads the values at ``(t-1)//2`` and ``t//2``; the trimmed mean
    adds the sent values whose place lies in ``[k, t-k)`` (a masked sum, no running totals that a
    huge value would swamp) and divides by ``t - 2k``."""
    ordered = groups.sorted.double()
    zeros = (total - groups.count)[:, None]
    neg = total.new_zeros(len(total), ordered.shape[1])
    neg.index_add_(0, groups.group, (ordered < 0).long())
    if rule == "median":
        lo = _value_at(groups, ordered, neg, zeros, (total - 1) // 2)
        hi = _value_at(groups, ordered, neg, zeros, total // 2)
        return lo * 0.5 + hi * 0.5
    k = torch.floor(beta * total.double()).long()[:, None]
    rank = groups.rank[:, None]
    place = rank + torch.where(rank >= neg[groups.group], zeros[groups.group], 0)
    keep = (place >= k[groups.group]) & (place < (total[:, None] - k)[groups.group])
    kept = ordered.new_zeros(neg.shape)
    kept.index_add_(0, groups.group, torch.where(keep, ordered, 0.0))
    return kept / (total[:, None] - 2 * k)


def _value_at(groups: RowGroups, ordered: torch.Tensor, neg: torch.Tensor, zeros: torch.Tensor,
              place: torch.Tensor) -> torch.Tensor:
    """The value at ``place[g]`` of each group's full sorted column (sent values and zeros)."""
    place = place[:, None]
    rank = torch.where(place < neg, place, place - zeros)
    rank = rank.clamp(min=0).minimum(groups.count[:, None] - 1)
    value = ordered.gather(0, groups.start[:, None] + rank)
    return torch.where((place >= neg) & (place < neg + zeros), 0.0, value)
