"""A cohort's updates sparse by rows, as one coalesced set of entries, and their grouping by row.

Client ``i`` of a cohort of ``n`` uploads ``ids_i`` (LongTensor[k_i], rows of a table of
``num_rows`` rows) and ``rows_i`` (Tensor[k_i, *shape]): its update is the dense table
``U_i`` with ``U_i[ids_i[k]] += rows_i[k]`` and zeros elsewhere (FCF uploads the gradients of
the item rows a client rated). :class:`RowUpdates` holds the cohort as entries
``(client[e], row[e], values[e])``, one per (client, row) pair (repeated ids of one client are
added up), sorted by client then row, with each row flattened to ``D = prod(shape)`` columns:
memory ``O(sum_i k_i · D)``, never ``n · num_rows · D``.

:func:`by_row` sorts every column's values within each row's group of contributors, the one
sort the coordinate-wise and per-item rules (:mod:`.coordinate`) read their order statistics
from; :func:`padded_groups` batches the groups, for that sort and for multi-Krum's products.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from fedrec.errors import ConfigError, ProtocolError

__all__ = ["Dense", "RowGroups", "RowUpdates", "by_row", "padded_groups", "stacked"]

Dense = torch.Tensor | Sequence[torch.Tensor]
"""Dense updates: an ``[n, D]`` tensor, or ``n`` vectors of ``D`` values."""

_CHUNK = 1 << 22
"""Elements of one padded block of :func:`padded_groups` (or of its products)."""


def stacked(updates: Dense) -> torch.Tensor:
    """Dense updates as one ``[n, D]`` tensor; a one-line :class:`ConfigError` unless there is
    at least one client and every update is a vector of one length."""
    if not isinstance(updates, torch.Tensor):
        if not updates or len({tuple(u.shape) for u in updates}) > 1:
            raise ConfigError(f"a robust rule needs n >= 1 updates of one shape, got shapes "
                              f"{sorted({tuple(u.shape) for u in updates})}")
        updates = torch.stack(list(updates))
    if updates.dim() != 2 or not len(updates):
        raise ConfigError(f"a robust rule needs [n, D] updates of n >= 1 clients, got shape "
                          f"{tuple(updates.shape)}")
    return updates


@dataclass(frozen=True)
class RowUpdates:
    """The coalesced entries of a cohort's sparse updates (module docstring); build with
    :meth:`of`. ``n``: clients; ``shape``: the shape of one row (``()`` for a bias vector)."""

    n: int
    num_rows: int
    shape: tuple[int, ...]
    client: torch.Tensor
    row: torch.Tensor
    values: torch.Tensor

    @classmethod
    def of(cls, ids: Sequence[torch.Tensor], rows: Sequence[torch.Tensor],
           num_rows: int) -> RowUpdates:
        """The entries of ``n = len(ids)`` clients' uploads; a one-line
        :class:`~fedrec.errors.ProtocolError` for an upload whose ids and rows differ in number,
        whose ids leave ``[0, num_rows)``, whose rows differ in shape from the first client's, or
        that holds a value that is not finite."""
        if len(ids) != len(rows):
            raise ProtocolError(f"robust aggregation: {len(ids)} id lists, {len(rows)} row lists")
        if not rows:
            return cls(0, num_rows, (), torch.empty(0, dtype=torch.int64),
                       torch.empty(0, dtype=torch.int64), torch.empty(0, 1))
        shape = tuple(rows[0].shape[1:])
        for i, (idx, val) in enumerate(zip(ids, rows, strict=True)):
            _check_upload(i, idx, val, shape, num_rows)
        width, dev = math.prod(shape), rows[0].device
        client = torch.repeat_interleave(
            torch.arange(len(ids), device=dev),
            torch.tensor([len(x) for x in ids], dtype=torch.int64, device=dev))
        row = torch.cat([x.to(dev, torch.int64).reshape(-1) for x in ids])
        values = torch.cat([v.reshape(len(v), width) for v in rows])
        key, inverse = torch.unique(client * num_rows + row, return_inverse=True)
        if len(key) < len(row):  # a client repeated a row: its entries add up
            values = values.new_zeros(len(key), width).index_add_(0, inverse, values)
        else:
            values = torch.empty_like(values).index_copy_(0, inverse, values)
        return cls(len(ids), num_rows, shape, key // num_rows, key % num_rows, values)

    @property
    def width(self) -> int:
        """``D``, the number of columns of one flattened row."""
        return self.values.shape[1]

    def client_slices(self) -> list[tuple[int, int]]:
        """``[start, end)`` of each client's entries (contiguous: entries are sorted by client)."""
        ends = torch.bincount(self.client, minlength=self.n).cumsum(0).tolist()
        return list(zip([0, *ends[:-1]], ends, strict=True))

    def table(self, values: torch.Tensor | None = None,
              keep: torch.Tensor | None = None) -> torch.Tensor:
        """``sum_e values[e]`` added into row ``row[e]``, over the entries ``keep`` selects (all
        when None), as a ``[num_rows, *shape]`` table in the entries' dtype."""
        values = self.values if values is None else values
        row = self.row
        if keep is not None:
            row, values = row[keep], values[keep]
        out = values.new_zeros(self.num_rows, self.width)
        return out.index_add_(0, row, values).reshape(self.num_rows, *self.shape)

    def dense(self) -> torch.Tensor:
        """Every client's update as one flat vector: ``[n, num_rows · D]`` (tests and small
        cohorts only: this is the densification the sparse rules avoid)."""
        out = self.values.new_zeros(self.n, self.num_rows, self.width)
        out[self.client, self.row] = self.values
        return out.reshape(self.n, -1)


