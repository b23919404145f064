"""FED-MVMF on the real ML-100K (FL-MV-DSSM's split and side information): the gradients
against autograd, the closed-form user factor, learning, bad input and the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fed_mvmf import FedMVMFConfig, build_job_from_multiview, multiview_of
from fedrec.algorithms.methods.fed_mvmf.client import MVMFClientData
from fedrec.algorithms.methods.fed_mvmf.model import (
    client_loss_and_gradients,
    item_factors_from_features,
    server_loss_and_gradients,
    user_factor,
)
from fedrec.algorithms.methods.fed_mvmf.steps import TRAIN
from fedrec.cli.main import main
from fedrec.data import RatingDataset
from fedrec.data.multiview import MultiViewData, cold_start
from fedrec.errors import ConfigError
from fedrec.federation import InProcessRuntime
from fedrec.federation.secrets import ClientSecrets

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**overrides: object) -> FedMVMFConfig:
    return resolve_config("fed-mvmf", "ml-100k", overrides=overrides)  # type: ignore[return-value]


@pytest.fixture(scope="module")
def mv(ml100k: RatingDataset) -> MultiViewData:
    return multiview_of(config(), ml100k)


def _tiny(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {"v": torch.randn(7, 3, generator=gen, dtype=torch.float64),
            "a": torch.randn(4, 3, generator=gen, dtype=torch.float64),
            "b": torch.randn(5, 3, generator=gen, dtype=torch.float64),
            "y": torch.randn(4, generator=gen, dtype=torch.float64),
            "z": torch.rand(7, 5, generator=gen, dtype=torch.float64),
            "u": torch.randn(3, generator=gen, dtype=torch.float64)}


def _client_loss(u, v, a, y, positives, alpha, reg, w_y):  # the objective, written out
    x = torch.zeros(v.shape[0], dtype=v.dtype)
    x[positives] = 1.0
    c = 1.0 + alpha * x
    return ((c * (x - v @ u) ** 2).sum() + w_y * ((y - a @ u) ** 2).sum()
            + reg * (u ** 2).sum())


def test_gradients_equal_autograd_and_the_user_factor_is_the_minimiser() -> None:
    t = _tiny()
    positives = torch.tensor([1, 4, 5])
    alpha, reg, w_y, w_z = 3.0, 0.2, 0.7, 1.3
    v, a = t["v"].clone().requires_grad_(True), t["a"].clone().requires_grad_(True)
    loss = _client_loss(t["u"], v, a, t["y"], positives, alpha, reg, w_y)
    want_v, want_a = torch.autograd.grad(loss, (v, a))
    got_loss, got_v, got_a = client_loss_and_gradients(t["u"], t["v"], t["a"], positives,
                                                       t["y"], alpha, reg, w_y)
    assert got_loss == pytest.approx(float(loss.detach()), rel=1e-12)
    torch.testing.assert_close(got_v, want_v, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(got_a, want_a, rtol=1e-10, atol=1e-12)

    # The closed-form u: the client loss's gradient in u vanishes there, and not elsewhere.
    u = user_factor(t["v"], t["a"], t["v"].T @ t["v"], positives, t["y"], alpha, reg, w_y)
    u = u.clone().requires_grad_(True)
    (grad_u,) = torch.autograd.grad(_client_loss(u, t["v"], t["a"], t["y"], positives, alpha,
                                                 reg, w_y), u)
    assert float(grad_u.norm()) < 1e-9
    shifted = (u.detach() + 0.1).requires_grad_(True)
    (grad_shifted,) = torch.autograd.grad(_client_loss(shifted, t["v"], t["a"], t["y"],
                                                       positives, alpha, reg, w_y), shifted)
    assert float(grad_shifted.norm()) > 1e-3

    v, a, b = (t[k].clone().requires_grad_(True) for k in ("v", "a", "b"))
    server = (w_z * ((t["z"] - v @ b.T) ** 2).sum()
              + reg * ((v ** 2).sum() + (a ** 2).sum() + (b ** 2).sum()))
    want = torch.autograd.grad(server, (v, a, b))
    got_loss, *got = server_loss_and_gradients(t["v"], t["a"], t["b"], t["z"], reg, w_z)
    assert got_loss == pytest.approx(float(server.detach()), rel=1e-12)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


def test_clients_hold_only_their_own_rows(mv: MultiViewData) -> None:
    job = build_job_from_multiview(config(), mv)
    y = np.concatenate(mv.user_views, axis=1)
    assert y.shape[1] == 23 + 30
    for party in job.parties[:5]:
        data = party.data
        assert isinstance(data, MVMFClientData)
        assert np.array_equal(data.features, y[party.id])
        rows = mv.task.train.items[mv.task.train.users == party.id]
        assert sorted(data.train_items.tolist()) == sorted(rows.tolist())
    assert job.server.z.shape == mv.item_features.shape  # Z is on the server, public


def test_learns_well_above_random_ranking_in_a_few_rounds(mv: MultiViewData) -> None:
    cfg = config(rounds=4, clients_per_round=100, eval_devices=150)
    job = build_job_from_multiview(cfg, mv)
    rt = InProcessRuntime(parties=job.parties, seed=cfg.seed,
                          client_secrets=ClientSecrets(bytes(range(32))))
    before = job.server.evaluate(rt, "test")
    for rnd in range(1, cfg.rounds + 1):
        rt.begin_round(rnd)
        job.server.run_round(rt, rnd)
    after = job.server.evaluate(rt, "test")
    assert after["eval_clients"] == before["eval_clients"] > 100
    # A random ranking's expected Precision@10 is each user's share of test items among its
    # unknown items (~1% here) and its AUC 0.5.
    task = mv.task
    tests = np.bincount(task.test.users, minlength=task.num_users)
    known = np.bincount(np.concatenate([task.train.users, task.valid.users]),
                        minlength=task.num_users)
    has = tests > 0
    random_precision = float(np.mean(tests[has] / (task.num_items - known[has])))
    assert after["Precision@10"] > 5 * random_precision
    assert after["AUC"] > 0.8
    assert after["Recall@10"] > before["Recall@10"] + 0.03


@pytest.mark.parametrize(("overrides", "fragment"), [
    ({"alpha": -1.0}, "alpha must be >= 0.0"),
    ({"dim": 0}, "dim must be >= 1"),
    ({"split": "temporal"}, "split must be one of random, per-user"),
    ({"lr": 0.0}, "lr must be > 0.0"),
    ({"user_view_weight": float("nan")}, "user_view_weight must be a number"),
])
def test_bad_options_are_one_line_config_errors(overrides: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        config(**overrides)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_non_finite_side_information_is_a_one_line_config_error(mv: MultiViewData) -> None:
    svd = mv.user_views[1].copy()
    svd[3, 0] = np.nan
    with pytest.raises(ConfigError, match="user side information must be one finite row") as e:
        build_job_from_multiview(config(), dataclasses.replace(
            mv, user_views=(mv.user_views[0], svd)))
    assert "\n" not in str(e.value)


def test_the_server_from_metadata_and_public_facts(mv: MultiViewData) -> None:
    """A deployment's server (built from metadata and the public facts a client's node reports,
    through JSON as on the wire) starts from the simulator's ``V``, ``A``, ``B`` and ``Z`` and
    declares the same clients; the facts hold no user's row."""
    from fedrec.algorithms.methods.fed_mvmf import build_fed_mvmf_job
    from fedrec.data import public_meta
    from fedrec.engines.common import metadata_dataset

    cfg = config()
    job = build_job_from_multiview(cfg, mv)
    assert job.public_facts["user_feature_dim"] == 53 and job.service_roles == []
    meta = json.loads(json.dumps({**public_meta(mv.task), "facts": job.public_facts}))
    served = build_fed_mvmf_job(cfg, metadata_dataset(meta, job.client_ids), torch.device("cpu"))
    assert served.client_ids == job.client_ids
    assert all(p.data is None for p in served.parties)
    assert torch.equal(served.server.z, job.server.z)
    assert all(torch.equal(getattr(served.server, k), getattr(job.server, k)) for k in "vab")
    with pytest.raises(ConfigError, match="public facts"):
        build_fed_mvmf_job(cfg, metadata_dataset(public_meta(mv.task), [0]), torch.device("cpu"))
    with pytest.raises(ConfigError, match="cold start"):
        build_fed_mvmf_job(config(cold_start="users"), metadata_dataset(meta, [0]),
                           torch.device("cpu"))


