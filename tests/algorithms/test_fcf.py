"""FCF on real data: it learns, it survives dropouts and poisoned updates, and each client uploads
exactly its own gradient (checked against a per-client autograd reference written here)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fcf import FCFConfig, build_fcf_job
from fedrec.config import build_config
from fedrec.data import InteractionDataset, RatingDataset
from fedrec.federation import SERVER, role_of
from fedrec.federation.secrets import ClientSecrets
from fedrec.models.mf import sample_negatives

CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))


def _trainer(ds, dataset_name: str, **overrides):
    cfg = build_config(FCFConfig, "fcf", dataset_name, overrides=overrides)
    # One client secret for every trainer: the comparisons are draw for draw.
    return FederatedTrainer(build_fcf_job(cfg, ds, CPU), cfg, CPU, SECRETS), cfg


def _train(trainer, rounds: int, start: int = 1) -> list[dict]:
    return [trainer.train_round(r) for r in range(start, start + rounds)]


def test_learns_ml100k_with_defaults(ml100k: RatingDataset) -> None:
    trainer, cfg = _trainer(ml100k, "ml-100k")
    start = trainer.evaluate()["rmse"]
    stats = _train(trainer, 30)
    final = trainer.evaluate()
    # Defaults reach ~0.927 by round 30 (0.936 by 20). Without the item step (server never
    # learning) or with a wrong gradient it stays above ~1.0; the scale midpoint gives ~1.15.
    assert final["rmse"] < 0.95, final
    assert start > 1.05 and final["rmse"] < start - 0.1
    assert 0.5 < final["mae"] < final["rmse"]
    assert final["eval_clients"] == len(ml100k.user_ids())
    assert all(s["clients"] == len(ml100k.user_ids()) for s in stats)
    # Clients upload; the server broadcasts; sizes are what the wire carries.
    totals = trainer.ledger.totals()
    assert totals["bytes_up"] > 0 and totals["bytes_down"] > 0
    per_round = trainer.ledger.totals(5)
    q_bytes = (ml100k.num_items * cfg.dim + ml100k.num_items) * 4  # factors and biases, f32
    n = len(ml100k.user_ids())
    assert n * q_bytes < per_round["bytes_down"] < n * (q_bytes + 200)


def test_runs_with_dropout(ml100k: RatingDataset) -> None:
    trainer, _ = _trainer(ml100k, "ml-100k", dropout=0.3, dim=8)
    n = len(ml100k.user_ids())
    stats = _train(trainer, 4)
    clients = [s["clients"] for s in stats]
    # A dropped client (30%) sends nothing for the whole round (dropout_after_calls = 0).
    assert all(0.6 * n < c < 0.8 * n for c in clients), clients
    assert len(set(clients)) > 1  # a new draw every round
    metrics = trainer.evaluate()  # still within the last round: the same ~30% missing
    assert all(math.isfinite(v) for v in metrics.values())
    assert 0.6 * n < metrics["eval_clients"] < 0.8 * n
    assert trainer.ledger.rejected == []


def test_sampled_cohorts(ml100k: RatingDataset) -> None:
    trainer, _ = _trainer(ml100k, "ml-100k", clients_per_round=100, dim=8)
    assert [s["clients"] for s in _train(trainer, 3)] == [100, 100, 100]
    assert trainer.ledger.totals(2)["messages_up"] == 100


def test_nan_client_is_rejected_and_the_round_proceeds(ml100k: RatingDataset) -> None:
    trainer, _ = _trainer(ml100k, "ml-100k", dim=8)
    n = len(ml100k.user_ids())
    _train(trainer, 1)
    bad = 17
    states = trainer.runtime.states
    states[bad]["p"] = torch.full_like(states[bad]["p"], float("nan"))
    good_before = states[18]["p"].clone()
    stats = trainer.train_round(2)
    assert stats["clients"] == n - 1
    rejected = trainer.ledger.rejected
    assert [(r["round"], r["sender"], r["step"]) for r in rejected] == [(2, str(bad), "train")]
    server = trainer.job.server
    assert bool(torch.isfinite(server.q).all()) and bool(torch.isfinite(server.b_i).all())
    # The other clients were not contaminated by sharing a vectorised cohort with it.
    assert bool(torch.isfinite(states[18]["p"]).all())
    assert not torch.equal(states[18]["p"], good_before)
    assert all(bool(torch.isfinite(states[u]["p"]).all()) for u in states if u != bad)
    # Its (still NaN) evaluation is rejected too; the metrics come from everyone else.
    metrics = trainer.evaluate()
    assert math.isfinite(metrics["rmse"]) and metrics["eval_clients"] == n - 1
    # The rejected upload was transmitted, so it is counted.
    assert trainer.ledger.totals(2)["messages_up"] == 2 * n  # n train + n evaluate messages


def _capture_uploads(trainer, clients: set[int]) -> dict[int, dict]:
    got: dict[int, dict] = {}

    def observe(msg) -> None:
        if msg.sender in clients and msg.receiver == SERVER and msg.step == "train":
            got[msg.sender] = msg.payload

    trainer.runtime.observers.append(observe)
    return got


def _reference_explicit(cfg, data, p, b, q, b_i, mu):
    """One client's FCF step on its own, from the definitions (plain per-client autograd)."""
    items = torch.tensor(data.train_items, dtype=torch.int64)
    r = torch.tensor(data.train_values, dtype=torch.float32)
    n = len(items)
    p, b = p.clone().requires_grad_(True), b.clone().requires_grad_(True)
    for _ in range(cfg.local_steps):
        # User step on the client's mean loss; the item rows are constants here.
        pred = mu + b + b_i[items] + q[items] @ p
        loss = ((r - pred) ** 2).mean() + cfg.reg * (p @ p + b * b)
        gp, gb = torch.autograd.grad(loss, [p, b])
        with torch.no_grad():
            p -= cfg.lr_user * gp
            b -= cfg.lr_user * gb
    Q = q.clone().requires_grad_(True)
    B = b_i.clone().requires_grad_(True)
    p, b = p.detach(), b.detach()
    pred = mu + b + B[items] + Q[items] @ p
    loss = ((r - pred) ** 2).sum() + cfg.reg * (n * (p @ p + b * b) + (Q[items] ** 2).sum())
    gq, gb_i = torch.autograd.grad(loss, [Q, B])
    return p, b, gq, gb_i


