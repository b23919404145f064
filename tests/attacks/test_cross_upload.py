"""The cross-upload attack observer: keeps uploads, discounts dispersed items, scores vs chance."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.attacks import CrossUploadAttack
from fedrec.attacks.cross_upload import KeptUploads, chance_f1
from fedrec.federation.message import SERVER, Message
from fedrec.metrics.classification import set_precision_recall_f1


def _upload(client: int, items, scores, rnd: int = 1) -> Message:
    return Message(client, SERVER, "train", rnd,
                   {"items": np.asarray(items, np.int64), "scores": np.asarray(scores, np.float32)})


def _disperse(client: int, items, rnd: int = 1) -> Message:
    return Message(SERVER, client, "disperse", rnd,
                   {"items": np.asarray(items, np.int64),
                    "scores": np.full(len(items), 0.9, np.float32)})


def test_kept_uploads_running_totals():
    acc = KeptUploads()
    acc.add(np.array([3, 5]), np.array([0.5, 1.0]))
    acc.add(np.array([5, 7]), np.array([0.0, 0.25]))
    assert acc.uploads == 2
    np.testing.assert_array_equal(acc.ids, [3, 5, 7])
    np.testing.assert_array_equal(acc.count, [1, 2, 1])
    np.testing.assert_allclose(acc.statistic("sum"), [0.5, 1.0, 0.25])
    np.testing.assert_allclose(acc.statistic("mean"), [0.5, 0.5, 0.25])
    with pytest.raises(ValueError, match="statistic"):
        acc.statistic("median")


def test_dispersed_items_are_discounted_in_the_next_upload():
    # Client 0's positives are 1 and 2; the server dispersed 9 to it, which the client then
    # uploads with a high soft-label score: without the discount it would be guessed.
    attack = CrossUploadAttack({0: np.array([1, 2])}, assumed_ratio=None)
    attack(_upload(0, [1, 2, 8, 9], [0.8, 0.7, 0.1, 0.2], rnd=1))
    attack(_disperse(0, [9, 10], rnd=1))
    attack(_upload(0, [1, 2, 8, 9], [0.6, 0.7, 0.1, 0.99], rnd=2))
    acc = attack.kept[0]
    assert acc.uploads == 2
    np.testing.assert_array_equal(acc.count[acc.ids == 9], [1])  # only round 1's occurrence
    guesses = attack.guesses(0)
    assert set(guesses["mean"]) == {1, 2}
    attack.finish()
    assert attack.overall()["f1"] == pytest.approx(1.0)
    # A server-to-client message of another step, and a client-to-client one, are ignored.
    attack(Message(SERVER, 0, "evaluate", 2, {"items": np.array([1])}))
    attack(Message(1, 0, "train", 2, {"items": np.array([1]), "scores": np.array([1.0])}))
    assert attack.kept[0].uploads == 2 and set(attack.dispersed[0]) == {9, 10}


def test_k_from_the_public_ratio_and_scoring_at_upload_counts():
    attack = CrossUploadAttack({0: np.array([1, 2, 3])}, assumed_ratio=1.0, at_uploads=(1, 2))
    attack(_upload(0, [1, 2, 7, 8], [0.9, 0.8, 0.1, 0.2]))  # k = round(4 / 2) = 2
    assert attack.k_of(0) == 2
    attack(_upload(0, [3, 1, 9, 10], [0.9, 0.7, 0.1, 0.0], rnd=2))  # 7 ids kept: k = 4
    assert attack.k_of(0) == 4
    labels = [r["uploads"] for r in attack.summary()]
    assert labels == ["1", "2"]
    one = attack.summary()[0]
    assert one["mean"] == pytest.approx(set_precision_recall_f1(np.array([1, 2]),
                                                                np.array([1, 2, 3])).f1)
    with pytest.raises(ValueError, match="truth"):
        CrossUploadAttack({}, truth="all")


def test_chance_f1_is_the_mean_f1_of_random_guesses():
    rng = np.random.default_rng(0)
    kept, truth_in, k, t = 40, 6, 10, 9
    ids = np.arange(kept)
    truth = np.concatenate([ids[:truth_in], 100 + np.arange(t - truth_in)])
    f1 = [set_precision_recall_f1(rng.choice(ids, k, replace=False), truth).f1
          for _ in range(4000)]
    assert np.mean(f1) == pytest.approx(chance_f1(kept, truth_in, k, t), rel=0.03)
    assert chance_f1(0, 0, 0, 0) == 0.0


def test_scores_independent_of_the_truth_give_chance():
    # 300 clients, uploads of random ids with random scores: every statistic is at chance.
    rng = np.random.default_rng(1)
    positives = {c: rng.choice(500, 30, replace=False) for c in range(300)}
    attack = CrossUploadAttack(positives, assumed_ratio=4.0)
    for rnd in range(1, 6):
        for c in positives:
            ids = np.sort(rng.choice(500, 60, replace=False))
            attack(_upload(c, ids, rng.random(60), rnd))
    out = attack.overall()
    assert out["clients"] == 300 and out["mean_uploads"] == 5
    for s in ("mean", "sum", "count"):
        assert out[f"f1_{s}"] == pytest.approx(out["chance_f1"], abs=0.01)


def test_state_round_trip():
    attack = CrossUploadAttack({0: np.array([1, 2])})
    attack(_upload(0, [1, 2, 8], [0.8, 0.7, 0.1]))
    attack(_disperse(0, [9]))
    other = CrossUploadAttack({0: np.array([1, 2])})
    other.load_state_dict(attack.state_dict())
    attack(_upload(0, [1, 9], [0.5, 0.5], rnd=2))
    other(_upload(0, [1, 9], [0.5, 0.5], rnd=2))
    assert other.overall() == attack.overall()