def test_fedrec_run_fed_mvmf_through_the_cli(tmp_path: Path, data_root: Path, ml100k) -> None:
    out = tmp_path / "run"
    argv = ["--data-dir", str(data_root), "run", "fed-mvmf", "--dataset", "ml-100k",
            "--set", "rounds=2", "--set", "clients_per_round=16", "--set", "eval_devices=40",
            "--set", "eval_every=1", "--out", str(out), "--quiet", "--threads", "1"]
    assert main(argv) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["status"] == "complete" and data["algorithm"] == "fed-mvmf"
    assert data["config"]["dim"] == 30 and len(data["history"]) == 2
    final = data["final"]
    assert {"Precision@10", "Recall@10", "NDCG@10", "AUC"} <= final.keys()
    assert 0.5 < final["AUC"] <= 1.0
    assert data["privacy"]["secure_aggregation"] is False


def test_a_new_items_factor_is_what_its_side_information_alone_gives() -> None:
    t = _tiny()
    reg, w_z = 0.3, 1.7
    v = item_factors_from_features(t["b"], t["z"][:2], reg, w_z)
    for row, z in zip(v, t["z"][:2], strict=True):  # the minimiser: its gradient vanishes
        x = row.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(w_z * ((z - t["b"] @ x) ** 2).sum() + reg * (x ** 2).sum(), x)
        assert float(g.norm()) < 1e-9


