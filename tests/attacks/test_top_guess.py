"""The top-guess attack observer."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.attacks import TopGuessAttack, top_guess
from fedrec.federation.message import SERVER, Message


def _upload(client: int, items, scores, rnd: int = 1) -> Message:
    return Message(client, SERVER, "train", rnd,
                   {"items": np.asarray(items, np.int64), "scores": np.asarray(scores, np.float32)})


def test_top_guess_picks_highest_scores():
    assert set(top_guess(np.array([5, 6, 7, 8]), np.array([0.1, 0.9, 0.5, 0.7]), 2)) == {6, 8}


def test_attack_scores_against_uploaded_positives():
    attack = TopGuessAttack({0: np.array([1, 2, 3]), 1: np.array([4])}, truth="uploaded")
    attack(_upload(0, [1, 2, 9, 10], [0.9, 0.8, 0.1, 0.2]))  # k=2 true: perfect
    attack(_upload(1, [4, 11, 12], [0.1, 0.9, 0.2]))  # k=1: wrong guess
    attack(Message(SERVER, 0, "train", 1, {"items": np.array([1]), "scores": np.array([1.0])}))
    s = attack.summary()
    assert s["attack_uploads"] == 2
    assert s["attack_f1"] == pytest.approx(0.5)
    ratio = TopGuessAttack({0: np.array([1, 2])}, assumed_ratio=1.0)
    ratio(_upload(0, [1, 2, 9, 10], [0.9, 0.8, 0.1, 0.2]))  # k = 4 / 2 = 2
    assert ratio.summary()["attack_f1"] == pytest.approx(1.0)
    assert attack.summary(round=2) == {}


def test_attack_scored_against_all_interactions_by_default():
    # Client 0 has 4 positives but uploads 2 of them (sampling): a perfect guess of the
    # uploaded ones still recovers only half of its interaction set.
    attack = TopGuessAttack({0: np.array([1, 2, 3, 4])})
    attack(_upload(0, [1, 2, 9, 10], [0.9, 0.8, 0.1, 0.2]))  # k = 2 uploaded positives
    s = attack.summary()
    assert s["attack_precision"] == pytest.approx(1.0)
    assert s["attack_recall"] == pytest.approx(0.5)
    assert s["attack_f1"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="truth"):
        TopGuessAttack({}, truth="everything")
