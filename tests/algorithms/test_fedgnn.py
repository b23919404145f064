"""FedGNN on real ML-100K (u1 split): vectorised gradients, LDP, pseudo items, expansion privacy,
training and privacy accounting."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedgnn import (
    FedGNNConfig,
    FedGNNServer,
    build_fedgnn_job,
    fedgnn_instruments,
)
from fedrec.data import load_dataset
from fedrec.errors import ConfigError
from fedrec.federation.message import CLIENT, SERVER, THIRD_PARTY, Message
from fedrec.federation.secrets import ClientSecrets
from fedrec.models import gnn
from fedrec.privacy import LaplaceMechanism, PrivacyAccountant, linf_laplace_epsilon

torch.set_num_threads(2)
DATA = Path(os.environ.get("FEDREC_DATA", "/work/shared/datasets"))

SECRETS = ClientSecrets(bytes(range(32)))


@pytest.fixture(scope="module")
def ds():
    if not (DATA / "ml-100k" / "u.data").is_file():
        pytest.skip("ML-100K is not staged")
    return load_dataset("ml-100k", DATA)


def make(ds, **kw):
    base = dict(rounds=5, dim=16, clients_per_round=32, pseudo_items=200, neighbours=8,
                expand_after=0, eval_every=1)
    base.update(kw)
    cfg = FedGNNConfig(**base)
    cfg.validate()
    # One client secret for every trainer: tests compare runs draw for draw.
    tr = FederatedTrainer(build_fedgnn_job(cfg, ds, torch.device("cpu")), cfg,
                          torch.device("cpu"), SECRETS)
    return tr, tr.runtime, tr.job.server


def ctxs_of(rt, clients, step="train"):
    return [rt._context(c, step) for c in clients]


@pytest.mark.parametrize("kind", gnn.GNN_KINDS)
def test_vectorised_grads_equal_single_client_reference(ds, kind) -> None:
    tr, rt, srv = make(ds, gnn=kind)
    client = tr.job.client_logic
    clients = rt.client_ids[:6]
    ctxs = ctxs_of(rt, clients)
    gen = torch.Generator().manual_seed(1)
    for i, c in enumerate(ctxs):  # fake neighbour means, some clients without neighbours
        c.state["nb_mean"] = torch.randn(16, generator=gen) if i % 3 else None
    srv.params["W_nb"] = torch.randn(16, 16, generator=gen) * 0.1  # make neighbours matter
    idx = np.arange(len(ctxs))
    t = client._pad(ctxs, idx, srv.items)
    f = client.f
    gp, gu, gt, _ = gnn.cohort_grads(f, srv.params, t["e_u"], t["e_items"], t["nb_mean"],
                                     t["mask"], t["ratings"])
    assert t["mask"].sum(1).unique().numel() > 1  # clients really have different sizes
    for r, c in enumerate(ctxs):
        k = c.data.num_train
        nb_mean = c.state["nb_mean"] if c.state["nb_mean"] is not None else torch.zeros(16)
        p = {name: v.clone().requires_grad_(True) for name, v in srv.params.items()}
        e_u = c.state["e_u"].clone().requires_grad_(True)
        items = torch.from_numpy(c.data.train_items.astype(np.int64))
        e_it = srv.items[items].clone().requires_grad_(True)
        loss = f(p, e_u, e_it, nb_mean, torch.ones(k, dtype=torch.bool),
                 torch.from_numpy(c.data.train_values.astype(np.float32)))
        ref = torch.autograd.grad(loss, [*p.values(), e_u, e_it])
        for name, g in zip(p, ref, strict=False):
            torch.testing.assert_close(gp[name][r], g, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(gu[r], ref[-2], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(gt[r, :k], ref[-1], rtol=1e-4, atol=1e-6)
        assert torch.all(gt[r, k:] == 0)


def _train_replies(ds, clients, **kw):
    _, rt, srv = make(ds, **kw)
    rt.begin_round(1)
    return rt.broadcast("train", clients, srv._broadcast()), rt


def test_ldp_uploads_are_clipped_and_noised(ds) -> None:
    clients = [1, 2, 3]
    kw = dict(pseudo_items=0, loss_reduction="sum")
    clean, _ = _train_replies(ds, clients, clip=0.0, laplace=0.0, **kw)
    clipped, _ = _train_replies(ds, clients, clip=0.1, laplace=0.0, **kw)
    noisy, _ = _train_replies(ds, clients, clip=0.1, laplace=0.2, **kw)
    for c in clients:
        order = np.argsort(clean[c]["items"].numpy())
        same = np.argsort(clipped[c]["items"].numpy())
        g_clean = clean[c]["grad_items"][order]
        g_clip = clipped[c]["grad_items"][same]
        assert clipped[c]["grad_items"].abs().max() <= 0.1
        assert clipped[c]["grad_model"].abs().max() <= 0.1
        torch.testing.assert_close(g_clip, g_clean.clamp(-0.1, 0.1))
        assert clean[c]["grad_model"].abs().max() > 0.1  # clipping was active
        torch.testing.assert_close(clipped[c]["grad_model"],
                                   clean[c]["grad_model"].clamp(-0.1, 0.1))
        g_noisy = noisy[c]["grad_items"][np.argsort(noisy[c]["items"].numpy())]
        assert not torch.allclose(g_noisy, g_clip)
        assert noisy[c]["grad_model"].abs().max() > 0.1  # noise exceeds the clip bound
        diff = (g_noisy - g_clip).flatten()
        # E|Lap(0.2)| = 0.2 and sd|Lap(0.2)| = 0.2: within 4 standard errors of the mean of
        # the upload's coordinates (client 3 uploads only 13 items x 16 = 208 of them).
        assert abs(float(diff.abs().mean()) - 0.2) < 4 * 0.2 / diff.numel() ** 0.5
        # The loss is a function of the ratings that the noise does not cover: it goes up only
        # from runs without local DP.
        assert "loss" in clean[c] and "loss" in clipped[c] and "loss" not in noisy[c]


def test_pseudo_items_hide_real_items(ds) -> None:
    m = 200
    replies, rt = _train_replies(ds, [5, 6], pseudo_items=m)
    for c, r in replies.items():
        real = rt._client_data[c].train_items
        ids = r["items"].numpy()
        assert len(ids) == len(real) + m == len(np.unique(ids))
        assert set(real.tolist()) <= set(ids.tolist())
        is_real = np.isin(ids, real)
        assert not np.all(is_real[: len(real)])  # real rows are not simply first
        assert not np.all(np.diff(ids) > 0)  # nor sorted
        assert r["grad_items"].shape == (len(ids), 16)
        # The loss, unprotected by the noise, is not uploaded under local DP.
        assert set(r) == {"items", "grad_items", "grad_model"}


def test_pseudo_gradients_match_real_moments(ds) -> None:
    tr, rt, _ = make(ds, pseudo_items=1500)
    ctx = ctxs_of(rt, [10])[0]
    gen = torch.Generator().manual_seed(0)
    real = torch.randn(40, 4, generator=gen) @ torch.randn(4, 4, generator=gen) + 1.0
    items = torch.from_numpy(ctx.data.train_items[:40].astype(np.int64))
    ids, g = tr.job.client_logic.pseudo(ctx, items, real)
    assert not np.isin(ids.numpy(), ctx.data.train_items).any()
    torch.testing.assert_close(g.mean(0), real.mean(0), atol=0.25, rtol=0.1)
    torch.testing.assert_close(torch.cov(g.T), torch.cov(real.T), atol=0.5, rtol=0.15)


def test_expansion_privacy_boundaries(ds) -> None:
    _, rt, srv = make(ds, neighbours=5)
    seen: list[Message] = []
    rt.observers.append(seen.append)
    rt.begin_round(1)
    srv.expand(rt)
    key = bytes(next(m.payload["key"] for m in seen if m.step == "expand_key"
                     and m.sender == SERVER))
    to_server = [m for m in seen if m.receiver == SERVER]
    to_third = [m for m in seen if m.receiver == THIRD_PARTY]
    to_clients = [m for m in seen if isinstance(m.receiver, int)]
    assert to_server == []  # the recommendation server receives nothing in this phase
    assert len(to_third) == len(rt.client_ids) + 1
    for m in to_third:
        if m.sender == SERVER:
            assert m.payload == {}
            continue
        assert set(m.payload) == {"tokens", "embedding"}
        tok = m.payload["tokens"]
        assert isinstance(tok, np.ndarray) and tok.dtype == np.dtype("S16")
        assert len(tok) == rt._client_data[m.sender].num_train
        assert not np.isin(rt._client_data[m.sender].train_items, tok.view(np.uint8)).all()
        assert m.payload["embedding"].shape == (16,)
        assert key not in tok.tobytes()
    for m in to_clients:
        if m.sender == SERVER:
            assert set(m.payload) <= {"key"}
        else:
            assert m.sender == THIRD_PARTY and set(m.payload) == {"embeddings", "counts"}
            assert m.payload["embeddings"].dtype == torch.float32
    # Neighbours are real: every received vector is the embedding of another user of that item.
    emb = {c: rt.states[c]["e_u"] for c in rt.client_ids}
    c = rt.client_ids[0]
    got = next(m.payload for m in to_clients if m.receiver == c and m.sender == THIRD_PARTY)
    nb, counts = torch.as_tensor(got["embeddings"]), torch.as_tensor(got["counts"])
    assert int(counts.max()) == 5
    raters = ds.train.users[ds.train.items == rt._client_data[c].train_items[0]]
    for j in range(int(counts[0])):
        who = [u for u in rt.client_ids if torch.equal(emb[u], nb[0, j])]
        assert who and who[0] != c and who[0] in raters
    # The client keeps only what its model uses: the mean of the neighbours it received.
    mask = (torch.arange(nb.shape[1])[None, :] < counts[:, None]).float()
    expected = (mask[..., None] * nb).sum((0, 1)) / mask.sum()
    torch.testing.assert_close(rt.states[c]["nb_mean"], expected)


def _first_users_trainer(ds, cfg: FedGNNConfig, users: int = 200) -> FederatedTrainer:
    job = build_fedgnn_job(cfg, ds, torch.device("cpu"))
    job.parties = [p for p in job.parties if p.role != CLIENT or p.id < users]
    job.server = FedGNNServer(cfg, ds.num_items, len(job.client_data))
    job.client_logic.template = job.server.params
    return FederatedTrainer(job, cfg, torch.device("cpu"), SECRETS)


def test_training_reduces_rmse_and_privacy_report(ds) -> None:
    # The first 200 users only (keeps the test fast); 100 per round: an epoch is 2 rounds, so
    # the expansion happens at round 3.
    cfg = FedGNNConfig(rounds=4, dim=16, clients_per_round=100, pseudo_items=100, neighbours=4,
                       loss_reduction="sum", lr=0.5, lr_user=0.5, local_steps=1, expand_after=1)
    tr = _first_users_trainer(ds, cfg)
    srv = tr.job.server
    before = tr.evaluate()["rmse"]
    for rnd in range(1, 5):
        stats = tr.train_round(rnd)
        assert ("expanded" in stats) == (rnd == 3)
    after = tr.evaluate()["rmse"]
    print(f"RMSE {before:.4f} -> {after:.4f}")
    assert after < before - 0.01
    assert srv.expansions == 1
    rep = tr.privacy_report()
    eps = linf_laplace_epsilon(0.1, 0.2, rep["upload_dim"])
    assert rep["epsilon_per_coordinate_per_upload"] == pytest.approx(eps.per_coordinate) == 1.0
    assert rep["epsilon_per_upload"] == pytest.approx(eps.per_vector)
    assert 1 <= rep["participations_max"] <= 4
    assert rep["epsilon"] == pytest.approx(rep["participations_max"] * eps.per_vector)
    # measure_leakage is off by default: the item ids' report says how to measure, no number
    ids = rep["item_ids"]
    assert ids["epsilon"] is None and ids["measured_attack_f1"] is None
    assert "set measure_leakage=true" in ids["measured_attack"]


def test_privacy_report_is_for_the_whole_upload_and_the_rounds_taken_part_in(ds) -> None:
    """A short real run (the first 100 users, 20 a round, 3 rounds): the report's epsilon is
    the whole upload's, composed over the uploads of the client that sent the most, both
    recomputed here from the messages the server received; the item ids have no formal
    guarantee and the observer attack's measured F1."""
    cfg = FedGNNConfig(rounds=3, dim=8, clients_per_round=20, pseudo_items=50, neighbours=0,
                       loss_reduction="sum", lr=0.5, measure_leakage=True)
    tr = _first_users_trainer(ds, cfg, users=100)
    tr.job.server.attach_instruments(fedgnn_instruments(cfg, ds))  # what build_fedgnn_job does
    uploads: dict[int, list[int]] = {}  # client -> sizes of the uploads it sent

    def tap(msg: Message) -> None:
        if msg.step == "train" and msg.receiver == SERVER:
            size = msg.payload["grad_model"].numel() + msg.payload["grad_items"].numel()
            uploads.setdefault(msg.sender, []).append(size)

    tr.runtime.observers.append(tap)
    for rnd in range(1, 4):
        tr.train_round(rnd)
    rep = tr.privacy_report()
    d = max(max(v) for v in uploads.values())
    most = max(len(v) for v in uploads.values())
    assert most < cfg.rounds  # else this run could not tell participations from rounds
    per_upload = 2 * cfg.clip * d / cfg.laplace  # L1 sensitivity of the clipped vector / scale
    assert rep["upload_dim"] == d
    assert rep["epsilon_per_upload"] == pytest.approx(per_upload)
    assert rep["participations_max"] == most
    assert rep["epsilon"] == pytest.approx(most * per_upload)  # basic: PLD refused at this size
    assert rep["epsilon_method"].startswith("basic") and rep["pld_note"]
    assert rep["delta"] == 0.0
    assert rep["noise_multiplier"] == pytest.approx(cfg.laplace / (2 * cfg.clip * d))
    assert rep["epsilon_per_coordinate_per_upload"] == pytest.approx(2 * cfg.clip / cfg.laplace)
    assert "does not bound" in rep["epsilon_per_coordinate_note"]
    assert str(d) in rep["guarantee"] and "bounds nothing" in rep["guarantee"]
    ids = rep["item_ids"]
    assert ids["guarantee"] == "no formal guarantee" and ids["epsilon"] is None
    assert "pseudo items" in ids["protection"]
    attack = tr.job.server.attack
    assert attack is not None and build_fedgnn_job(cfg, ds, torch.device("cpu")).server.attack
    assert ids["measured_attack"].startswith("RatedItemsAttack")
    assert ids["measured_attack_uploads"] == sum(len(v) for v in uploads.values())
    f1 = np.mean([r[f"{attack.best_rule()}_f1"] for r in attack.records])
    assert ids["measured_attack_f1"] == pytest.approx(f1)
    assert 0.0 < ids["measured_attack_f1"] <= 1.0
    # The CLI's summary prints the honest figure and the attack's F1
    from fedrec.cli.summary import privacy_rows
    rows = dict(privacy_rows(rep))
    assert rows["privacy"] == (f"client-level DP, epsilon {most * per_upload:.3g}: bounds "
                               "nothing useful (pure, basic composition)")
    assert rows["privacy (item ids)"].endswith(f"; measured attack F1 {f1:.3f} "
                                               "(RatedItemsAttack)")


