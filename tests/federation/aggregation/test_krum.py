"""Multi-Krum (:mod:`fedrec.federation.aggregation.krum`): a hand-computed choice, breakdown
under huge attackers, sparse equal to dense, and one-line errors for too few clients."""

from __future__ import annotations

import pytest
import torch

from fedrec.errors import ConfigError
from fedrec.federation.aggregation import RowUpdates, multi_krum, multi_krum_choice
from fedrec.federation.aggregation.krum import _sparse_gram


def test_krum_hand_computed():
    # n = 5, f = 1: each score sums the squared distances to the 2 nearest others.
    # Scores: 0 -> 1+4 = 5, 1 -> 1+1 = 2, 2 -> 1+1 = 2, 3 -> 1+4 = 5, 4 -> 97²+98² = 19013.
    x = torch.tensor([[0.0], [1.0], [2.0], [3.0], [100.0]])
    assert multi_krum_choice(x, 1).tolist() == [1, 2, 0, 3]  # m = n - f; ties: lower index
    assert multi_krum(x, 1).tolist() == [7.5]  # (0+1+2+3) · 5/4
    assert multi_krum(x, 1, 1).tolist() == [5.0]  # Krum: client 1, times 5
    assert multi_krum(x, 1, 2).tolist() == [7.5]  # (1+2) · 5/2


@pytest.mark.parametrize(("n", "f"), [(10, 3), (21, 9)])
def test_breakdown_krum_drops_huge_attackers(n, f):
    gen = torch.Generator().manual_seed(n)
    benign = 1.0 + 0.1 * torch.randn(n - f, 6, generator=gen)
    attackers = 1e4 * torch.randn(f, 6, generator=gen)
    x = torch.cat([benign, attackers])
    assert set(multi_krum_choice(x, f).tolist()) == set(range(n - f))
    assert torch.allclose(multi_krum(x, f), benign.sum(0) * n / (n - f), rtol=1e-5)
    assert float((x.sum(0) - benign.sum(0)).abs().max()) > 1e3  # the plain sum is moved


@pytest.mark.parametrize("chunk", [1, 100, 1 << 22])
def test_sparse_gram_equals_the_dense_gram(cohort, chunk):
    ids, rows = cohort(70, 40, 3, seed=3, most=12)
    u = RowUpdates.of(ids, rows, 40)
    senders = torch.bincount(u.row)
    assert bool((senders * 4 >= 70).any()) and bool((senders * 4 < 70).any())  # both paths
    x = u.dense().double()
    assert torch.allclose(_sparse_gram(u, chunk), x @ x.T, atol=1e-9)


@pytest.mark.parametrize(("f", "m"), [(2, None), (5, 1), (10, 30)])
def test_sparse_krum_equals_dense_krum(cohort, f, m):
    ids, rows = cohort(50, 20, 4, seed=f, most=10)
    rows[7] = rows[7] * 50  # one far client, dropped by both
    u = RowUpdates.of(ids, rows, 20)
    dense = u.dense()
    chosen = multi_krum_choice(u, f, m)
    assert torch.equal(chosen, multi_krum_choice(dense, f, m))
    assert 7 not in chosen.tolist()
    assert torch.allclose(multi_krum(u, f, m).reshape(-1), multi_krum(dense, f, m), atol=1e-5)


def test_sparse_krum_of_rows_nobody_shares():
    # Disjoint rows: every distance is ||a||² + ||b||², Krum keeps the smallest updates.
    ids = [torch.tensor([k]) for k in range(6)]
    rows = [torch.tensor([[float(k + 1)]]) for k in range(6)]
    assert multi_krum_choice(RowUpdates.of(ids, rows, 6), 1, 2).tolist() == [0, 1]


def test_too_few_clients_or_a_bad_m_is_a_one_line_config_error():
    x = torch.ones(6, 2)
    with pytest.raises(ConfigError, match=r"f=2 needs more than 2f\+2=6 clients, got 6"):
        multi_krum(x, 2)
    with pytest.raises(ConfigError, match="f must be >= 0"):
        multi_krum(x, -1)
    with pytest.raises(ConfigError, match=r"m must lie in \[1, n-f\] = \[1, 5\], got 6"):
        multi_krum(x, 1, 6)
    with pytest.raises(ConfigError, match=r"got 0"):
        multi_krum(x, 1, 0)
    u = RowUpdates.of([torch.tensor([0])] * 3, [torch.ones(1, 2)] * 3, 1)
    with pytest.raises(ConfigError, match="needs more than 2f"):
        multi_krum(u, 1)
