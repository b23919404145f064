"""FL-MV-DSSM on the real ML-100K: isolated views, the local secure aggregate, its accounting,
the secure and plain sums, the variants, learning, and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm, resolve_config
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fl_mv_dssm import (
    FLMVDSSMConfig,
    build_job_from_multiview,
    local_secure_aggregate,
    multiview_of,
    reuse_multiviews,
    training_accountant,
)
from fedrec.algorithms.methods.fl_mv_dssm.device import DeviceData
from fedrec.algorithms.methods.fl_mv_dssm.server import gaussian_epsilon
from fedrec.algorithms.methods.fl_mv_dssm.steps import LOCAL_AGGREGATE, VIEW_PREDICT, VIEW_TRAIN
from fedrec.algorithms.methods.fl_mv_dssm.view import ViewData, view_id
from fedrec.data import RatingDataset
from fedrec.data.multiview import MultiViewData, cold_start
from fedrec.errors import ConfigError
from fedrec.federation import InProcessRuntime
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.mechanisms import GaussianMechanism

pytestmark = pytest.mark.usefixtures("single_thread")

SECRET = ClientSecrets(bytes(range(32)))


def config(**overrides: object) -> FLMVDSSMConfig:
    return resolve_config("fl-mv-dssm", "ml-100k", overrides=overrides)  # type: ignore[return-value]


@pytest.fixture(scope="module")
def mv(ml100k: RatingDataset) -> MultiViewData:
    return multiview_of(config(), ml100k)


def test_parties_hold_only_their_own_data(mv: MultiViewData) -> None:
    job = build_job_from_multiview(config(), mv)
    by_id = {p.id: p for p in job.parties}
    device = by_id[0]
    assert isinstance(device.data, DeviceData)
    assert not any(isinstance(v, np.ndarray) and v.dtype == np.float32
                   for v in vars(device.data).values())  # no feature row on the device
    for k, name in enumerate(mv.view_names):
        view = by_id[view_id(0, name)]
        assert isinstance(view.data, ViewData) and view.role == "view"
        assert np.array_equal(view.data.features, mv.user_views[k][0])
        assert view.data.features.shape == (mv.view_dims[k],)  # its own view, nothing else
    assert len(job.client_ids) == 943 and len(job.parties) == 943 * 3


def test_view_messages_are_metered_and_go_to_their_own_device(mv: MultiViewData) -> None:
    cfg = config(clients_per_round=3, secure_aggregation=False)
    job = build_job_from_multiview(cfg, mv)
    rt = InProcessRuntime(parties=job.parties, seed=cfg.seed, client_secrets=SECRET)
    seen = []
    rt.observers.append(seen.append)
    rt.begin_round(1)
    job.server.run_round(rt, 1)
    ups = [m for m in seen if m.sender_role == "view"]
    assert len(ups) == 3 * 2 and all(m.step == VIEW_TRAIN for m in ups)
    assert all(m.receiver == int(str(m.sender).split("/")[1]) for m in ups)
    assert all(m.nbytes > 4 * 200_000 for m in ups)  # the whole item change
    by_step = rt.ledger.state_dict()
    assert VIEW_TRAIN in str(by_step) and LOCAL_AGGREGATE in str(by_step)


def test_local_secure_aggregate() -> None:
    gen = torch.Generator().manual_seed(0)
    updates = [torch.full((4,), 3.0), torch.tensor([0.0, 0.0, 0.0, 0.1]), torch.ones(4)]
    # no noise, all views: the mean of the clipped updates
    out = local_secure_aggregate(updates, 3, 1.0, 0.0, gen)
    expected = (torch.full((4,), 0.5) + torch.tensor([0, 0, 0, 0.1]) + torch.full((4,), 0.5)) / 3
    assert torch.allclose(out.float(), expected, atol=1e-7)
    # |B| = 1: one whole clipped update
    picked = local_secure_aggregate(updates, 1, 1.0, 0.0, gen).float()
    assert any(torch.allclose(picked, torch.nn.functional.normalize(u, dim=0) *
                              min(1.0, float(u.norm())), atol=1e-7) for u in updates)
    # noise once on the sum: std sigma * C / |B| per coordinate
    zeros = [torch.zeros(200_000)] * 2
    noisy = local_secure_aggregate(zeros, 2, 0.5, 4.0, gen)
    assert float(noisy.std()) == pytest.approx(4.0 * 0.5 / 2, rel=0.01)


def test_epsilon_of_the_papers_example() -> None:
    # sigma 4, delta 1e-5, T 100, |B| = N: 100 Gaussian releases compose to one Gaussian with
    # multiplier 4 / sqrt(100), whose exact (analytic) epsilon the PLD accountant must match.
    report = training_accountant(4.0, 0.1, 100).report(1e-5)
    exact = GaussianMechanism(1.0, noise_multiplier=0.4).epsilon(1e-5)
    assert report.method == "pld"
    assert report.epsilon == pytest.approx(exact, rel=1e-4)
    assert gaussian_epsilon([(4.0, 100)], 1e-5) == pytest.approx(exact, rel=1e-12)
    # two kinds of release compose as PLD composes them
    both = training_accountant(4.0, 0.1, 60)
    both.record(GaussianMechanism(2.0 ** 0.5, noise_multiplier=2.0), count=3)
    assert gaussian_epsilon([(4.0, 60), (2.0, 3)], 1e-5) == pytest.approx(
        both.report(1e-5).epsilon, rel=1e-4)
    assert report.epsilon == pytest.approx(13.2067, abs=1e-3)
    assert report.epsilon_rdp is not None and report.epsilon_rdp > report.epsilon


def test_secure_and_plain_sums_give_the_same_model(mv: MultiViewData) -> None:
    models = []
    for secure in (True, False):
        cfg = config(clients_per_round=3, secure_aggregation=secure)
        job = build_job_from_multiview(cfg, mv)
        trainer = FederatedTrainer(job, cfg, torch.device("cpu"), SECRET)
        stats = trainer.train_round(1)
        assert stats["clients"] == 3
        models.append(job.server.params)
    assert models[0].keys() == models[1].keys() == {"item", "user/demographics", "user/svd"}
    for name in models[0]:
        assert torch.equal(models[0][name], models[1][name])


def test_semi_and_single_view_variants(mv: MultiViewData) -> None:
    semi = config(clients_per_round=3, aggregate_user_sub_model=False, secure_aggregation=False)
    job = build_job_from_multiview(semi, mv)
    assert set(job.server.params) == {"item"}
    trainer = FederatedTrainer(job, semi, torch.device("cpu"), SECRET)
    trainer.train_round(1)
    trained = [p for p in trainer.runtime.states if isinstance(p, str)
               and "user" in trainer.runtime.states[p]]
    assert len(trained) == 6  # the sampled views keep their own user sub-models
    single = config(views=["svd"], secure_aggregation=False)
    job = build_job_from_multiview(single, mv)
    assert {p.role for p in job.parties} == {"client", "view"}
    assert sum(p.role == "view" for p in job.parties) == 943
    assert set(job.server.params) == {"item", "user/svd"}


def test_it_learns_and_reports_epsilon(mv: MultiViewData) -> None:
    # Without noise and with a larger server step, a few rounds rank far above chance
    # (Recall@10 of a random ranking is about 10 / 1,600 = 0.006).
    cfg = config(clients_per_round=50, noise_multiplier=0.0, server_lr=0.01,
                 secure_aggregation=False, predict_noise=1e-6)
    trainer = FederatedTrainer(build_job_from_multiview(cfg, mv), cfg, torch.device("cpu"),
                               SECRET)
    for rnd in (1, 2, 3):
        trainer.train_round(rnd)
    metrics = trainer.evaluate("test")
    assert metrics["Recall@10"] > 0.03 and metrics["AUC"] > 0.7
    assert {"Precision@10", "NDCG@10"} <= metrics.keys()
    report = trainer.privacy_report()
    assert report["epsilon"] is None and report["epsilon_item_updates"] is None
    assert report["epsilon_predictions"] > 0


def test_privacy_report_with_both_mechanisms(mv: MultiViewData) -> None:
    cfg = config(clients_per_round=2, secure_aggregation=False, predict_noise=1.0)
    job = build_job_from_multiview(cfg, mv)
    trainer = FederatedTrainer(job, cfg, torch.device("cpu"), SECRET)
    trainer.train_round(1)
    job.server.evaluations = 2  # as after one validation and one test evaluation
    report = trainer.privacy_report()
    train_only = training_accountant(1.0, cfg.clip, 1).report(1e-5).epsilon
    assert report["epsilon_item_updates"] == pytest.approx(train_only, rel=1e-4)
    assert report["epsilon"] == pytest.approx(gaussian_epsilon([(1.0, 1), (1.0, 2)], 1e-5))
    assert report["epsilon"] > report["epsilon_item_updates"]
    assert report["delta"] == 1e-5 and "Gaussian" in report["epsilon_method"]


@pytest.mark.parametrize(("overrides", "message"), [
    ({"views": []}, "views is empty"),
    ({"views": ["demographics", "clicks"]}, "views must be one of demographics, svd"),
    ({"views": ["svd", "svd"]}, "views names a view twice"),
    ({"view_sample_size": 3}, r"view_sample_size \(\|B\|\) is 3 but a device has 2 views"),
    ({"views": ["svd"], "view_sample_size": 2}, "is 2 but a device has 1 views"),
    ({"noise_multiplier": -0.5}, "noise_multiplier must be >= 0.0"),
    ({"predict_noise": -1.0}, "predict_noise must be >= 0.0"),
    ({"clip": 0.0}, "clip must be > 0.0"),
    ({"eval_devices": -1}, "eval_devices must be >= 0"),
    ({"dp": "central"}, "dp=central sums in clear .*: set secure_aggregation=false"),
    ({"dp": "distributed", "dp_noise_multiplier": 1.0, "dp_masking": False},
     r"dp_masking=false\): set secure_aggregation=false"),
    ({"dp": "distributed", "dp_noise_multiplier": 1.0, "secure_aggregation": False},
     "masks the noised vectors .*: set secure_aggregation=true"),
    ({"dp": "distributed"}, "needs dp_noise_multiplier > 0 or target_epsilon > 0"),
    ({"dp": "distributed", "dp_noise_multiplier": 1.0, "target_epsilon": 2.0},
     "give dp_noise_multiplier or target_epsilon, not both"),
    ({"dp": "laplace"}, "dp must be one of none, distributed, central"),
])
def test_bad_options(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        config(**overrides)
    assert "\n" not in str(err.value)


def test_a_user_without_features_for_a_view(mv: MultiViewData) -> None:
    views = list(mv.user_views)
    broken = views[0].copy()
    broken[5] = np.nan  # no features for user 5 in view 1
    with pytest.raises(ConfigError, match="view demographics: features must be one finite row "
                                          "per user") as err:
        build_job_from_multiview(config(), dataclasses.replace(mv, user_views=(broken,
                                                                                views[1])))
    assert "\n" not in str(err.value)
    # a zero row is an input like any other (the towers' biases still place it)
    zero = views[0].copy()
    zero[5] = 0.0
    build_job_from_multiview(config(), dataclasses.replace(mv, user_views=(zero, views[1])))


def test_registered() -> None:
    spec = get_algorithm("fl-mv-dssm")
    assert spec.config_cls is FLMVDSSMConfig and spec.dataset_kinds == ("rating",)
    cfg = config()
    assert (cfg.client_lr, cfg.server_lr, cfg.client_batch, cfg.clients_per_round,
            cfg.rounds, cfg.noise_multiplier) == (0.2, 0.003, 20, 100, 100, 1.0)
    paper = resolve_config("fl-mv-dssm", "ml-100k", preset="paper")
    assert (paper.server_lr, paper.gamma, paper.noise_multiplier) == (0.001, 10.0, 1.0)


def test_most_popular_floor(mv: MultiViewData) -> None:
    from fedrec.algorithms.methods.fl_mv_dssm.baseline import most_popular_metrics

    pop = most_popular_metrics(mv, 10)
    # far above a random ranking (about 0.006), below what a per-user model should reach
    assert 0.03 < pop["Recall@10"] < 0.3
    assert pop["Precision@10"] > 0.05


def test_centralized_dssm_per_view_learns_on_the_same_split(mv: MultiViewData) -> None:
    from fedrec.algorithms.methods.fl_mv_dssm.baseline import CentralDSSM

    central = CentralDSSM(config(), mv, "svd", batch=512)
    assert len(central.pairs) == len(mv.task.train)
    first = central.fit_epoch()
    assert np.isfinite(first) and central.epochs == 1
    # a random ranking has Recall@10 of about 10 / 1,600
    assert central.evaluate("test")["Recall@10"] > 0.03
    with pytest.raises(ConfigError, match="view must be one of"):
        CentralDSSM(config(), mv, "ratings")


def test_eval_devices_is_one_seeded_sample_that_leaves_training_alone(mv: MultiViewData) -> None:
    cfg = config(clients_per_round=2, secure_aggregation=False, eval_devices=40)
    evaluated = FederatedTrainer(build_job_from_multiview(cfg, mv), cfg, torch.device("cpu"),
                                 SECRET)
    plain = FederatedTrainer(build_job_from_multiview(cfg, mv), cfg, torch.device("cpu"),
                             SECRET)
    predicted: list[set[int]] = []
    evaluated.runtime.observers.append(  # each view's probabilities, to its device
        lambda m: m.step == VIEW_PREDICT and m.sender_role == "view"
        and predicted[-1].add(int(m.receiver)))
    evaluated.train_round(1)
    plain.train_round(1)
    for split in ("valid", "test"):
        predicted.append(set())
        assert evaluated.evaluate(split)["eval_clients"] <= 40
    assert len(predicted[0]) == 40 and predicted[0] == predicted[1]  # the same devices
    assert predicted[0] <= set(evaluated.runtime.client_ids)
    evaluated.train_round(2)
    plain.train_round(2)  # never evaluated: the same training draws all the same
    for name, vec in plain.job.server.params.items():
        assert torch.equal(vec, evaluated.job.server.params[name]), name
    every = build_job_from_multiview(config(), mv)
    rt = InProcessRuntime(parties=every.parties, seed=0, client_secrets=SECRET)
    assert every.server.evaluated_devices(rt) == list(rt.client_ids)


def test_reuse_multiviews_builds_each_split_once(ml100k: RatingDataset, mv: MultiViewData,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import fedrec.algorithms.multiview_common as common  # where the build is, shared

    builds = []
    monkeypatch.setattr(common, "build_multiview", lambda *a: builds.append(a[1:]) or mv)
    with reuse_multiviews():
        assert multiview_of(config(), ml100k) is mv
        cold = multiview_of(config(cold_start="items"), ml100k)  # re-split of the same build
        assert len(builds) == 1
        expected = cold_start(mv, "items", 0.1, 0)
        for part in ("train", "valid", "test"):
            assert np.array_equal(getattr(cold.task, part).items,
                                  getattr(expected.task, part).items), part
        multiview_of(config(split_seed=1), ml100k)  # another split: built
        assert builds == [("random", 0.2, 0, 0.2), ("random", 0.2, 1, 0.2)]
    multiview_of(config(), ml100k)  # outside the block: built anew
    assert len(builds) == 3


def test_centralized_dssm_epoch_cut_to_max_steps(mv: MultiViewData,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from fedrec.algorithms.methods.fl_mv_dssm.baseline import CentralDSSM
    from fedrec.models import dssm

    steps = []
    loss = dssm.softmax_loss
    monkeypatch.setattr(dssm, "softmax_loss", lambda *a: steps.append(1) or loss(*a))
    central = CentralDSSM(config(), mv, "svd", batch=512)
    assert np.isfinite(central.fit_epoch(max_steps=3))
    assert len(steps) == 3 and central.epochs == 1


def test_the_server_from_metadata_and_public_facts(mv: MultiViewData) -> None:
    """A deployment's server (built from metadata and the public facts a device's node reports)
    starts from the very model the simulator's does, and declares the same devices."""
    from fedrec.algorithms.methods.fl_mv_dssm import build_fl_mv_dssm_job
    from fedrec.data import public_meta
    from fedrec.engines.common import metadata_dataset

    cfg = config()
    job = build_job_from_multiview(cfg, mv)
    assert job.public_facts == {"item_dim": 3188, "view_dims": {"demographics": 23, "svd": 30}}
    assert job.service_roles == []  # the views are co-located with their devices
    assert all(p.host == int(str(p.id).split("/")[1]) for p in job.parties if p.role == "view")
    meta = {**public_meta(mv.task), "facts": job.public_facts}
    served = build_fl_mv_dssm_job(cfg, metadata_dataset(meta, job.client_ids), torch.device("cpu"))
    assert served.client_ids == job.client_ids and served.service_roles == []
    assert served.server.layout == job.server.layout
    assert all(torch.equal(served.server.params[k], v) for k, v in job.server.params.items())
    with pytest.raises(ConfigError, match="public facts"):
        build_fl_mv_dssm_job(cfg, metadata_dataset(public_meta(mv.task), [0]), torch.device("cpu"))
    with pytest.raises(ConfigError, match="cold start"):
        build_fl_mv_dssm_job(config(cold_start="users"), metadata_dataset(meta, [0]),
                             torch.device("cpu"))


