"""A cohort's sparse row updates (:mod:`fedrec.federation.aggregation.updates`): coalescing,
the dense view, the grouping by row, the padded blocks, and one-line errors on bad uploads."""

from __future__ import annotations

import pytest
import torch

from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.aggregation import coordinate_median, multi_krum, norm_bounded_sum
from fedrec.federation.aggregation.updates import RowUpdates, by_row, padded_groups, stacked


def test_entries_are_coalesced_and_sorted_by_client_then_row():
    ids = [torch.tensor([2, 0, 2]), torch.tensor([1])]
    rows = [torch.tensor([[1.0, 2.0], [3.0, 4.0], [10.0, 20.0]]), torch.tensor([[5.0, 6.0]])]
    u = RowUpdates.of(ids, rows, 3)
    assert (u.n, u.num_rows, u.shape, u.width) == (2, 3, (2,), 2)
    assert u.client.tolist() == [0, 0, 1]
    assert u.row.tolist() == [0, 2, 1]
    assert u.values.tolist() == [[3.0, 4.0], [11.0, 22.0], [5.0, 6.0]]
    assert u.client_slices() == [(0, 2), (2, 3)]
    assert u.dense().tolist() == [[3.0, 4.0, 0.0, 0.0, 11.0, 22.0], [0.0, 0.0, 5.0, 6.0, 0.0, 0.0]]
    assert u.table().tolist() == [[3.0, 4.0], [5.0, 6.0], [11.0, 22.0]]
    assert u.table(keep=u.client == 1).tolist() == [[0.0, 0.0], [5.0, 6.0], [0.0, 0.0]]


def test_rows_of_any_shape_are_flattened_and_restored():
    u = RowUpdates.of([torch.tensor([1])], [torch.arange(6.0).reshape(1, 2, 3)], 2)
    assert (u.shape, u.width) == ((2, 3), 6)
    assert u.table().shape == (2, 2, 3)
    bias = RowUpdates.of([torch.tensor([0, 1])], [torch.tensor([0.5, 2.0])], 2)
    assert bias.table().tolist() == [0.5, 2.0]


@pytest.mark.parametrize(("ids", "rows", "match"), [
    ([torch.tensor([0])], [], "1 id lists, 0 row lists"),
    ([torch.tensor([0, 1])], [torch.ones(1, 2)], "client 0 sent .2,. ids for 1 rows"),
    ([torch.tensor([0]), torch.tensor([1])], [torch.ones(1, 2), torch.ones(1, 3)],
     "client 1 sent rows of shape .3,., the first client .2,."),
    ([torch.tensor([3])], [torch.ones(1, 2)], "row id outside .0, 3."),
    ([torch.tensor([-1])], [torch.ones(1, 2)], "row id outside"),
    ([torch.tensor([0])], [torch.tensor([[1.0, float("nan")]])], "not finite"),
    ([torch.tensor([0])], [torch.tensor([[float("inf"), 1.0]])], "not finite"),
])
def test_bad_uploads_are_one_line_protocol_errors(ids, rows, match):
    with pytest.raises(ProtocolError, match=match):
        RowUpdates.of(ids, rows, 3)


def test_by_row_sorts_every_column_within_each_row(cohort):
    u = RowUpdates.of(*cohort(40, 9, 3, seed=1), 9)
    g = by_row(u.row, u.values)
    assert torch.equal(g.rows, torch.unique(u.row))
    for k, r in enumerate(g.rows.tolist()):
        start, count = int(g.start[k]), int(g.count[k])
        expected = torch.sort(u.values[u.row == r], dim=0).values
        assert torch.equal(g.sorted[start:start + count], expected)
        assert g.group[start:start + count].tolist() == [k] * count
        assert g.rank[start:start + count].tolist() == list(range(count))


@pytest.mark.parametrize("chunk", [1, 7, 1 << 22])
def test_padded_groups_cover_every_entry_once(chunk):
    count = torch.tensor([1, 5, 2, 8, 3, 1, 4])
    start = count.cumsum(0) - count
    seen = []
    for index, valid in padded_groups(count, width=2, chunk=chunk):
        cap = index.shape[1]
        assert cap & (cap - 1) == 0 and bool((valid.sum(1) > cap // 2).all())
        first = index[:, 0]
        assert bool((index == first[:, None] + torch.arange(cap) * valid).all())
        assert bool(torch.isin(first, start).all())
        seen += index[valid].tolist()
    assert sorted(seen) == list(range(int(count.sum())))


def test_dense_updates_as_a_list_or_a_tensor():
    vectors = [torch.tensor([float(k), -float(k)]) for k in range(5)]
    x = torch.stack(vectors)
    assert torch.equal(stacked(vectors), x)
    assert torch.equal(coordinate_median(vectors), coordinate_median(x))
    assert torch.equal(multi_krum(vectors, 1), multi_krum(x, 1))
    assert torch.equal(norm_bounded_sum(vectors, 1.0), norm_bounded_sum(x, 1.0))
    with pytest.raises(ConfigError, match=r"one shape, got shapes \[\(2,\), \(3,\)\]"):
        stacked([torch.ones(2), torch.ones(3)])
    with pytest.raises(ConfigError, match="n >= 1 updates"):
        stacked([])
    with pytest.raises(ConfigError, match=r"got shape \(2, 2, 2\)"):
        stacked(torch.ones(2, 2, 2))
