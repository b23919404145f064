"""Who is malicious and what they hold (fedrec.attacks.poisoning.population), on ML-100K."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.algorithms.methods.fcf import FCFConfig
from fedrec.attacks.poisoning import malicious_count, plan_attack
from fedrec.attacks.poisoning.population import item_popularity
from fedrec.config import build_config
from fedrec.data import RatingDataset
from fedrec.errors import ConfigError


def _cfg(**overrides: object) -> FCFConfig:
    return build_config(FCFConfig, "fcf", "ml-100k", overrides={"poisoning": "random",
                                                                **overrides})


def test_fake_users_join_after_the_last_user(ml100k: RatingDataset) -> None:
    plan = plan_attack(_cfg(malicious_fraction=0.01, poisoning_targets=2), ml100k)
    users = len(ml100k.user_ids())
    assert plan.benign_users == users
    assert plan.malicious == tuple(range(ml100k.num_users, ml100k.num_users + 9))
    ds = plan.dataset
    assert ds.num_users == ml100k.num_users + 9
    # Benign rows untouched; each fake user rates both targets at the top of the scale.
    assert len(ds.train) > len(ml100k.train)
    np.testing.assert_array_equal(ds.train.users[: len(ml100k.train)], ml100k.train.users)
    fake = ds.train.select(np.isin(ds.train.users, plan.malicious))
    for u in plan.malicious:
        mine = fake.select(fake.users == u)
        assert set(plan.targets.tolist()) <= set(mine.items.tolist())
        assert (mine.values[np.isin(mine.items, plan.targets)] == ml100k.rating_max).all()
    # Targets are cold: at or below the median popularity.
    pop = item_popularity(ml100k.train, ml100k.num_items)
    assert (pop[plan.targets] <= np.median(pop)).all()
    assert ds.valid is ml100k.valid and ds.test is ml100k.test


def test_popular_profiles_mimic_the_most_popular_items(ml100k: RatingDataset) -> None:
    plan = plan_attack(_cfg(poisoning="popular", poisoning_profile=5), ml100k)
    pop = item_popularity(ml100k.train, ml100k.num_items)
    fake = plan.dataset.train.select(plan.dataset.train.users == plan.malicious[0])
    filler = sorted(set(fake.items.tolist()) - set(plan.targets.tolist()))
    assert filler == sorted(np.argsort(-pop, kind="stable")[:5].tolist())


def test_takeover_keeps_the_population(ml100k: RatingDataset) -> None:
    plan = plan_attack(_cfg(malicious_kind="takeover", malicious_fraction=0.05), ml100k)
    assert plan.dataset.num_users == ml100k.num_users
    assert len(plan.malicious) == malicious_count(0.05, plan.benign_users)
    assert set(plan.malicious) <= set(ml100k.user_ids().tolist())
    # A taken-over user's rows are the attack's profile, nobody else's changed.
    train = plan.dataset.train
    others = ~np.isin(ml100k.train.users, plan.malicious)
    assert (np.isin(train.users, plan.malicious).sum()
            == len(plan.malicious) * (1 + int(np.median(np.bincount(ml100k.train.users)[
                ml100k.user_ids()]))))
    assert len(train) - np.isin(train.users, plan.malicious).sum() == others.sum()


def test_counts_and_bad_input() -> None:
    assert malicious_count(0.0, 943) == 0
    assert malicious_count(0.001, 943) == 1  # any positive fraction is one attacker at least
    assert malicious_count(0.05, 943) == 47
    for bad in (-0.1, 0.6):
        with pytest.raises(ConfigError, match="malicious_fraction must be in"):
            _cfg(malicious_fraction=bad)
    with pytest.raises(ConfigError, match="poisoning must be one of"):
        _cfg(poisoning="sybil")