def _check_upload(i: int, idx: torch.Tensor, val: torch.Tensor, shape: tuple[int, ...],
                  num_rows: int) -> None:
    if idx.dim() != 1 or len(idx) != len(val):
        raise ProtocolError(f"robust aggregation: client {i} sent {tuple(idx.shape)} ids for "
                            f"{len(val)} rows")
    if tuple(val.shape[1:]) != shape:
        raise ProtocolError(f"robust aggregation: client {i} sent rows of shape "
                            f"{tuple(val.shape[1:])}, the first client {shape}")
    if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= num_rows):
        raise ProtocolError(f"robust aggregation: client {i} sent a row id outside "
                            f"[0, {num_rows})")
    if not bool(torch.isfinite(val).all()):
        raise ProtocolError(f"robust aggregation: client {i} sent a value that is not finite")


@dataclass(frozen=True)
class RowGroups:
    """A cohort's entries grouped by row, every column sorted within its group.

    ``rows[g]``: the ``g``-th touched row (ascending); ``start[g]``, ``count[g]``: its group's
    entries ``sorted[start[g] : start[g] + count[g]]`` (``count[g] = m_g`` contributors);
    ``group[e]``, ``rank[e]``: entry ``e``'s group and place in it. Column ``j`` of
    ``sorted`` holds that group's values of column ``j`` in ascending order (each column sorted
    on its own, so one line of ``sorted`` mixes clients)."""

    rows: torch.Tensor
    start: torch.Tensor
    count: torch.Tensor
    group: torch.Tensor
    rank: torch.Tensor
    sorted: torch.Tensor


def by_row(row: torch.Tensor, values: torch.Tensor) -> RowGroups:
    """Group the entries ``(row[e], values[e])`` by row and sort each column in each group: one
    sort of the row ids, then small sorts of the groups padded with ``+inf`` in chunks of like
    size (:func:`padded_groups`), no loop over rows. Values must be finite."""
    order = torch.argsort(row, stable=True)
    values = values[order]
    rows, count = torch.unique_consecutive(row[order], return_counts=True)
    ordered = torch.empty_like(values)
    for index, valid in padded_groups(count, values.shape[1]):
        block = values[index].masked_fill(~valid[:, :, None], math.inf)
        block = torch.sort(block.transpose(1, 2).contiguous(), dim=2).values.transpose(1, 2)
        ordered[index[valid]] = block[valid]
    start = count.cumsum(0) - count
    group = torch.repeat_interleave(torch.arange(len(rows), device=row.device), count)
    rank = torch.arange(len(row), device=row.device) - start[group]
    return RowGroups(rows, start, count, group, rank, ordered)


def padded_groups(count: torch.Tensor, width: int, chunk: int = _CHUNK
                  ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Groups of entries (group ``g``: entries ``start[g] .. start[g] + count[g] - 1`` of an array
    sorted by group, ``start`` the running total of ``count``) as padded blocks: ``index[L,
    cap]``, each group's entries and then its first entry again as padding, and ``valid[L,
    cap]``, false on the padding. ``cap`` is ``count`` rounded up to a power of two (at most
    twice the entries), the groups of one ``cap`` come in chunks of ``L`` with ``L · cap ·
    max(cap, width) <= chunk`` elements (or of one group): ``O(log max count)`` buckets, not a
    loop over groups."""
    if not len(count):
        return
    start = count.cumsum(0) - count
    bucket = torch.ceil(torch.log2(count.double())).long()
    by_bucket, order = torch.sort(bucket, stable=True)
    marks = torch.arange(int(bucket.max()) + 2, device=count.device)
    edges = torch.searchsorted(by_bucket, marks).tolist()
    for b in range(len(edges) - 1):
        cap = 1 << b
        place = torch.arange(cap, device=count.device)
        per_chunk = max(1, chunk // (cap * max(cap, width)))
        for groups in order[edges[b]:edges[b + 1]].split(per_chunk):
            valid = place < count[groups][:, None]
            yield start[groups][:, None] + torch.where(valid, place, 0), valid
