"""The differencing attacks on real ML-100K item sets: exact sums over known cohorts give the
items away; noised ones do not."""

from __future__ import annotations

import numpy as np

from fedrec.attacks.differencing import (
    chance_f1,
    f1_against,
    linear_system_scores,
    support_intersection_guess,
    top_k_guess,
)
from fedrec.data import RatingDataset


def _truth(ds: RatingDataset, users: int) -> np.ndarray:
    truth = np.zeros((ds.num_users, ds.num_items), dtype=bool)
    truth[ds.train.users, ds.train.items] = True
    return truth[:users]


def _cohorts(rounds: int, users: int, rate: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((rounds, users)) < rate


def test_exact_counts_recover_every_item_once_the_system_is_determined(ml100k) -> None:
    truth = _truth(ml100k, 200)
    members = _cohorts(300, 200, 0.2)
    counts = members.astype(float) @ truth.astype(float)
    guess = top_k_guess(linear_system_scores(members, counts), truth.sum(1))
    assert f1_against(guess, truth) == 1.0
    few = members[:40]  # underdetermined: partial, but far above chance
    partial = top_k_guess(linear_system_scores(few, counts[:40]), truth.sum(1))
    assert chance_f1(partial, truth) + 0.1 < f1_against(partial, truth) < 1.0


def test_noise_on_the_sums_puts_the_linear_system_at_chance(ml100k) -> None:
    truth = _truth(ml100k, 200)
    members = _cohorts(300, 200, 0.2)
    rng = np.random.default_rng(1)
    # Per-item statistic of a noised sum: its noise (sd 30 per item) swamps one user's 0/1.
    noised = members.astype(float) @ truth.astype(float) + 30 * rng.standard_normal(
        (300, truth.shape[1]))
    scores = linear_system_scores(members, noised)
    # Scores minus the cohort-wide popularity they also carry: the per-client part only.
    guess = top_k_guess(scores - scores.mean(0), truth.sum(1))
    assert abs(f1_against(guess, truth) - chance_f1(guess, truth)) < 0.02


def test_support_intersection_narrows_to_the_items_and_noise_widens_it(ml100k) -> None:
    truth = _truth(ml100k, 300)
    members = _cohorts(60, 300, 0.05)
    supports = (members.astype(int) @ truth.astype(int)) > 0
    guess = support_intersection_guess(members, supports)
    seen = np.flatnonzero(members.any(0) & truth.any(1))
    assert np.all(guess[truth] | ~members.any(0)[np.nonzero(truth)[0]])  # never misses an item
    assert f1_against(guess, truth, seen) > chance_f1(guess, truth, seen) + 0.2
    full = np.ones_like(supports)  # a noised sum: every row nonzero
    noised = support_intersection_guess(members, full)
    assert f1_against(noised, truth, seen) == chance_f1(noised, truth, seen)