@pytest.mark.parametrize("scenario", ["users", "items", "users-items"])
def test_cold_start_trains_only_warm_clients_and_ranks_new_ones(mv: MultiViewData,
                                                                scenario: str) -> None:
    cfg = config(cold_start=scenario, rounds=3, clients_per_round=50)
    mv = cold_start(mv, scenario, cfg.cold_fraction, cfg.split_seed)  # = multiview_of(cfg, ..)
    job = build_job_from_multiview(cfg, mv)
    t = mv.task
    cold_users = sorted(set(t.test.users.tolist()) - set(t.train.users.tolist()))
    new_items = np.asarray(mv.meta["cold_start"]["item_ids"])
    assert len(new_items) == (168 if "items" in scenario else 0)
    assert not set(new_items.tolist()) & set(t.train.items.tolist())
    server = job.server
    assert set(cold_users) <= set(job.client_ids) and not set(cold_users) & set(server.trainable)
    if scenario == "users":  # (users-items tests only a new user's rows on new items)
        assert len(cold_users) == 94
    trainer = FederatedTrainer(job, cfg, torch.device("cpu"), ClientSecrets(bytes(32)))
    trained: list[int] = []
    trainer.runtime.observers.append(
        lambda m: trained.append(m.receiver) if m.step == TRAIN and m.sender_role == "server"
        else None)
    for rnd in range(1, cfg.rounds + 1):
        trainer.train_round(rnd)
    assert len(trained) == 3 * 50 and not set(trained) & set(cold_users)
    # A new item is scored with its side-information factor, every other with its V row.
    scoring = server.scoring_factors()
    want = item_factors_from_features(server.b.detach().double(),
                                      server.z[new_items].double(), cfg.reg,
                                      cfg.item_view_weight)
    torch.testing.assert_close(scoring[new_items].double(), want, rtol=1e-5, atol=1e-6)
    old = np.setdiff1d(np.arange(t.num_items), new_items)
    assert torch.equal(scoring[old], server.v.detach()[old])
    metrics = trainer.evaluate("test")
    assert metrics["eval_clients"] > 0 and 0.5 < metrics["AUC"] <= 1.0


