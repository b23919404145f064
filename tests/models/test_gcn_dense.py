"""Two GCN layers and a dense output layer: ``logits`` is the chain of its steps, with dropout
masks drawn in the order X, H1, H2 from one generator."""

from __future__ import annotations

import torch

from fedrec.models import gcn, gcn_dense


def test_logits_chain_the_steps_with_one_generator_for_every_mask() -> None:
    gen = torch.Generator().manual_seed(0)
    p = gcn_dense.init_params(5, 4, 3, gen)
    assert tuple(p) == gcn_dense.PARAM_NAMES
    assert p["w2"].shape == (4, 4) and p["w3"].shape == (4, 3)
    x = torch.rand(6, 5, generator=gen)
    adj = torch.eye(6) * 0.5 + 0.5 / 6
    z = gcn_dense.logits(p, adj, x, 0.5, torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(1)
    h1 = torch.relu(adj @ (gcn.dropout(x, 0.5, g) @ p["w1"]) + p["b1"])
    h2 = torch.relu(adj @ (gcn.dropout(h1, 0.5, g) @ p["w2"]) + p["b2"])
    expected = gcn.dropout(h2, 0.5, g) @ p["w3"] + p["b3"]
    assert torch.equal(z, expected)
    # Without a generator there is no dropout: the steps compose exactly.
    plain = gcn_dense.rest(p, adj, gcn_dense.first_layer(p, adj, x))
    assert torch.equal(gcn_dense.logits(p, adj, x), plain)
    assert not torch.equal(gcn_dense.logits(p, adj, x), z)