def _reference_implicit(cfg, data, user, rnd, p, q, num_items):
    pos = torch.tensor(data.train_items, dtype=torch.int64)
    n = len(pos)
    keys = torch.sort(user * num_items + pos).values  # this user's positives only
    # The client's negatives come from its own secret (never the public seed).
    key = SECRETS.party(user).seed(rnd, "fcf-negatives")
    neg = sample_negatives(torch.full((n,), key), torch.full((n,), user), torch.arange(n),
                           num_items, keys)
    p = p.clone().requires_grad_(True)
    for _ in range(cfg.local_steps):
        loss = -F.logsigmoid((q[pos] - q[neg]) @ p).mean() + cfg.reg * (p @ p)
        (gp,) = torch.autograd.grad(loss, [p])
        with torch.no_grad():
            p -= cfg.lr_user * gp
    Q = q.clone().requires_grad_(True)
    p = p.detach()
    loss = -F.logsigmoid((Q[pos] - Q[neg]) @ p).sum() + cfg.reg * (
        n * (p @ p) + (Q[pos] ** 2).sum() + (Q[neg] ** 2).sum()
    )
    (gq,) = torch.autograd.grad(loss, [Q])
    return p, gq, neg


def _pick_clients(ds) -> list[int]:
    counts = np.bincount(ds.train.users, minlength=ds.num_users)
    active = np.flatnonzero(counts > 0)
    return sorted({int(active[np.argmax(counts[active])]), int(active[np.argmin(counts[active])]),
                   int(active[len(active) // 2])})


def test_explicit_upload_is_each_clients_own_gradient(ml100k: RatingDataset) -> None:
    trainer, cfg = _trainer(ml100k, "ml-100k", dim=8)
    _train(trainer, 1)  # start from trained, client-specific state
    chosen = _pick_clients(ml100k)
    server, states = trainer.job.server, trainer.runtime.states
    q, b_i = server.q.detach().clone(), server.b_i.detach().clone()
    before = {u: (states[u]["p"].clone(), states[u]["b"].clone()) for u in chosen}
    uploads = _capture_uploads(trainer, set(chosen))
    trainer.train_round(2)  # the whole cohort, vectorised
    mu = (ml100k.rating_min + ml100k.rating_max) / 2  # the public midpoint of the scale
    for u in chosen:
        data = trainer.job.client_data[u]
        p_ref, b_ref, gq, gb = _reference_explicit(cfg, data, *before[u], q, b_i, mu)
        up = uploads[u]
        items = torch.as_tensor(up["items"])
        # It names exactly the items the client rated (FCF hides nothing about which)...
        assert sorted(items.tolist()) == sorted(set(data.train_items.tolist()))
        # ...and carries exactly its own gradient on those rows (and nothing anywhere else).
        torch.testing.assert_close(torch.as_tensor(up["grad_q"]), gq[items], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(torch.as_tensor(up["grad_b"]), gb[items], rtol=1e-4, atol=1e-5)
        mask = torch.ones(len(q), dtype=torch.bool)
        mask[items] = False
        assert bool((gq[mask] == 0).all())
        # The user factor stayed on the device, updated as the reference says.
        torch.testing.assert_close(states[u]["p"], p_ref, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(states[u]["b"], b_ref, rtol=1e-4, atol=1e-5)
        assert set(up) == {"items", "grad_q", "grad_b"}


def test_implicit_upload_is_each_clients_own_gradient(gowalla_500: InteractionDataset) -> None:
    ds = gowalla_500
    trainer, cfg = _trainer(ds, "gowalla", dim=8)
    _train(trainer, 1)
    chosen = _pick_clients(ds)
    server, states = trainer.job.server, trainer.runtime.states
    q = server.q.detach().clone()
    before = {u: states[u]["p"].clone() for u in chosen}
    uploads = _capture_uploads(trainer, set(chosen))
    trainer.train_round(2)
    for u in chosen:
        data = trainer.job.client_data[u]
        p_ref, gq, neg = _reference_implicit(cfg, data, u, 2, before[u], q, ds.num_items)
        up = uploads[u]
        items = torch.as_tensor(up["items"])
        touched = set(data.train_items.tolist()) | set(neg.tolist())
        assert sorted(items.tolist()) == sorted(touched)
        torch.testing.assert_close(torch.as_tensor(up["grad_q"]), gq[items], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(states[u]["p"], p_ref, rtol=1e-4, atol=1e-5)
        assert set(up) == {"items", "grad_q"}
        # Negatives are real negatives (mostly: a few survivors of the redraws are allowed).
        assert np.isin(neg.numpy(), data.train_items).mean() < 0.05


@pytest.mark.parametrize("name", ["gowalla_1000"])
def test_implicit_recall_improves(name: str, request: pytest.FixtureRequest) -> None:
    ds: InteractionDataset = request.getfixturevalue(name)
    trainer, _ = _trainer(ds, "gowalla", dim=32)
    start = trainer.evaluate()
    _train(trainer, 20)
    final = trainer.evaluate()
    random_recall = 20 / ds.num_items  # expected Recall@20 of a random ranking
    # Reaches ~0.024 after 20 rounds (about 30x a random ranking).
    assert final["Recall@20"] > 10 * random_recall
    assert final["Recall@20"] > 5 * start["Recall@20"]
    assert final["NDCG@20"] > 5 * start["NDCG@20"]
    assert final["eval_clients"] == len(np.unique(ds.test.users[np.isin(ds.test.users,
                                                                          ds.user_ids())]))
    assert all(role_of(u) == "client" for u in trainer.runtime.states)


def test_rating_units_make_training_scale_free(ml100k: RatingDataset,
                                               ml100k_1_to_100: RatingDataset) -> None:
    """The same settings on 1..5 and on 1..100 (YahooMusic's scale) learn the same model in
    rating units; without units the 1..5 client step diverged on YahooMusic."""
    small, _ = _trainer(ml100k, "ml-100k", rounds=3)
    big, _ = _trainer(ml100k_1_to_100, "ml-100k", rounds=3)
    _train(small, 3)
    _train(big, 3)
    assert big.evaluate()["rmse"] == pytest.approx(24.75 * small.evaluate()["rmse"], rel=1e-4)
