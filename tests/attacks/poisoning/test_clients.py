"""Malicious clients as ordinary parties (fedrec.attacks.poisoning.clients and crafting), in
real FCF runs on ML-100K."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fcf import FCFConfig
from fedrec.config import build_config
from fedrec.data import RatingDataset
from fedrec.engines.flower.deploy import check_flower_job
from fedrec.errors import ConfigError

SMALL = {"dim": 8, "rounds": 5}


@pytest.fixture
def fcf(observed_trainer):
    return lambda ds, **overrides: observed_trainer("fcf", ds, **{**SMALL, **overrides})


def test_malicious_clients_are_metered_parties_outside_the_metrics(
        ml100k: RatingDataset, fcf) -> None:
    clean, clean_seen = fcf(ml100k, poisoning="crafted", malicious_fraction=0.0)
    bad, bad_seen = fcf(ml100k, poisoning="crafted", malicious_fraction=0.01)
    clean.train_round(1)
    bad.train_round(1)
    fakes = set(range(ml100k.num_users, ml100k.num_users + 9))
    clean_up, bad_up = clean_seen.uploads(), bad_seen.uploads()
    # Every malicious upload went through the runtime (metered, observed) like a benign one.
    assert set(bad_up) - set(clean_up) == fakes
    assert all(m.nbytes > 0 for m in bad_up.values())
    # A benign client's upload does not depend on who else is in the round.
    for c in list(clean_up)[:50]:
        torch.testing.assert_close(bad_up[c].payload["grad_q"], clean_up[c].payload["grad_q"],
                                   rtol=0, atol=0)
    # A malicious upload is the crafted one: the targets' rows only.
    target = set(bad.job.server.exposure_targets.tolist())
    assert all(set(bad_up[f].payload["items"].tolist()) == target for f in fakes)
    # Evaluation is over the benign users only; it reports the targets' exposure.
    metrics = bad.evaluate("valid")
    assert metrics["eval_clients"] == len(ml100k.user_ids())
    assert {"ER@5", "ER@10", "target_HR@10"} <= set(metrics)
    assert not any(m.sender in fakes for m in bad_seen if m.step == "evaluate")


def test_crafted_updates_raise_the_targets_and_untargeted_ones_are_negated(
        ml100k: RatingDataset, fcf) -> None:
    runs = {}
    for frac in (0.0, 0.05):
        trainer, seen = fcf(ml100k, poisoning="crafted", malicious_fraction=frac,
                                 lr=0.05)
        for r in range(1, 6):
            trainer.train_round(r)
        runs[frac] = trainer
    targets = runs[0.0].job.server.exposure_targets
    bias = {f: float(t.job.server.b_i.detach()[targets].mean()) for f, t in runs.items()}
    assert bias[0.05] > bias[0.0] + 0.1, bias  # Adam moves a row <= lr a round: 5 x 0.05

    trainer, seen = fcf(ml100k, poisoning="untargeted", malicious_fraction=0.01,
                        poisoning_scale=3.0)
    trainer.train_round(1)
    uploads = seen.uploads()
    fakes = [u for u in uploads if u >= ml100k.num_users]
    norms = [float(torch.cat([uploads[f].payload["grad_q"].ravel(),
                              uploads[f].payload["grad_b"]]).norm()) for f in fakes]
    # Every negated update is scaled to one norm: 3 x the median of the attackers' own.
    np.testing.assert_allclose(norms, norms[0], rtol=1e-5)


def test_defenses_refused_where_they_cannot_work(ml100k: RatingDataset, fcf) -> None:
    with pytest.raises(ConfigError, match="needs each client's update in clear"):
        build_config(FCFConfig, "fcf", "ml-100k",
                     overrides={"secure_aggregation": True, "defense": "median"})
    cfg = build_config(FCFConfig, "fcf", "ml-100k",
                       overrides={"clients_per_round": 20, "defense": "krum", "defense_f": 9})
    with pytest.raises(ConfigError, match="Krum with f=9 needs more than"):
        get_algorithm("fcf").trainer(cfg, ml100k, torch.device("cpu"))
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides={"poisoning": "random"})
    with pytest.raises(ConfigError, match="simulator only"):
        check_flower_job("fcf", get_algorithm("fcf"), cfg)


def test_a_defended_round_runs(ml100k: RatingDataset, fcf) -> None:
    trainer, _ = fcf(ml100k, poisoning="crafted", malicious_fraction=0.01,
                          defense="item_median")
    trainer.train_round(1)
    assert np.isfinite(trainer.evaluate("valid")["rmse"])