def test_a_slice_of_users_keeps_their_demographics(ml100k: RatingDataset) -> None:
    """``--max-users``: the first users' demographics go with their rows, so a slice builds."""
    from fedrec.data.side_info import user_info
    from fedrec.engines.common import slice_users

    ds = slice_users(ml100k, 40)
    assert np.array_equal(user_info(ds).ages, user_info(ml100k).ages[:40])
    assert len(user_info(ml100k)) == 943  # the full dataset untouched
    small = multiview_of(config(), ds)
    assert small.task.num_users == 40 and small.user_views[0].shape[0] == 40


# -- the user-level DP aggregate (issue 38): the device, all its views, is the unit ------------

def _dp_trainer(mv: MultiViewData, **overrides: object) -> tuple[FederatedTrainer,
                                                                   FLMVDSSMConfig]:
    cfg = config(**{"widths": (8, 4), "client_batch": 50, "clients_per_round": 20,
                    "rounds": 2, "dp": "distributed", **overrides})
    return FederatedTrainer(build_job_from_multiview(cfg, mv), cfg, torch.device("cpu"),
                            SECRET), cfg


def _dp_report(mv: MultiViewData, **overrides: object) -> tuple[dict, FederatedTrainer]:
    trainer, cfg = _dp_trainer(mv, **overrides)
    for rnd in range(1, cfg.rounds + 1):
        trainer.train_round(rnd)
    return trainer.privacy_report(), trainer


