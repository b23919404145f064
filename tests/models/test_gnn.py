"""fedrec.models.gnn pieces not covered through FedGNN's algorithm tests."""

from __future__ import annotations

import torch

from fedrec.models import gnn


def test_dropout_keep_drops_embedding_columns_only_and_keeps_the_mean() -> None:
    gen = torch.Generator().manual_seed(0)
    keep = gnn.dropout_keep((200, 50, 9), 0.2, 8, gen)
    assert torch.all(keep[..., 8] == 1.0)  # the bias column is never dropped
    emb = keep[..., :8]
    assert set(emb.unique().tolist()) == {0.0, 1.25}  # inverted dropout: 1 / (1 - rate)
    assert abs(float((emb == 0).float().mean()) - 0.2) < 0.01
    assert abs(float(emb.mean()) - 1.0) < 0.02
    again = gnn.dropout_keep((200, 50, 9), 0.2, 8, torch.Generator().manual_seed(0))
    assert torch.equal(keep, again)  # a function of the generator alone