def test_secure_sum_gives_the_clear_runs_model_and_hides_each_upload(mv: MultiViewData) -> None:
    """The same 2 rounds of 20 clients in clear and through the secure sum (each variant, in the
    64-bit ring, whose fixed-point step is ~1e-14 here): the server's factors agree to float32
    rounding (the clear uploads are float32; no coordinate reaches the clip), and what the
    server receives in the secure run is keys, shares and masked ring elements."""
    models, seen = {}, {}
    secure = {"secure_aggregation": True, "secagg_bits": 64}
    for mode, extra in [("clear", {}), ("bonawitz", secure),
                        ("secagg+", {**secure, "secagg_variant": "secagg+"})]:
        cfg = config(rounds=2, clients_per_round=20, **extra)
        job = build_job_from_multiview(cfg, mv)
        trainer = FederatedTrainer(job, cfg, torch.device("cpu"), ClientSecrets(bytes(32)))
        got: list = []
        trainer.runtime.observers.append(
            lambda m, got=got: got.append(m) if m.receiver == "server" else None)
        stats = [trainer.train_round(rnd) for rnd in (1, 2)]
        assert all(s["clients"] == 20 for s in stats)
        models[mode] = (job.server.v.detach().clone(), job.server.a.detach().clone())
        seen[mode] = got
        report = job.server.privacy_report()
        assert report["secure_aggregation"] is (mode != "clear")
    clear_uploads = [m.payload for m in seen["clear"] if m.step == TRAIN]
    largest = max(float(torch.as_tensor(p[g]).abs().max()) for p in clear_uploads
                  for g in ("grad_v", "grad_a"))
    assert largest < config().secagg_clip  # nothing clipped: the same gradients summed
    for mode in ("bonawitz", "secagg+"):
        for got, want in zip(models[mode], models["clear"], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        train = [m.payload for m in seen[mode] if m.step == TRAIN]
        assert train and not any("grad_v" in p or "loss" in p for p in train)


# -- the user-level DP aggregate (issue 38) -----------------------------------------------------

@pytest.mark.parametrize(("overrides", "fragment"), [
    ({"dp": "distributed", "noise_multiplier": 1.0, "secure_aggregation": True}, "exclusive"),
    ({"dp": "distributed"}, "needs noise_multiplier > 0 or target_epsilon > 0"),
    ({"dp": "central", "dp_clip": 0.0}, "dp_clip must be > 0"),
])
def test_dp_bad_options_are_one_line_config_errors(overrides: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        config(**overrides)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_dp_estimate_is_the_clear_runs_when_nothing_is_clipped_or_noised(mv: MultiViewData
                                                                         ) -> None:
    """Every client every round (Poisson rate 1), central DP with no noise and a bound no
    gradient reaches, in the 64-bit ring: the noised-sum path (the sum over the public expected
    cohort, scaled to every client's) gives the clear run's factors to float32 rounding."""
    models = {}
    for mode, extra in [("clear", {}), ("dp", {"dp": "central", "dp_clip": 1e4,
                                               "secagg_bits": 64})]:
        cfg = config(rounds=2, clients_per_round=0, dim=8, **extra)
        job = build_job_from_multiview(cfg, mv)
        trainer = FederatedTrainer(job, cfg, torch.device("cpu"), ClientSecrets(bytes(32)))
        for rnd in (1, 2):
            trainer.train_round(rnd)
        models[mode] = (job.server.v.detach(), job.server.a.detach())
    for got, want in zip(models["dp"], models["clear"], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_dp_run_meets_its_target_and_trains_only_warm_clients(mv: MultiViewData,
                                                               cold_start_dp_run) -> None:
    cfg = config(cold_start="users", rounds=2, clients_per_round=40, dim=8,
                 dp="distributed", target_epsilon=8.0)
    trainer, stats = cold_start_dp_run(build_job_from_multiview, cfg, mv)
    assert all("loss" not in s for s in stats)  # no client's loss reaches the server
    report = trainer.privacy_report()
    assert trainer.job.server.dp.plan.z > 0 and 0 < report["epsilon"] <= 8.0
    assert report["secure_aggregation"]