def test_dp_is_per_device_and_the_papers_gaussian_keeps_its_own_figure(mv: MultiViewData
                                                                        ) -> None:
    """One vector per device and round (the accountant's clients are the devices that took
    part), ``z`` is ``dp_noise_multiplier`` whatever the paper's ``noise_multiplier``, whose
    view-level figure is its own, and each setting leaves the other's figure alone."""
    report, trainer = _dp_report(mv, dp_noise_multiplier=2.0, noise_multiplier=1.5)
    server = trainer.job.server
    assert report["noise_multiplier"] == 2.0 and report["dp"] == "distributed"
    assert report["epsilon"] == report["epsilon_server"] > 0 and report["secure_aggregation"]
    assert report["neighboring_relation"].startswith("user level")
    assert set(server.dp.accountant.per_client) == set(server.participations)
    assert all(isinstance(d, int) for d in server.participations)  # devices, not views
    view = report["view_level"]
    busiest = max(server.participations.values())
    assert view["noise_multiplier"] == 1.5 and view["rounds_of_the_busiest_device"] == busiest
    assert view["epsilon_item_updates"] == pytest.approx(gaussian_epsilon([(1.5, busiest)],
                                                                          1e-5))
    without_paper, _ = _dp_report(mv, dp_noise_multiplier=2.0, noise_multiplier=0.0)
    assert without_paper["epsilon"] == report["epsilon"]
    assert without_paper["view_level"]["epsilon_item_updates"] is None
    assert set(trainer.job.server.receives()) == {LOCAL_AGGREGATE, "secagg_share", "secagg_mask",
                                                  "secagg_unmask"}


