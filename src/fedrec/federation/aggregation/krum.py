"""Multi-Krum (Blanchard et al., NeurIPS 2017; El Mhamdi et al., ICML 2018) over dense updates or
sparse row updates, the latter without densifying the cohort.

Client ``i``'s score is ``s_i = sum of ||u_i - u_j||² over its n - f - 2 nearest others``; the
``m`` lowest-scored clients are kept (ties: the lower index) and the estimate of the benign SUM is
``(n / m) · sum of the kept updates``.

Distances come from the Gram matrix ``G_ij = <u_i, u_j>``: ``||u_i - u_j||² = G_ii + G_jj -
2 G_ij`` (float64, clamped at zero). For sparse updates ``G = sum over rows r of V_r V_rᵀ``,
``V_r`` the ``m_r`` contributors' values of row ``r``: only pairs of clients that share a row
are multiplied, ``O(D · sum_r m_r²)`` work. The rows are batched by contributor count (padded
to the next power of two, so at most 4x the pairs: :func:`~.updates.padded_groups`) into one
batched matrix product per bucket and chunk, and scattered into ``G``; rows sent by at least a
quarter of the cohort (popular items) are multiplied as dense blocks instead (at most 16x the
pairs, in a matrix product far faster than the scatter). No loop over rows or clients.
"""

from __future__ import annotations

import torch

from fedrec.errors import ConfigError
from fedrec.federation.aggregation.updates import Dense, RowUpdates, padded_groups, stacked

__all__ = ["check_krum", "multi_krum", "multi_krum_choice"]


def check_krum(n: int, f: int, m: int | None) -> int:
    """``m`` (``n - f`` when None) for ``n`` clients and ``f`` tolerated attackers; a one-line
    :class:`ConfigError` unless ``f >= 0``, ``n > 2f + 2`` and ``1 <= m <= n - f``."""
    if f < 0:
        raise ConfigError(f"multi-Krum: f must be >= 0, got {f}")
    if n <= 2 * f + 2:
        raise ConfigError(f"multi-Krum with f={f} needs more than 2f+2={2 * f + 2} clients, "
                          f"got {n}")
    m = n - f if m is None else m
    if not 1 <= m <= n - f:
        raise ConfigError(f"multi-Krum: m must lie in [1, n-f] = [1, {n - f}], got {m}")
    return m


def multi_krum_choice(updates: Dense | RowUpdates, f: int,
                      m: int | None = None) -> torch.Tensor:
    """The indices of the ``m`` clients multi-Krum keeps (lowest score first); ``updates``:
    dense ``[n, D]`` or :class:`~.updates.RowUpdates`."""
    if isinstance(updates, RowUpdates):
        n, gram = updates.n, _sparse_gram(updates)
    else:
        x = stacked(updates).double()
        n, gram = len(x), x @ x.T
    m = check_krum(n, f, m)
    sq = gram.diagonal()
    dist = (sq[:, None] + sq[None, :] - 2.0 * gram).clamp(min=0.0)
    dist.fill_diagonal_(float("inf"))
    scores = dist.topk(n - f - 2, dim=1, largest=False).values.sum(1)
    return torch.argsort(scores, stable=True)[:m]


def multi_krum(updates: Dense | RowUpdates, f: int, m: int | None = None) -> torch.Tensor:
    """``(n / m) ·`` the sum of the ``m`` updates multi-Krum keeps (``m = n - f`` by default), in
    the updates' dtype: ``[D]`` for dense ``[n, D]`` updates, the ``[num_rows, *shape]`` table
    for sparse ones. A one-line :class:`ConfigError` unless ``n > 2f + 2``.

    Guarantee (Blanchard et al.): with at most ``f`` arbitrary clients and ``n > 2f + 2``, a
    kept attacker's score is at most a benign client's, so a kept update lies within the
    benign updates' spread (its distance to the benign ones is bounded by the benign-to-benign
    distances), however large the attackers make theirs; an attacker whose update looks like a
    benign one is kept. ``m = 1`` is Krum."""
    chosen = multi_krum_choice(updates, f, m)
    if isinstance(updates, RowUpdates):
        keep = torch.isin(updates.client, chosen)
        total = updates.table(updates.values.double(), keep)
        n, dtype = updates.n, updates.values.dtype
    else:
        x = stacked(updates)
        total = x[chosen].double().sum(0)
        n, dtype = len(x), x.dtype
    return (total * (n / len(chosen))).to(dtype)


def _sparse_gram(updates: RowUpdates, chunk: int = 1 << 22) -> torch.Tensor:
    """``G = sum_r V_r V_rᵀ`` (module docstring), ``[n, n]`` float64. Rows that at least a
    quarter of the clients sent are dense enough for one matrix product of the ``[n, rows · D]``
    block, ``chunk`` elements at a time; the others go through :func:`~.updates.padded_groups`."""
    n = updates.n
    values = updates.values.double()
    gram = values.new_zeros(n * n)
    order = torch.argsort(updates.row, stable=True)
    row, client = updates.row[order], updates.client[order]
    values = values[order]
    _, local, count = torch.unique_consecutive(row, return_inverse=True, return_counts=True)
    heavy = count[local] * 4 >= n
    light = ~heavy
    _, count = torch.unique_consecutive(row[light], return_counts=True)
    who_light, values_light = client[light], values[light]
    for index, valid in padded_groups(count, updates.width, chunk):
        block = values_light[index] * valid[:, :, None]  # padding: zero vectors, adding zeros
        who = who_light[index]
        products = torch.bmm(block, block.transpose(1, 2))
        gram.index_add_(0, (who[:, :, None] * n + who[:, None, :]).flatten(), products.flatten())
    gram = gram.reshape(n, n)
    local = torch.unique_consecutive(row[heavy], return_inverse=True)[1]
    client, values = client[heavy], values[heavy]
    per_chunk = max(1, chunk // (n * updates.width))
    for first in range(0, int(local.max()) + 1 if len(local) else 0, per_chunk):
        sel = (local >= first) & (local < first + per_chunk)
        block = values.new_zeros(n, per_chunk, updates.width)
        block[client[sel], local[sel] - first] = values[sel]
        flat = block.reshape(n, -1)
        gram.addmm_(flat, flat.T)
    return gram
