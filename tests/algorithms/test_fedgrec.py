"""FedGRec on real ML-100K: it learns above most-popular, the server's latent tables are the sums
of every user's latest contribution, the secure and plain (dense or sparse) sums give one model,
and bad input has a defined behaviour (the privacy boundary, resume and the metadata-only server
are the conformance suite's: tests/conformance)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedgrec import FedGRecConfig, build_fedgrec_job
from fedrec.algorithms.methods.fedgrec.client import own_edge_layer1
from fedrec.algorithms.methods.fedgrec.steps import EVALUATE, TRAIN, WARMUP_DEGREES
from fedrec.algorithms.mf_common import SplitRanking, cohort_rows
from fedrec.algorithms.ncf_common import implicit_split
from fedrec.config import build_config
from fedrec.data import Interactions, RatingDataset
from fedrec.errors import ConfigError
from fedrec.federation.runtime import sample_cohort
from fedrec.federation.secrets import ClientSecrets

CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))
pytestmark = pytest.mark.usefixtures("single_thread")  # bit-exact comparisons

#: A small, fast setting for the protocol's properties.
SMALL = {"dim": 8, "num_layers": 2, "clients_per_round": 10, "local_steps": 2,
         "secure_aggregation": False, "refresh_period": 2}


def config(**overrides) -> FedGRecConfig:
    """The paper's FedGRec (``--preset paper``), which these tests check step by step; the
    own-edge gradient and the user fit are set explicitly where a test is about them."""
    return build_config(FedGRecConfig, "fedgrec", "ml-100k", overrides=overrides,
                        preset="paper")


def first_users(ds: RatingDataset, n: int) -> RatingDataset:
    """``ds`` with users ``0..n-1`` only (every item kept: many then have no user)."""
    def keep(x: Interactions) -> Interactions:
        return x.select(x.users < n)

    return dataclasses.replace(ds, num_users=n, train=keep(ds.train), valid=keep(ds.valid),
                               test=keep(ds.test))


def trainer(ds, **overrides) -> tuple[FederatedTrainer, FedGRecConfig]:
    cfg = config(**overrides)
    return FederatedTrainer(build_fedgrec_job(cfg, ds, CPU), cfg, CPU, SECRETS), cfg


def run(t: FederatedTrainer, rounds: int) -> list[dict]:
    return [t.train_round(r) for r in range(1, rounds + 1)]


@pytest.fixture(scope="module")
def ml100k_60(ml100k: RatingDataset) -> RatingDataset:
    return first_users(ml100k, 60)


def test_learns_above_most_popular(ml100k: RatingDataset) -> None:
    t, cfg = trainer(ml100k, secure_aggregation=False)
    ds = implicit_split(ml100k, cfg)
    pop = torch.from_numpy(np.bincount(ds.train.items, minlength=ds.num_items)).float()
    popular = SplitRanking(ds, (20,))(lambda users: pop.expand(len(users), -1))
    stats = run(t, 8)
    final = t.evaluate()
    assert final["eval_clients"] == len(np.unique(ds.test.users))
    assert final["Recall@20"] > popular["Recall@20"] + 0.01, (final, popular)
    assert final["NDCG@20"] > popular["NDCG@20"], (final, popular)
    assert stats[-1]["train_loss"] < stats[0]["train_loss"]


def latest_sources(t: FederatedTrainer, cfg: FedGRecConfig, rounds: int) -> dict[int, torch.Tensor]:
    """Train ``rounds`` rounds; each user's sources ``[e_u^0, e_u^1..e_u^{K-1}]`` as they were
    at the end of the last refresh round it was sampled in (round 1 is one, and holds the
    warm-up, so every user has some), read from the simulator's states."""
    rt, srv = t.runtime, t.job.server
    latest: dict[int, torch.Tensor] = {}
    for r in range(1, rounds + 1):
        t.train_round(r)
        cohort = sample_cohort(rt.client_ids, cfg.clients_per_round, cfg.seed, r)
        users = rt.client_ids if r == 1 else cohort if srv.refresh_round(r) else []
        for u in users:
            st = rt.states[u]
            latest[u] = torch.cat([st["e0"][None], st["latent"][: cfg.num_layers - 1]]).double()
    return latest