def test_dp_clips_each_devices_whole_upload(mv: MultiViewData) -> None:
    """Central DP without noise is clipping alone: the server's mean update is at most
    ``dp_clip`` per device in the sum over the expected cohort, far below the unclipped one."""
    norms = {}
    for clip in (1e-3, 1e3):
        trainer, _ = _dp_trainer(mv, dp="central", secure_aggregation=False, dp_clip=clip)
        stats = trainer.train_round(1)
        plan = trainer.job.server.dp.plan
        norms[clip] = stats["update_norm"]
        assert stats["update_norm"] <= stats["clients"] * clip / plan.expected_cohort * 1.001
    assert norms[1e3] > 100 * norms[1e-3]


def test_dp_target_epsilon_is_met_or_refused_before_training(mv: MultiViewData) -> None:
    report, trainer = _dp_report(mv, target_epsilon=8.0)
    assert trainer.job.server.dp.plan.z > 0 and 0 < report["epsilon"] <= 8.0
    with pytest.raises(ConfigError, match="reaches target_epsilon") as err:
        _dp_trainer(mv, target_epsilon=1e-3, rounds=500)
    assert "\n" not in str(err.value)


def test_dp_resumes_its_accountant(mv: MultiViewData) -> None:
    whole, _ = _dp_report(mv, dp_noise_multiplier=1.0, rounds=2)
    first, _ = _dp_trainer(mv, dp_noise_multiplier=1.0)
    first.train_round(1)
    second, _ = _dp_trainer(mv, dp_noise_multiplier=1.0)
    second.load_state_dict(first.state_dict())
    second.train_round(2)
    assert second.privacy_report() == whole
