"""FL-MV-DSSM's cold-start scenarios (issue 16 item 7): CS-Users, CS-Items, CS-Users-Items."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fl_mv_dssm import (
    FLMVDSSMConfig,
    build_job_from_multiview,
    multiview_of,
)
from fedrec.algorithms.methods.fl_mv_dssm.baseline import most_popular_metrics
from fedrec.algorithms.methods.fl_mv_dssm.cohort import view_draws
from fedrec.algorithms.methods.fl_mv_dssm.steps import VIEW_TRAIN
from fedrec.data import RatingDataset
from fedrec.data.multiview import MultiViewData, cold_start
from fedrec.data.types import Interactions
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets

pytestmark = pytest.mark.usefixtures("single_thread")


def config(**overrides: object) -> FLMVDSSMConfig:
    return resolve_config("fl-mv-dssm", "ml-100k", overrides=overrides)  # type: ignore[return-value]


@pytest.fixture(scope="module")
def warm(ml100k: RatingDataset) -> MultiViewData:
    return multiview_of(config(), ml100k)


def _all(mv: MultiViewData) -> Interactions:
    t = mv.task
    return Interactions.concat(t.train, t.valid, t.test)


@pytest.mark.parametrize("scenario", ["users", "items", "users-items"])
def test_held_out_users_and_items_never_train(warm: MultiViewData, scenario: str) -> None:
    mv = cold_start(warm, scenario, 0.1, 0)
    info = mv.meta["cold_start"]
    assert info["users"] == (94 if "users" in scenario else 0)
    assert info["items"] == (168 if "items" in scenario else 0)
    t = mv.task
    known = Interactions.concat(t.train, t.valid)
    test_users, test_items = set(t.test.users.tolist()), set(t.test.items.tolist())
    if "users" in scenario:
        assert not test_users & set(known.users.tolist())  # a new user: no interaction at all
    if "items" in scenario:
        assert not test_items & set(known.items.tolist())
    if scenario == "users":  # every row of a held-out user is a test row, nothing is lost
        assert len(_all(mv)) == len(_all(warm))
        assert len(test_users) == 94
    assert len(t.test) > 0 and len(t.valid) > 0
    assert mv.user_views is warm.user_views  # a new user keeps its view features


def test_cold_devices_are_evaluated_not_trained(warm: MultiViewData) -> None:
    cfg = config(cold_start="users", clients_per_round=20, secure_aggregation=False,
                 noise_multiplier=0.0, server_lr=0.01)
    mv = cold_start(warm, "users", cfg.cold_fraction, cfg.split_seed)
    job = build_job_from_multiview(cfg, mv)
    cold = sorted(set(mv.task.test.users.tolist()))
    assert set(cold) <= set(job.client_ids) and not set(cold) & set(job.server.trainable)
    trainer = FederatedTrainer(job, cfg, torch.device("cpu"), ClientSecrets(bytes(32)))
    trained = []
    trainer.runtime.observers.append(
        lambda m: trained.append(m.receiver) if m.step == VIEW_TRAIN and m.sender_role == "view"
        else None)
    for rnd in (1, 2):
        trainer.train_round(rnd)
    assert len(trained) == 2 * 20 * 2 and not set(trained) & set(cold)
    metrics = trainer.evaluate("test")
    assert metrics["eval_clients"] == len(cold)
    assert np.isfinite(metrics["Recall@10"]) and 0.0 <= metrics["AUC"] <= 1.0
    floor = most_popular_metrics(mv, cfg.topk)  # the fallback a content-free model has
    assert np.isfinite(floor["Recall@10"])


def test_bad_input(warm: MultiViewData) -> None:
    with pytest.raises(ConfigError, match="cold_start"):
        config(cold_start="new-users")
    with pytest.raises(ConfigError, match="cold_fraction"):
        config(cold_fraction=1.0)
    with pytest.raises(ConfigError, match="cold_start must be one of"):
        cold_start(warm, "both")
    assert cold_start(warm, "none") is warm


def test_new_items_are_never_drawn_as_training_negatives(warm: MultiViewData) -> None:
    cfg = config(cold_start="items", clients_per_round=20, secure_aggregation=False,
                 noise_multiplier=0.0)
    mv = cold_start(warm, "items", cfg.cold_fraction, cfg.split_seed)
    new = np.asarray(mv.meta["cold_start"]["item_ids"])
    job = build_job_from_multiview(cfg, mv)
    views = [p for p in job.parties if p.role == "view"][:40]
    logic = views[0].logic
    assert np.array_equal(logic.new_items, new)
    drawn = np.concatenate([
        torch.cat(view_draws(cfg, p.data.train_items, logic.num_items,
                             torch.Generator().manual_seed(k), logic.new_items)).numpy().ravel()
        for k, p in enumerate(views)])
    assert len(drawn) > 10_000 and not np.isin(drawn, new).any()
    # Without the listing (a warm run), the same draws do reach them.
    plain = np.concatenate([
        torch.cat(view_draws(cfg, p.data.train_items, logic.num_items,
                             torch.Generator().manual_seed(k))).numpy().ravel()
        for k, p in enumerate(views)])
    assert np.isin(plain, new).any()


def test_dp_cohorts_are_poisson_samples_of_the_warm_devices(warm: MultiViewData,
                                                            cold_start_dp_run) -> None:
    cfg = config(cold_start="users", clients_per_round=20, widths=(8, 4), client_batch=50,
                 dp="distributed", dp_noise_multiplier=1.0)
    trainer, _ = cold_start_dp_run(build_job_from_multiview, cfg, warm)
    server = trainer.job.server
    assert set(server.participations) <= set(server.trainable)  # the views' rounds too
