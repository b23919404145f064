"""The batched NeuMF and its per-row Adam; the CSR graph models (LightGCN, NGCF)."""

from __future__ import annotations

import torch

from fedrec.models import ncf
from fedrec.models.lightgcn import NGCF, LightGCN, SymmetricSpMM, normalized_adjacency


def test_ncf_forward_is_neumf():
    """The split matmuls of :func:`ncf.forward` equal NeuMF's formula with concatenations."""
    shape = ncf.NCFShape(8, (8, 4))
    params = ncf.init_params(shape, 0, torch.tensor([1, 2]))
    params = {k: v + 0.1 * torch.randn_like(v) for k, v in params.items()}  # non-zero biases
    rows = torch.randn(2, 5, 16)
    got = ncf.forward(shape, params, rows)
    for c in range(2):
        p_gmf, p_mlp = params["user"][c, :8], params["user"][c, 8:]
        h = torch.cat([p_mlp.expand(5, 8), rows[c, :, 8:]], 1)
        for k in range(2):
            h = torch.relu(h @ params[f"w{k}"][c] + params[f"b{k}"][c])
        z = torch.cat([p_gmf * rows[c, :, :8], h], 1)
        want = (z @ params["out_w"][c] + params["out_b"][c]).squeeze(1)
        assert torch.allclose(got[c], want, atol=1e-6)


def test_batched_ncf_matches_one_client_at_a_time():
    shape = ncf.NCFShape(8, (8, 4))
    clients = torch.tensor([3, 7, 11])
    params = ncf.init_params(shape, 0, clients)
    rows = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(0))
    batched = ncf.forward(shape, params, rows)
    for c in range(3):
        one = ncf.forward(shape, {k: v[c : c + 1] for k, v in params.items()}, rows[c : c + 1])
        assert torch.allclose(batched[c], one[0], atol=1e-6)
    # Initialisation depends on the client id only, not on the cohort.
    alone = ncf.init_params(shape, 0, clients[1:2])
    assert all(torch.equal(alone[k][0], params[k][1]) for k in params)
    a = ncf.init_item_rows(shape, 0, torch.tensor([7, 7, 3]), torch.tensor([1, 2, 1]), 10)
    b = ncf.init_item_rows(shape, 0, torch.tensor([7]), torch.tensor([2]), 10)
    assert torch.equal(a[1], b[0]) and not torch.equal(a[0], a[2])


def test_init_item_rows_are_a_private_permutation_of_iid_rows():
    shape = ncf.NCFShape(8, (8,))
    n = 1000
    tables = [ncf.init_item_rows(shape, 3, torch.full((n,), c), torch.arange(n), n)
              for c in (0, 1)]
    for t in tables:
        # Distinct rows (a bijection onto base rows), each N(0, EMB_STD^2).
        assert len(torch.unique(t, dim=0)) == n
        assert abs(float(t.std()) - ncf.EMB_STD) < 0.05 * ncf.EMB_STD
    assert not torch.equal(tables[0], tables[1])
    # Clients' tables are uncorrelated item by item.
    corr = torch.corrcoef(torch.stack([tables[0].flatten(), tables[1].flatten()]))[0, 1]
    assert abs(float(corr)) < 0.05
    # Another seed, another table.
    other = ncf.init_item_rows(shape, 4, torch.zeros(n, dtype=torch.int64), torch.arange(n), n)
    assert not torch.equal(other, tables[0])


def test_stacked_adam_equals_torch_adam_per_client():
    torch.manual_seed(0)
    p = torch.randn(3, 4)
    ref = [torch.nn.Parameter(p[i].clone()) for i in range(3)]
    opts = [torch.optim.Adam([r], lr=0.01) for r in ref]
    adam = ncf.StackedAdam({"p": p}, lr=0.01)
    steps = torch.zeros(3, dtype=torch.float64)
    for active in ([0, 1, 2], [0, 2], [1], [0, 1, 2]):
        idx = torch.tensor(active)
        g = torch.randn(len(active), 4)
        steps[idx] += 1
        adam.step("p", p, idx, g, steps[idx])
        for j, c in enumerate(active):
            ref[c].grad = g[j].clone()
            opts[c].step()
    for i in range(3):
        assert torch.allclose(p[i], ref[i].detach(), atol=1e-6)


def test_normalized_adjacency_and_symmetric_spmm():
    users = torch.tensor([0, 0, 1, 2])
    items = torch.tensor([0, 1, 1, 2])
    w = torch.tensor([1.0, 0.5, 2.0, 1.0])
    adj = normalized_adjacency(users, items, w, 3, 3)
    dense = adj.to_dense()
    assert torch.allclose(dense, dense.T)
    a = torch.zeros(6, 6)
    a[users, items + 3] = w
    a = a + a.T
    d = a.sum(1).rsqrt()
    assert torch.allclose(dense, d[:, None] * a * d[None, :], atol=1e-6)
    x = torch.randn(6, 4, requires_grad=True)
    SymmetricSpMM.apply(adj, x).pow(2).sum().backward()
    x2 = x.detach().clone().requires_grad_(True)
    (dense @ x2).pow(2).sum().backward()
    assert torch.allclose(x.grad, x2.grad, atol=1e-5)


def test_graph_models_shapes_and_gradients():
    adj = normalized_adjacency(torch.tensor([0, 1, 2]), torch.tensor([1, 0, 3]), None, 3, 4)
    for model, width in ((NGCF(3, 4, 8, (8, 4), 0.1, torch.Generator().manual_seed(0)), 20),
                         (LightGCN(3, 4, 8, 2, torch.Generator().manual_seed(0)), 8)):
        u, i = model(adj)
        assert u.shape == (3, width) and i.shape == (4, width)
        (u @ i.T).sum().backward()
        assert all(p.grad is not None for p in model.parameters())
