"""FedGNN with malicious clients on real ML-100K (fedrec.algorithms.methods.fedgnn.poisoning and
defense): the targets' exposure ranked by FedGNN's own predictions, the crafted and untargeted
uploads in each mode, the defended aggregation and the refused combinations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.algorithms.methods.fedgnn.defense import defended_sums
from fedrec.algorithms.mf_common import known_rows
from fedrec.config import build_config
from fedrec.data import RatingDataset
from fedrec.errors import ConfigError
from fedrec.federation import SERVER
from fedrec.federation.secrets import ClientSecrets
from fedrec.metrics.exposure import exposure_sums
from fedrec.models import gnn

CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))
SMALL = {"dim": 8, "clients_per_round": 32, "pseudo_items": 50, "neighbours": 4,
         "expand_after": 0, "rounds": 4}


@pytest.fixture
def trainer_of(observed_trainer):
    return lambda ds, **overrides: observed_trainer("fedgnn", ds, **{**SMALL, **overrides})


def test_exposure_ranks_by_fedgnn_predictions(ml100k: RatingDataset, trainer_of) -> None:
    trainer, _ = trainer_of(ml100k, poisoning="random", malicious_fraction=0.0, bias=True)
    trainer.train_round(1)
    server, client = trainer.job.server, trainer.job.client_logic.benign
    request = {"model": gnn.flatten(server.params), "items": server.items, "split": "valid",
               "exposure_targets": server.exposure_targets}
    ctxs = [trainer.runtime._context(c, "evaluate") for c in trainer.runtime.client_ids[:5]]
    replies = client.evaluate(ctxs, request)
    # Reference: each client alone, every item scored by gnn.predict_test (FedGNN's rating).
    for ctx, reply in zip(ctxs, replies, strict=True):
        data = ctx.data
        items = torch.from_numpy(data.train_items.astype(np.int64))
        nb = ctx.state["nb_mean"] if ctx.state["nb_mean"] is not None else torch.zeros(8)
        scores = gnn.predict_test(client.cfg.gnn, client.mu / client.unit, server.params,
                                  ctx.state["e_u"], server.items[items],
                                  torch.ones(len(items), dtype=torch.bool), nb, server.items)
        local, known = known_rows([ctx], "valid")
        ref = exposure_sums(scores[None], local, known, server.exposure_targets)[0]
        for name, value in ref.items():
            np.testing.assert_array_equal(reply[name], value)
    metrics = trainer.evaluate("valid")
    assert metrics["ER@10"] == 0.0 and np.isfinite(metrics["rmse"])


def test_crafted_uploads_promote_the_targets(ml100k: RatingDataset, trainer_of) -> None:
    runs = {}
    for frac in (0.0, 0.05):
        trainer, seen = trainer_of(ml100k, poisoning="crafted", malicious_fraction=frac)
        for r in range(1, 3):
            trainer.train_round(r)
        runs[frac] = trainer, seen
    bad, seen = runs[0.05]
    fakes = [u for u in seen.uploads() if u >= ml100k.num_users]
    assert fakes
    targets = bad.job.server.exposure_targets
    for f in fakes:  # the crafted rows of the targets only, with the profile's model gradient
        msg = seen.uploads()[f].payload
        assert msg["items"].tolist() == targets.tolist()
        assert msg["grad_model"].shape == gnn.flatten(bad.job.server.params).shape
    clean = runs[0.0][0].evaluate("valid")["ER@10"]
    assert bad.evaluate("valid")["ER@10"] > clean + 0.5


def test_untargeted_uploads_are_scaled_negated_updates(ml100k: RatingDataset, trainer_of) -> None:
    trainer, seen = trainer_of(ml100k, poisoning="untargeted", malicious_fraction=0.05,
                             poisoning_scale=3.0, clients_per_round=200)
    trainer.train_round(1)
    ups = seen.uploads()
    fakes = [u for u in ups if u >= ml100k.num_users]
    norms = [float(ups[f].payload["grad_items"].norm()) for f in fakes]
    assert len(fakes) > 1
    # Each has 3x the median norm of the attackers' own uploads (real and pseudo rows).
    np.testing.assert_allclose(norms, norms[0], rtol=1e-5)
    assert all(len(ups[f].payload["items"]) == SMALL["pseudo_items"]
               + int(trainer.runtime._context(f, "train").data.num_train) for f in fakes)


@pytest.mark.parametrize("mode", [{"item_privacy": "secure_sum", "clients_per_round": 16},
                                  {"dp": "distributed", "noise_multiplier": 1.0,
                                   "clients_per_round": 40}])
def test_model_attacks_speak_the_secure_modes(ml100k: RatingDataset, mode: dict,
                                              trainer_of) -> None:
    # Half as many attackers as users: a third of each cohort.
    trainer, seen = trainer_of(ml100k, poisoning="crafted", malicious_fraction=0.5, **mode)
    trainer.train_round(1)
    assert any(m.sender >= ml100k.num_users for m in seen
               if m.receiver == SERVER and isinstance(m.sender, int))
    assert "ER@10" in trainer.evaluate("valid")


def test_defended_sums_judge_each_whole_upload() -> None:
    cfg = FedGNNConfig(defense="norm_bound", defense_bound=1e9)
    gen = torch.Generator().manual_seed(0)
    uploads = [{"items": torch.tensor([1, 4]), "grad_items": torch.randn(2, 3, generator=gen),
                "grad_model": torch.randn(7, generator=gen)} for _ in range(3)]
    g_model, g_items = defended_sums(cfg, uploads, 7, 6)
    torch.testing.assert_close(g_model, sum(u["grad_model"] for u in uploads))
    assert g_items[[0, 2, 3, 5]].abs().sum() == 0
    torch.testing.assert_close(g_items[[1, 4]], sum(u["grad_items"] for u in uploads))
    # A bound scales each client's items and model gradient by one factor.
    cfg.defense_bound = 1.0
    g_model, g_items = defended_sums(cfg, uploads[:1], 7, 6)
    u = uploads[0]
    factor = 1.0 / float(torch.cat([u["grad_items"].ravel(), u["grad_model"]]).norm())
    torch.testing.assert_close(g_model, u["grad_model"] * factor)
    torch.testing.assert_close(g_items[[1, 4]], u["grad_items"] * factor)


def test_a_defense_holds_the_crafted_attack_back(ml100k: RatingDataset, trainer_of) -> None:
    er = {}
    for defense in ("none", "item_median"):
        trainer, _ = trainer_of(ml100k, poisoning="crafted", malicious_fraction=0.05,
                              defense=defense)
        trainer.train_round(1)
        er[defense] = trainer.evaluate("valid")["ER@10"]
    assert er["item_median"] < er["none"], er


def test_defenses_refused_where_they_cannot_work(ml100k: RatingDataset) -> None:
    for mode in ({"item_privacy": "secure_sum"}, {"dp": "distributed", "noise_multiplier": 1.0}):
        with pytest.raises(ConfigError, match="needs each client's update in clear"):
            build_config(FedGNNConfig, "fedgnn", "ml-100k",
                         overrides={**mode, "defense": "norm_bound", "defense_bound": 1.0})
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k",
                       overrides={"clients_per_round": 20, "defense": "krum", "defense_f": 9})
    with pytest.raises(ConfigError, match="Krum with f=9 needs more than"):
        get_algorithm("fedgnn").trainer(cfg, ml100k, CPU, SECRETS)