def direct_latent(ds, latest: dict[int, torch.Tensor], num_layers: int, dim: int) -> torch.Tensor:
    """``e_t^k = sum_{u in N_t} s_u^{k-1} / sqrt(|N_u| |N_t|)``, computed from the data."""
    tr = ds.train
    deg_t = np.bincount(tr.items, minlength=ds.num_items).astype(np.float64)
    deg_u = np.bincount(tr.users, minlength=ds.num_users).astype(np.float64)
    out = torch.zeros(num_layers, ds.num_items, dim, dtype=torch.float64)
    for u, i in zip(tr.users.tolist(), tr.items.tolist(), strict=True):
        out[:, i] += latest[u] / np.sqrt(deg_u[u] * deg_t[i])
    return out


@pytest.mark.parametrize(("bits", "clip"), [(64, 1.0), (32, 1.0), (64, 0.002)])
def test_latent_tables_are_sums_of_every_users_latest_contribution(ml100k_60, bits,
                                                                    clip) -> None:
    t, cfg = trainer(ml100k_60, **SMALL, secagg_bits=bits, secagg_clip=clip)
    latest = latest_sources(t, cfg, rounds=7)
    ds = implicit_split(ml100k_60, cfg)
    sent = {u: t.runtime.states[u]["sent"] for u in latest}
    if clip < 0.01:
        # Changes too large for the clip are sent in part (the rest at later refreshes): the
        # tables are then the sums of what each client recorded as sent.
        assert any(not torch.allclose(sent[u], latest[u]) for u in latest)
        latest = sent
    else:
        assert all(torch.equal(sent[u], latest[u]) for u in latest)
    direct = direct_latent(ds, latest, cfg.num_layers, cfg.dim)
    server = t.job.server.latent
    assert torch.equal(t.job.server.degrees,
                       torch.from_numpy(np.bincount(ds.train.items, minlength=ds.num_items)
                                        .astype(np.float64)))
    # Each delta is rounded once on the fixed-point grid of its sum (cohort <= 10 clients).
    enc_scale = (min(((1 << (bits - 1)) - 1) // cfg.clients_per_round, 1 << 53)
                 / cfg.secagg_clip)
    contributions = {u: t.runtime.states[u]["contributions"] for u in latest}
    bound = torch.zeros(ds.num_items, dtype=torch.float64)
    for u, i in zip(ds.train.users.tolist(), ds.train.items.tolist(), strict=True):
        bound[i] += contributions[u] * 0.5 / enc_scale
    err = (server - direct).abs().amax(dim=(0, 2))
    assert bool((err <= bound + 1e-12).all()), float((err - bound).max())
    assert float(direct.abs().max()) > 0.001  # the comparison is not of zeros
    # Users sampled in refresh rounds after the first made more than their warm-up passes.
    assert max(contributions.values()) > cfg.num_layers


def test_secure_and_plain_sums_give_the_same_model(ml100k: RatingDataset) -> None:
    small = first_users(ml100k, 24)
    opts = {**SMALL, "clients_per_round": 8, "dim": 4}
    plain, _ = trainer(small, **opts)
    # Sparse uploads, summed three clients at a time as they come.
    sparse, _ = trainer(small, **{**opts, "plain_upload": "sparse", "plain_sum_part": 3})
    secure, _ = trainer(small, **{**opts, "secure_aggregation": True})
    for t in (plain, sparse, secure):
        run(t, 3)
    a = plain.job.server
    # All sum the same fixed-point ring elements (masks cancel exactly, zeros encode to
    # zero, the ring sum does not depend on the parts): the same model.
    for b in (sparse.job.server, secure.job.server):
        assert torch.equal(a.item_emb, b.item_emb) and torch.equal(a.latent, b.latent)
    assert plain.evaluate() == secure.evaluate() == sparse.evaluate()
    steps = secure.ledger.totals()
    assert steps["bytes_total"] > plain.ledger.totals()["bytes_total"]
    # The sparse plain upload sends a client's nonzero entries only: fewer bytes up.
    assert sparse.ledger.totals()["bytes_up"] < plain.ledger.totals()["bytes_up"] / 2
    def steps_of(t: FederatedTrainer) -> set[str]:
        return {name.split(" ")[0] for name in t.ledger.by_step()}

    assert "secagg_mask" in steps_of(secure) and "secagg_mask" not in steps_of(plain)


def test_per_row_download_gives_the_same_model_and_states_its_leak(ml100k_60) -> None:
    full, _ = trainer(ml100k_60, **SMALL)
    rows, _ = trainer(ml100k_60, **SMALL, download="rows")
    run(full, 3)
    run(rows, 3)
    assert torch.equal(full.job.server.item_emb, rows.job.server.item_emb)
    assert torch.equal(full.job.server.latent, rows.job.server.latent)
    assert rows.ledger.totals()["bytes_down"] < full.ledger.totals()["bytes_down"]
    report = rows.privacy_report()
    assert "per-row download" in report["leakage"]
    assert "reveals nothing" in full.privacy_report()["leakage"]


def test_server_lr_scales_the_first_rounds_item_step(ml100k_60) -> None:
    """Round 1 from the same state and secrets: the rows move by server_lr times FedAvg's mean
    (the clients' updates do not depend on it yet), and the latent tables do not scale."""
    steps = {}
    for lr in (1.0, 2.5):
        t, _ = trainer(ml100k_60, **SMALL, server_lr=lr)
        before = t.job.server.item_emb.clone()  # the warm-up leaves e_t^0 as it is
        t.train_round(1)
        steps[lr] = (t.job.server.item_emb - before, t.job.server.latent.clone())
    assert steps[1.0][0].abs().sum() > 0
    torch.testing.assert_close(steps[2.5][0], 2.5 * steps[1.0][0], rtol=1e-5, atol=1e-7)
    assert torch.equal(steps[2.5][1], steps[1.0][1])


def test_cosine_lr_schedule_values() -> None:
    cfg = config(lr=0.05, lr_final=0.01, lr_schedule="cosine", rounds=5)
    assert [cfg.client_lr(r) for r in (1, 3, 5, 9)] == pytest.approx([0.05, 0.03, 0.01, 0.01])
    assert config(lr=0.05, rounds=5).client_lr(5) == 0.05  # constant: the default


def test_cosine_lr_schedule_scales_the_clients_step(ml100k_60) -> None:
    """Round 2 from the same round-1 state (round 1 is at lr in both runs): with one local Adam
    step each client's item change is lr times its gradient's sign, so the rows' step in round
    2 scales with the scheduled lr (0.01 against the constant 0.05)."""
    steps = {}
    for schedule in ("constant", "cosine"):
        t, _ = trainer(ml100k_60, **{**SMALL, "local_steps": 1}, rounds=2, lr=0.05,
                       lr_final=0.01, lr_schedule=schedule)
        t.train_round(1)
        before = t.job.server.item_emb.clone()
        t.train_round(2)
        steps[schedule] = t.job.server.item_emb - before
    assert steps["constant"].abs().sum() > 0
    torch.testing.assert_close(steps["cosine"], 0.2 * steps["constant"], rtol=1e-3, atol=1e-6)


def test_user_fit_lowers_each_clients_loss_against_the_fixed_tables(ml100k_60) -> None:
    """fit_users moves only e_u^0: every client's BPR loss of its positives against the tables
    (all items but its own as negatives, exactly) falls, and fitting from the fitted vectors
    again moves them less."""
    t, cfg = trainer(ml100k_60, **SMALL)
    run(t, 2)
    client, srv = t.job.client_logic, t.job.server
    ids = sorted(t.runtime.states)
    ctxs = [t.runtime._context(c, EVALUATE) for c in ids]
    rows = cohort_rows(ctxs, num_items=ml100k_60.num_items)
    layers = [srv.item_emb.float(), *srv.latent.float()]
    e0 = torch.stack([t.runtime.states[c]["e0"] for c in ids])
    latent = torch.stack([t.runtime.states[c]["latent"].sum(0) for c in ids])
    item = client.conv.combine(layers)
    alpha = 1 / (cfg.num_layers + 1)

    def loss(p: torch.Tensor) -> torch.Tensor:  # [m]: exact mean over (positive, negative)
        scores = (alpha * (p + latent)) @ item.T
        own = torch.zeros_like(scores, dtype=torch.bool)
        own[rows.local, rows.items] = True
        diff = scores[rows.local] - scores[rows.local, rows.items][:, None]
        per_pos = F.softplus(diff).masked_fill(own[rows.local], 0).sum(1) / (~own).sum(1)[
            rows.local]
        return torch.zeros(len(ids)).index_add_(0, rows.local, per_pos) / torch.bincount(
            rows.local, minlength=len(ids)).clamp(min=1)

    fitted = client.fit_users(ctxs, rows, e0, latent, layers, 30, "test")
    has_rows = torch.bincount(rows.local, minlength=len(ids)) > 0
    assert bool((loss(fitted) < loss(e0))[has_rows].all())
    again = client.fit_users(ctxs, rows, fitted, latent, layers, 30, "test")
    assert (again - fitted).norm() < (fitted - e0).norm()
    assert torch.equal(e0, torch.stack([t.runtime.states[c]["e0"] for c in ids]))  # no state


def test_user_fit_before_ranking_leaves_the_training_unchanged(ml100k_60) -> None:
    """user_fit_steps changes what an evaluation reports, not the clients' states or the
    server's tables (evaluating does not train); user_fit_train_steps changes the training."""
    plain, _ = trainer(ml100k_60, **SMALL)
    fit, _ = trainer(ml100k_60, **SMALL, user_fit_steps=20)
    run(plain, 2)
    run(fit, 2)
    assert torch.equal(plain.job.server.item_emb, fit.job.server.item_emb)
    before = {c: s["e0"].clone() for c, s in fit.runtime.states.items()}
    assert fit.evaluate("valid") != plain.evaluate("valid")
    assert all(torch.equal(before[c], s["e0"]) for c, s in fit.runtime.states.items())
    both, _ = trainer(ml100k_60, **SMALL, user_fit_train_steps=20)
    run(both, 2)
    assert not torch.equal(both.job.server.item_emb, plain.job.server.item_emb)


def test_own_edge_gradient_changes_the_step_not_the_loss(ml100k_60) -> None:
    """One local step from the same state: the loss (taken before the step) is the same with
    and without own_edge_gradient, since the client's own copies equal the downloaded rows
    there; the step is not, since the gradient then also takes the layer-1 own-edge paths."""
    out = {}
    for own in (False, True):
        t, _ = trainer(ml100k_60, **{**SMALL, "local_steps": 1}, own_edge_gradient=own)
        before = t.job.server.item_emb.clone()
        metrics = t.train_round(1)
        out[own] = (metrics["train_loss"], t.job.server.item_emb - before,
                    torch.stack([s["e0"] for s in t.runtime.states.values()]))
    assert out[True][0] == pytest.approx(out[False][0], rel=1e-6)
    assert out[False][1].abs().sum() > 0
    assert not torch.allclose(out[True][1], out[False][1])
    assert not torch.allclose(out[True][2], out[False][2])


def test_own_edge_layer1_is_lightgcns_gradient_at_one_layer() -> None:
    """K = 1: a client's representations with own_edge_layer1's terms, from its copies of its
    rows and the server's e_t^1 (every user's share current), have the gradient of full-graph
    LightGCN's scores in e_u^0 and the client's item rows, other users fixed."""
    gen = torch.Generator().manual_seed(0)
    edges = {0: [0, 1], 1: [1, 2], 2: [0, 2, 3]}  # user -> items
    n_users, n_items, d = 3, 4, 5
    adj = torch.zeros(n_users, n_items, dtype=torch.float64)
    for u, items in edges.items():
        adj[u, items] = 1.0
    norm = adj / (adj.sum(1, keepdim=True).sqrt() * adj.sum(0, keepdim=True).sqrt())
    users = torch.randn(n_users, d, generator=gen, dtype=torch.float64, requires_grad=True)
    items = torch.randn(n_items, d, generator=gen, dtype=torch.float64, requires_grad=True)
    pairs = torch.tensor([0, 1, 3])  # user 0's positives 0 and 1, negative 3
    coef = torch.randn(len(pairs), generator=gen, dtype=torch.float64)

    user_rep = (users + norm @ items) / 2
    item_rep = (items + norm.T @ users) / 2
    (coef * (user_rep[0] * item_rep[pairs]).sum(-1)).sum().backward()

    p = users.detach()[:1].clone().requires_grad_(True)
    q = items.detach()[pairs].clone().requires_grad_(True)
    latent_1 = (norm.T @ users.detach())[pairs]  # the server's e_t^1, user 0's share included
    w = norm[0, :2]
    user_1, item_1 = own_edge_layer1(p, q, users.detach()[:1], torch.tensor([0, 0]),
                                     torch.tensor([0, 1]), w)
    ours_user = (p + user_1) / 2
    ours_item = (q + latent_1 + item_1) / 2
    torch.testing.assert_close(ours_user[0], user_rep[0].detach())
    (coef * (ours_user[0] * ours_item).sum(-1)).sum().backward()
    torch.testing.assert_close(p.grad[0], users.grad[0])
    torch.testing.assert_close(q.grad, items.grad[pairs])
    assert float(items.grad[2].abs().sum()) == 0.0  # not user 0's: no path at K = 1


def test_bad_input_and_edge_cases(ml100k_60) -> None:
    for bad in ({"num_layers": -1}, {"refresh_period": -1}, {"download": "some"},
                {"loss": "hinge"}, {"lr": 0.0}, {"local_steps": 0}, {"secagg_bits": 8},
                {"plain_upload": "zip"}, {"plain_sum_part": -1}, {"server_lr": 0.0},
                {"lr_schedule": "linear"}, {"lr_final": -0.01}, {"user_fit_steps": -1},
                {"user_fit_lr": 0.0}, {"user_fit_train_steps": 2, "download": "rows"}):
        with pytest.raises(ConfigError):
            config(**bad)
    # K = 0: federated BPR-MF, no warm-up, no latent tables; uploads [loss | delta | rows].
    t, cfg = trainer(ml100k_60, **{**SMALL, "num_layers": 0})
    run(t, 2)
    assert t.job.server.latent.shape == (0, ml100k_60.num_items, cfg.dim)
    assert not any(name.startswith(WARMUP_DEGREES) for name in t.ledger.by_step())
    assert t.evaluate()["Recall@20"] > 0
    # The MSE loss (positives 1, sampled negatives 0) trains too.
    t, _ = trainer(ml100k_60, **{**SMALL, "loss": "mse"})
    stats = run(t, 3)
    assert stats[-1]["train_loss"] < stats[0]["train_loss"]
    # refresh_period 0: the warm-up's latent tables for the whole run.
    t, _ = trainer(ml100k_60, **{**SMALL, "refresh_period": 0})
    t.train_round(1)
    after_warm_up = t.job.server.latent.clone()
    run(t, 3)
    assert torch.equal(t.job.server.latent, after_warm_up)
    # A client with no interactions trains nothing and uploads zeros.
    t, cfg = trainer(ml100k_60, **{**SMALL, "clients_per_round": 0})
    data = t.job.client_data[3]
    object.__setattr__(data, "train_items", np.empty(0, np.int64))  # frozen: a test's edit
    object.__setattr__(data, "train_values", np.empty(0, np.float32))
    seen = []
    t.runtime.observers.append(lambda m: seen.append(m) if m.sender == 3 and m.step == TRAIN
                               else None)
    t.train_round(1)
    e0, other = t.runtime.states[3]["e0"].clone(), t.runtime.states[4]["e0"].clone()
    t.train_round(2)
    assert torch.equal(t.runtime.states[3]["e0"], e0)
    assert not torch.equal(t.runtime.states[4]["e0"], other)
    assert len(seen) == 2 and all(not np.asarray(m.payload["x"]).any() for m in seen)


def test_runs_on_gowalla_on_its_given_split(gowalla_500) -> None:
    cfg_split = build_config(FedGRecConfig, "fedgrec", "gowalla", overrides=SMALL)
    assert cfg_split.split == "given"  # the LightGCN split (packaged section)
    t = FederatedTrainer(build_fedgrec_job(cfg_split, gowalla_500, CPU), cfg_split, CPU, SECRETS)
    stats = [t.train_round(r) for r in (1, 2)]
    assert stats[1]["clients"] == cfg_split.clients_per_round
    assert t.job.server.degrees.sum() == len(gowalla_500.train)
    assert t.evaluate()["Recall@20"] > 0


def test_resumes_from_a_checkpoint_to_the_same_model(ml100k_60) -> None:
    straight, _ = trainer(ml100k_60, **SMALL)
    run(straight, 4)
    first, _ = trainer(ml100k_60, **SMALL)
    run(first, 2)
    state = first.state_dict()
    resumed, _ = trainer(ml100k_60, **SMALL)
    resumed.load_state_dict(state)
    for r in (3, 4):
        resumed.train_round(r)
    a, b = straight.job.server, resumed.job.server
    assert torch.equal(a.item_emb, b.item_emb) and torch.equal(a.latent, b.latent)
