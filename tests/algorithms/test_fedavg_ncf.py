"""FedAvg over NeuMF on the real ML-100K: what travels, its exact size, learning, weighting.

One module-scoped run (all 943 clients, two rounds, ~15 s single-threaded) serves the protocol
checks; FedAvg's weighting is checked on a hand-made case.
"""

from __future__ import annotations

import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedavg_ncf import (
    FedAvgNCFConfig,
    fedavg,
    server_param_names,
)
from fedrec.config import build_config
from fedrec.federation.message import Message
from fedrec.models import ncf

# Listed first in every test's fixture closure, so module-scoped runs get one thread too.
pytestmark = pytest.mark.usefixtures("one_thread_module")


def _cfg(**over) -> FedAvgNCFConfig:
    return build_config(FedAvgNCFConfig, "fedavg-ncf", "ml-100k", overrides=over)


def _expected_shapes(cfg: FedAvgNCFConfig, num_items: int) -> dict[str, tuple[int, ...]]:
    shape = ncf.NCFShape(cfg.client_dim, tuple(cfg.client_layers))
    shapes = {k: v for k, v in shape.param_shapes().items() if k != "user"}
    return {"item_emb": (num_items, 2 * cfg.client_dim), **shapes}


def _wire_size(shapes: dict[str, tuple[int, ...]], with_n: bool) -> int:
    """The codec's format by hand: dict = tag + u64 count + (u16 keylen, key, value) per key;
    float32 array = tag + dtype + ndim + u64 per dim + 4 bytes per value; int = tag + i64."""
    size = 1 + 8
    for k, s in shapes.items():
        numel = 1
        for d in s:
            numel *= d
        size += 2 + len(k) + 3 + 8 * len(s) + 4 * numel
    if with_n:
        size += 2 + 1 + 1 + 8
    return size


@pytest.fixture(scope="module")
def run(ml100k):
    cfg = _cfg(rounds=2)
    trainer = get_algorithm("fedavg-ncf").trainer(cfg, ml100k, torch.device("cpu"))
    before = trainer.evaluate()
    tap: list[Message] = []  # every delivered message
    trainer.runtime.observers.append(tap.append)
    stats = [trainer.train_round(r) for r in (1, 2)]
    after = trainer.evaluate()
    return cfg, trainer, tap, before, stats, after


def test_registered_and_defaults():
    spec = get_algorithm("fedavg-ncf")
    cfg = _cfg()
    assert spec.config_cls is FedAvgNCFConfig
    assert (cfg.rounds, cfg.client_dim, cfg.client_layers, cfg.client_lr, cfg.client_batch,
            cfg.local_epochs, cfg.num_negatives, cfg.topk) == (
        20, 16, (16, 8), 0.01, 256, 5, 4, 20)


def test_only_server_parameters_travel(run, ml100k):
    cfg, _, tap, *_ = run
    shapes = _expected_shapes(cfg, ml100k.num_items)
    train = [m for m in tap if m.step == "train"]
    down = [m for m in train if m.sender == "server"]
    up = [m for m in train if m.receiver == "server"]
    assert len(down) == len(up) == 2 * ml100k.num_users
    for m in down + up:
        assert "user" not in m.payload
        got = {k: tuple(torch.as_tensor(v).shape) for k, v in m.payload.items() if k != "n"}
        assert got == shapes
    assert all(set(m.payload) == {"n", *shapes} for m in up)
    assert all(set(m.payload) == set(shapes) for m in down)
    assert set(server_param_names(ncf.NCFShape(16, (16, 8)))) == set(shapes)


def test_bytes_per_client_per_round_equal_parameter_size(run, ml100k):
    cfg, trainer, *_ = run
    shapes = _expected_shapes(cfg, ml100k.num_items)
    steps = trainer.ledger.by_step()
    down = steps["train (server->client)"]
    up = steps["train (client->server)"]
    n = 2 * ml100k.num_users
    assert down["messages"] == up["messages"] == n
    assert down["bytes"] == n * _wire_size(shapes, with_n=False)
    assert up["bytes"] == n * _wire_size(shapes, with_n=True)
    raw = 4 * (ml100k.num_items * 32 + 32 * 16 + 16 + 16 * 8 + 8 + 24 + 1)
    assert raw < down["bytes"] / n < raw + 200


def test_rounds_improve_client_recall(run):
    *_, before, stats, after = run
    assert all(s["clients"] == 943 for s in stats)
    assert after["Recall@20"] > before["Recall@20"] + 0.05
    assert after["NDCG@20"] > before["NDCG@20"]


def test_fedavg_weights_by_training_rows():
    ups = [{"n": 1, "w": torch.tensor([0.0, 4.0])}, {"n": 3, "w": torch.tensor([4.0, 0.0])}]
    out = fedavg(ups, ["w"])
    assert torch.allclose(out["w"], torch.tensor([3.0, 1.0]))
