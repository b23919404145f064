"""FedGRec with malicious clients (fedrec.algorithms.methods.fedgrec.poisoning and .defense), in
real runs on ML-100K's first 60 users: the crafted upload is the targets' rows through the
client's own encoding, it reaches the model the same way in clear and through the secure sum,
it raises the targets' exposure, and a defense is refused where the server sees only sums and,
where it applies, leaves the sum as it is when it binds nothing and bounds the attack when it
binds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedgrec.steps import TRAIN
from fedrec.data import RatingDataset
from fedrec.errors import ConfigError
from fedrec.federation import SERVER
from fedrec.federation.message import Message

from .test_fedgrec import CPU, SECRETS, SMALL, config, first_users

pytestmark = pytest.mark.usefixtures("single_thread")  # bit-exact comparisons

USERS = 60
#: Every client every round, so that each malicious client acts in every round.
EVERY = {**SMALL, "clients_per_round": 0, "plain_upload": "sparse"}


@pytest.fixture(scope="module")
def ml100k_60(ml100k: RatingDataset) -> RatingDataset:
    return first_users(ml100k, USERS)


def attacked(ds: RatingDataset, **overrides: object) -> tuple[FederatedTrainer, list[Message]]:
    cfg = config(**{**EVERY, "poisoning": "crafted", **overrides})
    trainer = get_algorithm("fedgrec").trainer(cfg, ds, CPU, SECRETS)
    seen: list[Message] = []
    trainer.runtime.observers.append(seen.append)
    return trainer, seen


def rounds(trainer: FederatedTrainer, n: int) -> None:
    for r in range(1, n + 1):
        trainer.train_round(r)


def test_a_crafted_upload_is_the_targets_rows_in_the_clients_encoding(
        ml100k_60: RatingDataset) -> None:
    trainer, seen = attacked(ml100k_60, malicious_fraction=0.05)
    trainer.train_round(1)
    fakes = set(range(USERS, USERS + 3))  # 5% of 60 users: 3 fake users after the last id
    n, d = ml100k_60.num_items, SMALL["dim"]
    targets = set(trainer.job.server.exposure_targets.tolist())
    uploads = {m.sender: m.payload for m in seen if m.receiver == SERVER and m.step == TRAIN}
    assert fakes <= set(uploads)
    for f in fakes:
        at = uploads[f]["at"]
        item_rows = {int(p - 1) // d for p in at if 1 <= p < 1 + n * d}
        trained = {int(p - 1 - n * d) for p in at if 1 + n * d <= p < 1 + n * (d + 1)}
        assert item_rows == targets and trained == targets, f
    # The benign uploads train their own rows: many more than the targets.
    benign = [u for c, u in uploads.items() if c not in fakes]
    assert np.median([len(u["at"]) for u in benign]) > 10 * d


def test_the_secure_sum_carries_the_crafted_upload_as_the_plain_one(
        ml100k_60: RatingDataset) -> None:
    tables = []
    for secure in (False, True):
        trainer, _ = attacked(ml100k_60, malicious_fraction=0.05, secure_aggregation=secure,
                              plain_upload="dense")
        rounds(trainer, 2)
        tables.append(trainer.job.server.item_emb)
    torch.testing.assert_close(tables[0], tables[1], rtol=0, atol=0)


def test_crafted_uploads_raise_the_targets_exposure(ml100k_60: RatingDataset) -> None:
    er = {}
    for frac in (0.0, 0.05):
        trainer, _ = attacked(ml100k_60, malicious_fraction=frac)
        rounds(trainer, 4)
        er[frac] = trainer.evaluate("valid")["ER@10"]
    assert er[0.05] > er[0.0] + 0.2, er


def test_untargeted_and_dp_runs_send_through_the_clients_code(
        ml100k_60: RatingDataset) -> None:
    trainer, _ = attacked(ml100k_60, poisoning="untargeted", malicious_fraction=0.05)
    rounds(trainer, 2)
    assert np.isfinite(trainer.evaluate("valid")["Recall@20"])
    trainer, seen = attacked(ml100k_60, malicious_fraction=0.05, dp="central",
                             noise_multiplier=0.5)
    trainer.train_round(1)
    assert any(m.sender >= USERS for m in seen if m.receiver == SERVER and m.step == TRAIN)
    assert np.isfinite(trainer.evaluate("valid")["ER@10"])


def test_a_defense_is_refused_where_the_server_sees_only_sums(ml100k_60: RatingDataset) -> None:
    for mode in ({"secure_aggregation": True}, {"dp": "central"}):
        with pytest.raises(ConfigError, match="needs each client's update in clear"):
            config(**{**EVERY, **mode, "defense": "item_median"})
    with pytest.raises(ConfigError, match="needs download: full"):
        config(**{**EVERY, "poisoning": "crafted", "download": "rows",
                  "user_fit_train_steps": 0})
    cfg = config(**{**SMALL, "clients_per_round": 10, "defense": "krum", "defense_f": 4})
    with pytest.raises(ConfigError, match="Krum with f=4 needs more than"):
        get_algorithm("fedgrec").trainer(cfg, ml100k_60, CPU, SECRETS)


def test_a_loose_norm_bound_is_the_plain_sum_and_a_tight_one_holds_the_targets(
        ml100k_60: RatingDataset) -> None:
    def after(**overrides: object) -> torch.Tensor:
        trainer, _ = attacked(ml100k_60, malicious_fraction=0.05, **overrides)
        rounds(trainer, 2)
        return trainer.job.server.item_emb

    plain = after()
    torch.testing.assert_close(after(defense="norm_bound", defense_bound=1e6), plain,
                               rtol=1e-6, atol=1e-7)
    trainer, _ = attacked(ml100k_60, malicious_fraction=0.0)
    start = trainer.job.server.item_emb.clone()
    targets = trainer.job.server.exposure_targets
    moved = {name: float((emb - start)[targets].norm())
             for name, emb in (("none", plain),
                               ("norm_bound", after(defense="norm_bound", defense_bound=0.1)))}
    assert moved["norm_bound"] < 0.2 * moved["none"], moved
    # The per-item median runs on the same uploads (on a cold target most of the row's few
    # contributors are the attackers, beyond what a median tolerates).
    assert torch.isfinite(after(defense="item_median")).all()