def test_trainable_neighbours_follow_their_owners_every_round(ds) -> None:
    cfg = FedGNNConfig(rounds=3, dim=16, clients_per_round=100, pseudo_items=20, neighbours=4,
                       loss_reduction="sum", lr=0.5, local_steps=1, expand_after=0,
                       trainable_neighbours=True)
    tr = _first_users_trainer(ds, cfg)
    srv, rt = tr.job.server, tr.runtime
    means = []
    for rnd in range(1, 4):
        assert "expanded" in tr.train_round(rnd)
        means.append(rt.states[7]["nb_mean"].clone())
    assert srv.expansions == 3
    # Neighbours trained in between, so the mean client 7 receives moves; without the option
    # it is received once and kept.
    assert not torch.equal(means[0], means[1]) and not torch.equal(means[1], means[2])
    fixed = _first_users_trainer(ds, FedGNNConfig(**{**vars(cfg), "trainable_neighbours": False}))
    assert ["expanded" in fixed.train_round(r) for r in (1, 2, 3)] == [True, False, False]


@pytest.mark.parametrize("kind", gnn.GNN_KINDS)
def test_dense_layers_equal_pyg_layers(kind) -> None:
    """The dense per-client layers compute PyG's GATConv / GCNConv / GatedGraphConv."""
    from torch_geometric.nn import GATConv, GatedGraphConv, GCNConv

    d, k, n = 8, 5, 3
    gen = torch.Generator().manual_seed(3)
    p = gnn.init_params(kind, d, gen)
    p["W_nb"] = torch.randn(d, d, generator=gen)
    for name in ("b", "c", "b_ih", "b_hh"):
        if name in p:
            p[name] = torch.randn(p[name].shape, generator=gen) * 0.1
    e_u, e_t = torch.randn(d, generator=gen), torch.randn(k, d, generator=gen)
    e_nb = torch.randn(k, n, d, generator=gen)
    counts = torch.tensor([3, 0, 1, 2, 3])
    nb_mask = torch.arange(n)[None, :] < counts[:, None]
    nb_mean = e_nb[nb_mask].mean(0)
    h_u, h_t = gnn.hidden_states(kind, p, e_u, e_t, torch.ones(k, dtype=torch.bool), nb_mean)
    # The user-item graph as explicit nodes (user 0, items 1..k) for the PyG layer; the
    # neighbours enter the user state through the mean aggregator.
    x = torch.cat([e_u[None], e_t])
    edges = [(0, 1 + j) for j in range(k)]
    ei = torch.tensor(edges).T
    ei = torch.cat([ei, ei.flip(0)], 1)
    with torch.no_grad():
        if kind == "gat":
            conv = GATConv(d, d, heads=1)
            conv.lin.weight.copy_(p["W"].T)
            conv.att_src.copy_(p["a_src"].view(1, 1, d))
            conv.att_dst.copy_(p["a_dst"].view(1, 1, d))
            conv.bias.copy_(p["b"])
        elif kind == "gcn":
            conv = GCNConv(d, d)
            conv.lin.weight.copy_(p["W"].T)
            conv.bias.copy_(p["b"])
        else:
            conv = GatedGraphConv(d, 1)
            conv.weight.copy_(p["W"][None])
            conv.rnn.weight_ih.copy_(p["w_ih"])
            conv.rnn.weight_hh.copy_(p["w_hh"])
            conv.rnn.bias_ih.copy_(p["b_ih"])
            conv.rnn.bias_hh.copy_(p["b_hh"])
        ref = conv(x, ei)
    torch.testing.assert_close(h_u, ref[0] + nb_mean @ p["W_nb"], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(h_t, ref[1 : 1 + k], rtol=1e-4, atol=1e-5)


def test_bias_columns_uploaders_average_and_lr_decay(ds) -> None:
    """``bias``: rows get a last bias column (uploaded under the same clip/noise, pseudo rows
    included); ``item_avg=uploaders`` divides each item row by its number of uploaders;
    ``lr_decay`` scales the server lr once per epoch."""
    replies, rt = _train_replies(ds, [5, 6], pseudo_items=50, bias=True)
    for r in replies.values():
        assert r["grad_items"].shape[1] == 17
        assert r["grad_items"].abs().max() <= 0.1 + 5.0  # clipped, then noised
    _, rt, srv = make(ds, bias=True, pseudo_items=0, laplace=0.0, clip=0.0, lr=1.0,
                       item_avg="uploaders", lr_decay=0.5, clients_per_round=943)
    assert srv.items.shape[1] == 17 and torch.all(srv.items[:, -1] == 0)
    ctx = ctxs_of(rt, [1])[0]
    assert ctx.state["e_u"].shape == (17,) and ctx.state["e_u"][-1] == 0
    # The bias columns enter the prediction: mu + c + b_u + b_t + h_u . h_t.
    p = srv.params
    e_u = torch.randn(17)
    e_t = torch.randn(3, 17)
    pred = gnn.predict_test("gat", 3.0, p, e_u, e_t, torch.ones(3, dtype=torch.bool),
                            torch.zeros(16), e_t)
    base = gnn.predict_test("gat", 3.0, p, e_u[:16], e_t[:, :16], torch.ones(3, dtype=torch.bool),
                            torch.zeros(16), e_t[:, :16])
    torch.testing.assert_close(pred, base + e_u[16] + e_t[:, 16])
    before = srv.items.clone()
    rt.begin_round(1)
    replies = rt.broadcast("train", rt.client_ids, srv._broadcast())
    g = torch.zeros_like(before)
    n = torch.zeros(len(before))
    for r in replies.values():
        g.index_add_(0, r["items"].long(), r["grad_items"])
        n.index_add_(0, r["items"].long(), torch.ones(len(r["items"])))
    expected = before - g / n.clamp(min=1.0)[:, None]
    _, rt2, srv2 = make(ds, bias=True, pseudo_items=0, laplace=0.0, clip=0.0, lr=1.0,
                              item_avg="uploaders", lr_decay=0.5, clients_per_round=943)
    srv2.run_round(rt2, 1)
    torch.testing.assert_close(srv2.items, expected, rtol=1e-4, atol=1e-5)
    assert srv2.rounds_per_epoch == 1
    start = srv2.items.clone()
    srv2.run_round(rt2, 2)  # epoch 1: lr halved
    assert not torch.allclose(srv2.items, start)


@pytest.mark.parametrize("mode", ["per_round", "fixed", "fixed_coupled", "fixed_copy"])
def test_pseudo_set_modes_across_rounds(ds, mode) -> None:
    """``pseudo_set``: what a client keeps between rounds (ids, rows), drawn from its own state."""
    tr, rt, _ = make(ds, pseudo_items=300, pseudo_set=mode)
    client = tr.job.client_logic
    gen = torch.Generator().manual_seed(0)
    real = torch.randn(40, 8, generator=gen)
    draws = []
    for rnd in (1, 2, 3):
        rt.begin_round(rnd)
        ctx = ctxs_of(rt, [10])[0]
        items = torch.from_numpy(ctx.data.train_items[:40].astype(np.int64))
        ids, g = client.pseudo(ctx, items, real)
        assert len(ids) == 300 == len(np.unique(ids.numpy()))
        assert not np.isin(ids.numpy(), ctx.data.train_items).any()
        draws.append((ids, g))
    (i1, g1), (i2, g2), (i3, _) = draws
    same_ids = torch.equal(i1, i2) and torch.equal(i2, i3)
    assert same_ids == (mode != "per_round")
    # With the same real rows, kept coefficients give the same pseudo rows (so that the rows
    # follow the real rows' trajectories); "fixed" redraws them every round.
    assert torch.equal(g1, g2) == (mode in ("fixed_coupled", "fixed_copy"))
    if mode == "fixed_copy":  # each pseudo row is a real row, every real row copied 7 or 8 times
        match = (g1[:, None, :] == real[None]).all(-1)
        assert (match.sum(1) == 1).all()
        assert set(match.sum(0).tolist()) == {7, 8}
    # The kept draws come from the client's own state: another client keeps another set.
    if mode != "per_round":
        other = ctxs_of(rt, [11])[0]
        items = torch.from_numpy(other.data.train_items[:40].astype(np.int64))
        assert not torch.equal(client.pseudo(other, items, real[: len(items)])[0], i1)


def test_pseudo_set_is_validated() -> None:
    with pytest.raises(ConfigError, match="pseudo_set"):
        FedGNNConfig(rounds=1, pseudo_set="sometimes").validate()


def test_privacy_report_feeds_pld_the_whole_upload_and_each_clients_participations() -> None:
    # Where the whole upload's epsilon is small enough for PLD (a noise scale of 2δd/5: epsilon 5
    # per upload), the report's PLD figure is that of the most-participating client's uploads
    # (3 here, in a run of any length) of one Laplace mechanism with noise multiplier λ/(2δd).
    d, clip = 1000, 0.1
    cfg = FedGNNConfig(rounds=10, clip=clip, laplace=2 * clip * d / 5)
    srv = FedGNNServer(cfg, num_items=10, num_clients=4)
    srv.participation, srv.max_upload_dim = {0: 3, 1: 1, 3: 2}, d  # the server's bookkeeping
    rep = srv.privacy_report()
    acct = PrivacyAccountant()
    acct.record(LaplaceMechanism(1.0, cfg.laplace / (2 * clip * d)), count=3)
    assert rep["epsilon_method"] == "pld" and rep["delta"] == cfg.dp_delta
    assert rep["epsilon"] == pytest.approx(acct.epsilon_pld(cfg.dp_delta))
    assert rep["epsilon"] < rep["epsilon_basic"] == pytest.approx(3 * 5.0)
    assert rep["epsilon_per_upload"] == pytest.approx(5.0)
    assert rep["participations_max"] == 3
