"""PTF-FedRec against malicious clients (fedrec.algorithms.methods.ptf_fedrec.poisoning and
.robust, fedrec.attacks.poisoning.predictions) in real runs on ML-100K."""

from __future__ import annotations

import pytest
import torch

from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig
from fedrec.algorithms.methods.ptf_fedrec.robust import item_trim_mask
from fedrec.attacks.poisoning.population import item_popularity
from fedrec.attacks.poisoning.predictions import MIMIC_POPULAR
from fedrec.config import build_config
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets

from .test_fedgrec import first_users

pytestmark = pytest.mark.usefixtures("one_thread_module")

CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))
#: Every client each round (the fakes take part), one local and one server epoch.
SMALL = {"rounds": 1, "local_epochs": 1, "server_epochs": 1, "attack": False}


@pytest.fixture(scope="module")
def ml100k(ml100k):
    """The first 300 users of ML-100K (a third of it: the checks are per client)."""
    return first_users(ml100k, 300)


@pytest.fixture
def trainer_of(observed_trainer):
    return lambda ds, **overrides: observed_trainer("ptf-fedrec", ds, **{**SMALL, **overrides})


def test_crafted_predictions_promote_the_targets_and_exposure_is_measured(
        ml100k, trainer_of) -> None:
    trainer, seen = trainer_of(ml100k, poisoning="crafted", malicious_fraction=0.01)
    trainer.train_round(1)
    fakes = set(range(ml100k.num_users, ml100k.num_users + 3))
    ups = {c: m.payload for c, m in seen.uploads().items()}
    assert fakes <= set(ups)
    targets = trainer.job.server.exposure_targets
    popularity = torch.as_tensor(item_popularity(ml100k.train, ml100k.num_items))
    popular = torch.argsort(-popularity, stable=True)[:MIMIC_POPULAR]
    for f in fakes:
        items, scores = ups[f]["items"], ups[f]["scores"]
        assert torch.equal(items, torch.sort(items).values)  # sorted as an honest upload
        top = torch.cat([targets, popular])
        assert torch.isin(top, items).all()
        assert (scores[torch.isin(items, top)] == 1.0).all()
        # The rest is the client's own upload, its own scores.
        own = trainer.runtime.states[f]["last_upload"]
        rest = ~torch.isin(own["items"], top)
        kept = torch.isin(items, own["items"][rest])
        torch.testing.assert_close(scores[kept], own["scores"][rest].float())
    metrics = trainer.evaluate("valid")
    assert {"ER@5", "ER@10", "target_HR@10", "hidden_ER@10"} <= set(metrics)
    assert metrics["client_eval_clients"] == len(ml100k.user_ids())
    assert not any(m.sender in fakes for m in seen if m.step == "evaluate")


def test_untargeted_predictions_invert_the_own_scores(ml100k, trainer_of) -> None:
    trainer, seen = trainer_of(ml100k, poisoning="untargeted", malicious_fraction=0.005)
    trainer.train_round(1)
    ups = {c: m.payload for c, m in seen.uploads().items()}
    fakes = [c for c in ups if c >= ml100k.num_users]
    assert fakes
    for f in fakes:
        own = trainer.runtime.states[f]["last_upload"]
        assert torch.equal(ups[f]["items"], own["items"])
        torch.testing.assert_close(ups[f]["scores"], 1.0 - own["scores"].float())


def test_item_trim_mask_drops_each_items_extremes() -> None:
    items = torch.tensor([3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 7, 7])
    scores = torch.tensor([0.5, 0.1, 0.9, 1.0, 0.4, 0.6, 0.3, 0.7, 0.0, 0.2, 1.0, 0.0])
    keep = item_trim_mask(items, scores, 0.1)  # item 3: one each side; item 7: m = 2, none
    assert keep.tolist() == [True, True, True, False, True, True, True, True, False, True,
                             True, True]
    assert item_trim_mask(items, scores, 0.0).all()


def test_item_trimmed_server_trains_on_the_kept_scores(ml100k, trainer_of) -> None:
    trainer, seen = trainer_of(ml100k, poisoning="crafted", malicious_fraction=0.05,
                             score_defense="item_trimmed", score_trim=0.2)
    stats = trainer.train_round(1)
    assert stats["trimmed_scores"] > 0
    server = trainer.job.server
    ups = {c: m.payload for c, m in seen.uploads().items()}
    stored = sum(len(it) for it, _ in server.uploads.values())
    sent = sum(len(u["items"]) for u in ups.values())
    assert stored == sent - stats["trimmed_scores"]


@pytest.mark.parametrize(("over", "message"), [
    ({"score_defense": "median"}, "score_defense"),
    ({"score_trim": 0.5}, "score_trim"),
    ({"poisoning": "crafted", "eval_clients": False}, "eval_clients"),
])
def test_bad_poisoning_options_are_one_line_errors(over: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k", overrides=over)
